// vault-mcp through the official MCP SDK client: handshake, the tool list,
// every tool on a fresh vault, the seed's test cases TC1-TC68 through MCP,
// and the auto-context rule (first tool result of a session only).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { BIN, DAILY_N, WRITE_NOTE, jsonOf, makeVault, mcpClient, readNote, textOf, vaultctl, writeCases, writeNote } from './lib.mjs';

const EXPECTED_TOOLS = [
  'read_note', 'get_note_metadata', 'list_notes', 'browse', 'search_notes', 'get_links',
  'get_backlinks', 'find_broken_links', 'get_orphans', 'read_attachment', 'list_attachments', 'list_tags', 'get_headings',
  'read_section', 'recent_notes', 'create_note', 'append_note', 'prepend_note', 'update_note',
  'replace_text', 'insert_text', 'append_section', 'update_section', 'delete_section',
  'set_frontmatter', 'update_frontmatter', 'add_tag', 'remove_tag', 'rename_note', 'rename_folder', 'delete_note',
  'get_note_history', 'get_note_version', 'diff_note_versions', 'restore_note_version',
  'get_policy', 'list_violations', 'list_changes', 'undo_changes', 'get_help',
  'query_notes', 'query_base', 'periodic_note', 'append_periodic_note',
  'list_tasks', 'set_task_status',
];
const WRITE_TOOLS = [
  'create_note', 'append_note', 'prepend_note', 'update_note', 'replace_text', 'insert_text',
  'append_section', 'update_section', 'delete_section', 'set_frontmatter', 'update_frontmatter',
  'add_tag', 'remove_tag', 'rename_note', 'rename_folder', 'delete_note', 'restore_note_version', 'undo_changes',
  'periodic_note', 'append_periodic_note',
  'set_task_status',
];

// What tools/list may cost, in bytes: what a client pays in context
// before the user says a word. core: 8 KB. all: 16 KB was the budget of
// the 40 tools the lean list was made for (409.6 bytes a tool); tools
// added since (tasks, periodic notes, attachments) are held to the same
// density, so all may cost no more than that a tool.
const CORE_BUDGET = 8192;
const ALL_BYTES_A_TOOL = 16384 / 40;

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

async function session(files, opts) {
  const v = makeVault(files);
  vaults.push(v);
  const client = await mcpClient(v, opts);
  await client.listTools(); // so the SDK validates structuredContent
  return { v, client };
}

// Call a tool; the first result of a session carries the context block,
// so tests spend it first unless they check it.
async function primed(files, opts) {
  const s = await session(files, opts);
  await s.client.callTool({ name: 'get_help', arguments: {} });
  return s;
}

const call = (client, name, args = {}) => client.callTool({ name, arguments: args });

describe('handshake and tool list', () => {
  test('initialize: server info, capabilities, base instructions only', async () => {
    const { client } = await session({
      'My Rules.md': '---\ntags: [claude]\ndescription: Read first\n---\nx',
      'CLAUDE.md': 'SECRET CLAUDE.MD CONTENT',
    });
    assert.equal(client.getServerVersion().name, 'vault-mcp');
    const caps = client.getServerCapabilities();
    for (const k of ['tools', 'resources', 'prompts', 'logging', 'completions']) assert.ok(caps[k], k);
    assert.equal(caps.resources.subscribe, true);
    const ins = client.getInstructions();
    assert.match(ins, /Obsidian vault/);
    // TC26: instructions carry only the base instructions.
    assert.doesNotMatch(ins, /Your personal notes|Allowed tags|SECRET|My Rules/);
    await client.close();
  });

  test('tools/list: the whole table, valid names, schemas and annotations', async () => {
    const { client } = await session({});
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
    for (const t of tools) {
      assert.match(t.name, /^[a-z0-9_]{1,64}$/);
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.ok(t.description.length > 10, t.name);
      const ro = !WRITE_TOOLS.includes(t.name);
      // Hints: read-only, or a write that only adds (destructiveHint:
      // false); the rest keep the protocol's defaults (a write is
      // destructive, not idempotent, open world). No title: clients
      // show the name.
      const an = t.annotations ?? {};
      assert.equal(an.readOnlyHint ?? false, ro, t.name);
      const said = ro ? { readOnlyHint: true } : { destructiveHint: false };
      for (const [k, v] of Object.entries(an)) assert.equal(v, said[k], `${t.name}: ${k}`);
      assert.equal(t.title, undefined, t.name);
      // Plain-text results (a note's text, history, diffs) and content
      // blocks (an image, a link) have no schema.
      const text = ['read_note', 'read_section', 'get_note_history', 'get_note_version', 'diff_note_versions', 'restore_note_version', 'read_attachment'];
      if (!text.includes(t.name)) assert.equal(t.outputSchema?.type, 'object', t.name);
      else assert.equal(t.outputSchema, undefined, t.name);
    }
    await client.close();
  });

  // destructiveHint says whether a tool can remove or replace what is
  // there. Each write tool runs once on a fresh note: a tool that left
  // every line of the note (and every tag) in place must say false; one
  // that removed or replaced something must say true.
  test('destructiveHint matches what each write tool does', async () => {
    const NOTE = WRITE_NOTE;
    const CASES = writeCases();
    const { v, client } = await primed({ 'Tags.md': '---\ntags: [alpha, beta]\n---\nthe tags in use\n', ...DAILY_N });
    const { tools } = await client.listTools();
    const writes = tools.filter((t) => !t.annotations?.readOnlyHint).map((t) => t.name);
    // rename_folder moves a folder (not the note N) and rewrites the
    // links to it: it replaces what was there.
    // destructiveHint: unsaid is true (the protocol's default).
    const destructiveHint = (t) => t.annotations?.destructiveHint ?? true;
    assert.equal(destructiveHint(tools.find((t) => t.name === 'rename_folder')), true);
    assert.deepEqual(writes.filter((n) => n !== 'rename_folder').sort(), Object.keys(CASES).sort());
    // Kept: every line of the old text is still there, in order.
    const kept = (before, after) => {
      if (after === null) return false;
      const rest = after.split('\n');
      let i = 0;
      for (const l of before.split('\n')) {
        while (i < rest.length && rest[i] !== l) i++;
        if (i++ >= rest.length) return false;
      }
      return true;
    };
    const text = () => (fs.existsSync(path.join(v.vault, 'N.md')) ? fs.readFileSync(path.join(v.vault, 'N.md'), 'utf8') : null);
    for (const [name, args0] of Object.entries(CASES)) {
      const w = await call(client, 'create_note', { name: 'N', content: NOTE.replace(/^---[^]*?---\n/, ''), frontmatter: { tags: ['alpha'], status: 'draft' }, overwrite: true });
      assert.ok(!w.isError, textOf(w));
      let args = args0;
      if (name === 'restore_note_version') {
        const u = await call(client, 'append_note', { name: 'N', text: 'later' });
        assert.ok(!u.isError, textOf(u));
        const h = textOf(await call(client, 'get_note_history', { name: 'N' }));
        const ids = [...h.matchAll(/^- ([0-9a-f]{7}) /gm)].map((m) => m[1]);
        args = { name: 'N', version: ids.at(-1) };
      }
      // The task's line in the note as create_note wrote it.
      if (name === 'set_task_status') args = { ...args, line: text().split('\n').indexOf('- [ ] a task') + 1 };
      // This session's changes: N, made here, goes back to .trash.
      if (name === 'undo_changes') args = { session: /session (\w+)/.exec(client.getInstructions())[1] };
      // periodic_note writes only a note that is not there yet.
      if (name === 'periodic_note') assert.ok(!(await call(client, 'delete_note', { name: 'N' })).isError);
      const before = text();
      const r = await call(client, name, args);
      assert.ok(!r.isError, `${name}: ${textOf(r)}`);
      const after = text();
      assert.notEqual(after, before, `${name} changed nothing`);
      // A note made where there was none replaced nothing.
      const destructive = before !== null && !kept(before, after);
      const t = tools.find((x) => x.name === name);
      assert.equal(destructiveHint(t), destructive, `${name}: destructiveHint`);
    }
  });

  // --tools chooses what is offered; the size of each tools/list is
  // printed (what a client pays in context before the user says a word).
  test('--tools all, core and a list; the size of each tools/list', async () => {
    const size = (tools) => Buffer.byteLength(JSON.stringify({ tools }));
    const { client: all } = await session({});
    const full = (await all.listTools()).tools;
    const { client: core, v } = await session({}, { args: ['--tools', 'core'] });
    const coreTools = (await core.listTools()).tools;
    const { client: two } = await session({}, { env: { VAULT_MCP_TOOLS: 'read_note, search_notes' } });
    const twoTools = (await two.listTools()).tools;
    console.log(`tools/list: all ${full.length} tools ${size(full)} bytes; core ${coreTools.length} tools ${size(coreTools)} bytes; a list of 2: ${size(twoTools)} bytes`);
    assert.ok(size(coreTools) <= CORE_BUDGET, `core: ${size(coreTools)} bytes, more than ${CORE_BUDGET}`);
    const allBudget = Math.floor(ALL_BYTES_A_TOOL * full.length);
    assert.ok(size(full) <= allBudget, `all: ${size(full)} bytes for ${full.length} tools, more than ${allBudget}`);
    const names = (l) => l.map((t) => t.name).sort();
    assert.deepEqual(names(full), [...EXPECTED_TOOLS].sort());
    assert.deepEqual(names(coreTools), [
      'append_note', 'append_section', 'create_note', 'delete_note', 'get_help', 'get_links',
      'list_tags', 'read_note', 'remove_tag', 'rename_note', 'replace_text', 'search_notes', 'update_frontmatter',
      'update_note', 'update_section', 'add_tag',
    ].sort());
    assert.deepEqual(names(twoTools), ['read_note', 'search_notes']);
    // What is offered is what the table says, byte for byte.
    for (const t of coreTools) assert.deepEqual(t, full.find((x) => x.name === t.name));
    // A tool not offered is not run.
    const r = await core.callTool({ name: 'get_orphans', arguments: {} }).catch((e) => e);
    assert.match(String(r.message ?? textOf(r)), /Unknown tool/);
    // A name that is no tool: a clear error at start, exit 2.
    const bad = spawnSync(BIN.mcp, ['--tools', 'read_note,nope'], { env: v.env, encoding: 'utf8', input: '' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /no tool named 'nope'.*read_note, /);
    await Promise.all([all.close(), core.close(), two.close()]);
  });

  test('--read-only lists and allows only read tools', async () => {
    const { client } = await session({ 'a.md': 'x' }, { args: ['--read-only'] });
    const { tools } = await client.listTools();
    assert.ok(tools.every((t) => t.annotations?.readOnlyHint));
    assert.ok(!tools.some((t) => t.name === 'create_note'));
    const r = await call(client, 'append_note', { name: 'a', text: 'y' });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /read-only/);
    await client.close();
  });

  test('VAULT_MCP_READ_ONLY=1 does the same', async () => {
    const { client } = await session({}, { env: { VAULT_MCP_READ_ONLY: '1' } });
    const { tools } = await client.listTools();
    assert.ok(tools.every((t) => t.annotations?.readOnlyHint));
    await client.close();
  });
});

describe('auto-context (seed 000)', () => {
  const files = {
    'My Rules.md': '---\ntags: [claude]\ndescription: Read before writing text\n---\nRules',
    'No Desc.md': '---\ntags: [claude]\n---\nx',
    'a.md': '---\ntags: [vc, vc/project, Person]\n---\n',
    'b.md': '---\ntags: [vc]\n---\n',
    test: 'unused',
  };
  test('TC17/TC18/TC20/TC23/TC25: first result only, with notes and tags', async () => {
    const { client } = await session(files);
    const first = textOf(await call(client, 'list_notes'));
    assert.ok(first.includes('\n\n---\n## Your personal notes'));
    assert.ok(first.includes('"My Rules" \u2014 Read before writing text'));
    assert.ok(first.includes('"No Desc" \u2014 \u26a0\ufe0f No description'));
    assert.ok(first.endsWith('\n---'));
    const tags = first.split('## Allowed tags')[1];
    assert.match(tags, /NEVER create new tags without explicit user permission\./);
    for (const t of ['vc', 'vc/project', 'Person']) assert.ok(tags.includes(t), t);
    assert.equal(tags.match(/(^|[\s,])vc(,|\n)/g).length, 1); // TC25: once
    // The seed JSON before the block is intact.
    assert.equal(JSON.parse(first.split('\n\n---\n')[0]).total, 4);
    const second = textOf(await call(client, 'read_note', { name: 'My Rules' }));
    assert.ok(!second.includes('## Your personal notes')); // TC18
    await client.close();
    // A new session gets it again.
    const s2 = await mcpClient(vaults.at(-1));
    assert.ok(textOf(await call(s2, 'get_help')).includes('## Your personal notes'));
    await s2.close();
  });

  test('TC19/TC24/TC28: empty vault gets both sections with hints', async () => {
    const { client } = await session({});
    const t = textOf(await call(client, 'list_notes'));
    assert.match(t, /## Your personal notes\n\nNo personal notes found/);
    assert.match(t, /## Allowed tags\n\nNo tags/);
    await client.close();
  });

  test('an error result does not use up the context block', async () => {
    const { client } = await session({ 'x.md': 'x' });
    const e = await call(client, 'read_note', { name: 'missing' });
    assert.equal(e.isError, true);
    assert.ok(!textOf(e).includes('## Your personal notes'));
    assert.ok(textOf(await call(client, 'read_note', { name: 'x' })).includes('## Your personal notes'));
    await client.close();
  });
});

// Seed 000's test cases through MCP: [name, GIVEN files, tool, args, check].
const fm = (tags, extra = '') => `---\ntags: [${tags.join(', ')}]\n${extra}---\n`;
const exact = (want) => (r) => {
  assert.ok(!r.isError, textOf(r));
  assert.deepEqual(jsonOf(r), want);
};
const errorIs = (msg) => (r) => {
  assert.equal(r.isError, true);
  assert.equal(textOf(r), msg);
};
const errorHas = (...parts) => (r) => {
  assert.equal(r.isError, true, textOf(r));
  for (const p of parts) assert.ok(textOf(r).includes(p), `${textOf(r)} lacks ${p}`);
};
const ok = (fn) => (r, v) => {
  assert.ok(!r.isError, textOf(r));
  fn(r, v);
};
const names = (r) => jsonOf(r).results.map((x) => x.name).sort();
const TAGS = { 'vc.md': fm(['vc']), 'p.md': fm(['Person']) };
const SECTIONS = '# Intro\nHello\n# Other\nWorld';

const TCS = [
  ['TC1', { 'test.md': 'Hello' }, 'read_note', { name: 'test' }, ok((r) => assert.equal(textOf(r), 'Hello'))],
  ['TC2', {}, 'read_note', { name: 'nonexistent' }, errorIs("Note 'nonexistent' not found")],
  ['TC3', {}, 'create_note', { name: 'test', content: 'Hello' },
    ok((r, v) => { assert.equal(jsonOf(r).name, 'test'); assert.equal(readNote(v.vault, 'test.md'), 'Hello'); })],
  ['TC4', {}, 'create_note', { name: 'test', frontmatter: '{"tags": ["vc"]}' },
    ok((r, v) => assert.match(readNote(v.vault, 'test.md'), /^---\ntags:\n {2}- vc\n---\n/))],
  ['TC5', { 'test.md': 'Line1' }, 'append_note', { name: 'test', text: 'Line2' },
    ok((r, v) => { assert.equal(jsonOf(r).status, 'appended'); assert.equal(readNote(v.vault, 'test.md'), 'Line1\n\nLine2'); })],
  ['TC6', { 'test.md': '---\ntags: [a]\n---\nOld' }, 'update_note', { name: 'test', content: 'New' },
    ok((r, v) => { assert.equal(jsonOf(r).status, 'updated'); assert.equal(readNote(v.vault, 'test.md'), '---\ntags: [a]\n---\nNew'); })],
  ['TC7', { 'A.md': 'See [[B]]', 'B.md': 'b' }, 'delete_note', { name: 'B' },
    ok((r, v) => {
      assert.deepEqual(jsonOf(r).files_updated, ['A']);
      assert.equal(readNote(v.vault, '.trash/B.md'), 'b');
      assert.equal(readNote(v.vault, 'A.md'), 'See [[B (deleted)]]');
    })],
  ['TC8', { 'A.md': 'See [[B]]', 'B.md': 'b' }, 'delete_note', { name: 'B', dry_run: true },
    ok((r, v) => { assert.ok(jsonOf(r).plan); assert.equal(readNote(v.vault, 'B.md'), 'b'); assert.equal(readNote(v.vault, 'A.md'), 'See [[B]]'); })],
  ['TC9', { 'A.md': 'See [[B]]', 'B.md': 'b' }, 'rename_note', { old_name: 'B', new_name: 'B_new' },
    ok((r, v) => { assert.equal(readNote(v.vault, 'B_new.md'), 'b'); assert.equal(readNote(v.vault, 'A.md'), 'See [[B_new]]'); })],
  ['TC10', { 'alpha.md': '', 'beta.md': '' }, 'search_notes', { query: 'alph' }, ok((r) => assert.deepEqual(names(r), ['alpha']))],
  ['TC11', { 'test.md': fm(['vc/project']) }, 'search_notes', { query: 'vc', mode: 'tag' }, ok((r) => assert.deepEqual(names(r), ['test']))],
  ['TC12', { 'A.md': '[[B]]', 'B.md': '', 'C.md': '[[A]]' }, 'get_links', { name: 'A', direction: 'both' },
    exact({ name: 'A', outgoing: ['B'], incoming: ['C'] })],
  ['TC14', { 'test.md': 'x' }, 'set_frontmatter', { name: 'test', key: 'status', value: 'done' },
    ok((r, v) => { assert.deepEqual(jsonOf(r), { name: 'test', key: 'status', value: 'done' }); assert.match(readNote(v.vault, 'test.md'), /^---\nstatus: done\n---\nx$/); })],
  ['TC15', { 'alpha.md': '', 'beta.md': '', 'gamma.md': '' }, 'list_notes', { limit: 2, offset: 0 },
    exact({ names: ['alpha', 'beta'], total: 3, limit: 2, offset: 0 })],
  ['TC16', {}, 'list_notes', {}, exact({ names: [], total: 0, limit: 100, offset: 0 })],
  ['TC16a', { 'alpha.md': '', 'beta.md': '', 'gamma.md': '' }, 'list_notes', { limit: 2, offset: 2 },
    exact({ names: ['gamma'], total: 3, limit: 2, offset: 2 })],
  ['TC29', { 'test.md': 'foo bar foo' }, 'replace_text', { name: 'test', old_text: 'foo', new_text: 'baz' }, exact({ name: 'test', replaced: 1 })],
  ['TC30', { 'test.md': 'foo bar foo' }, 'replace_text', { name: 'test', old_text: 'foo', new_text: 'baz', replace_all: true },
    exact({ name: 'test', replaced: 2 })],
  ['TC31', { 'test.md': 'hello' }, 'replace_text', { name: 'test', old_text: 'xyz', new_text: 'abc' }, errorHas('xyz')],
  ['TC32', { 'test.md': 'line1\nline2' }, 'insert_text', { name: 'test', text: 'inserted', after: 'line1' },
    exact({ name: 'test', position: 'after', pattern: 'line1' })],
  ['TC33', { 'test.md': 'line1\nline2' }, 'insert_text', { name: 'test', text: 'inserted', before: 'line2' },
    exact({ name: 'test', position: 'before', pattern: 'line2' })],
  ['TC34', { 'test.md': 'x' }, 'insert_text', { name: 'test', text: 'x', before: 'a', after: 'b' },
    errorIs("Exactly one of 'before' or 'after' must be provided")],
  ['TC35', { 'test.md': 'x' }, 'insert_text', { name: 'test', text: 'x' }, errorIs("Exactly one of 'before' or 'after' must be provided")],
  ['TC36', { 'test.md': SECTIONS }, 'read_section', { name: 'test', section: 'Intro' }, ok((r) => assert.equal(textOf(r), 'Hello'))],
  ['TC37', { 'test.md': SECTIONS }, 'read_section', { name: 'test', section: 'Missing' }, errorHas('Missing')],
  ['TC38', { 'test.md': SECTIONS }, 'append_section', { name: 'test', section: 'Intro', text: 'More' },
    exact({ name: 'test', section: 'Intro', status: 'appended' })],
  ['TC39', TAGS, 'create_note', { name: 'new', frontmatter: '{"tags": ["vc", "career"]}' },
    errorHas("Tags not in allowed list: ['career']", "Allowed: ['Person', 'vc']")],
  ['TC40', TAGS, 'create_note', { name: 'new', frontmatter: '{"tags": ["vc"]}' }, ok(() => {})],
  ['TC41', { ...TAGS, 'test.md': 'x' }, 'set_frontmatter', { name: 'test', key: 'tags', value: '["vc", "unknown"]' },
    errorHas("Tags not in allowed list: ['unknown']")],
  ['TC42', { 'test.md': 'x' }, 'set_frontmatter', { name: 'test', key: 'status', value: 'done' }, ok(() => {})],
  ['TC43', {}, 'create_note', { name: 'test', frontmatter: '{invalid json}' }, errorHas('Invalid frontmatter JSON')],
  ['TC44', { 'a.md': '' }, 'search_notes', { query: 'test', mode: 'invalid' },
    errorIs('Invalid search mode: invalid. Valid: name, name_partial, content, tag, fulltext')],
  ['TC45', { 'test.md': '' }, 'get_links', { name: 'test', direction: 'invalid' }, errorIs('Invalid direction: invalid. Valid: in, out, both')],
  ['TC46', { 'test.md': fm(['vc']), 'other.md': fm(['Person']) }, 'add_tag', { name: 'test', tag: 'Person' },
    errorHas("note name must start with '@'")],
  ['TC47', { '@John.md': fm([]), 'other.md': fm(['Person']) }, 'add_tag', { name: '@John', tag: 'Person' },
    exact({ name: '@John', tags: ['Person'] })],
  ['TC48', { 'test.md': 'x', 'other.md': fm(['claude'], 'description: d\n') }, 'add_tag', { name: 'test', tag: 'claude' },
    errorHas("Requires 'description' field")],
  ['TC49', { 'test.md': '---\ndescription: My rules\n---\n', 'other.md': fm(['claude'], 'description: d\n') },
    'add_tag', { name: 'test', tag: 'claude' }, exact({ name: 'test', tags: ['claude'] })],
  ['TC50', { 'test.md': fm(['vc', 'project']) }, 'remove_tag', { name: 'test', tag: 'vc' },
    exact({ name: 'test', tags: ['project'], removed: true })],
  ['TC51', { 'test.md': fm(['vc']) }, 'remove_tag', { name: 'test', tag: 'project' }, exact({ name: 'test', tags: ['vc'], removed: false })],
  ['TC52', { 'other.md': fm(['Person']) }, 'create_note', { name: 'John', frontmatter: '{"tags": ["Person"]}' },
    errorHas("note name must start with '@'")],
  ['TC53', { 'other.md': fm(['Person']) }, 'create_note', { name: '@John', frontmatter: '{"tags": ["Person"]}' }, ok(() => {})],
  ['TC54', { 'a.md': fm(['vc']), 'b.md': fm(['project']), 'c.md': fm(['vc', 'project']) }, 'search_notes',
    { query: 'vc,project', mode: 'tag', tag_logic: 'or' }, ok((r) => assert.deepEqual(names(r), ['a', 'b', 'c']))],
  ['TC55', { 'a.md': fm(['vc']), 'b.md': fm(['project']), 'c.md': fm(['vc', 'project']) }, 'search_notes',
    { query: 'vc,project', mode: 'tag', tag_logic: 'and' }, ok((r) => assert.deepEqual(names(r), ['c']))],
  ['TC56', { 'a.md': '' }, 'search_notes', { query: 'vc', mode: 'tag', tag_logic: 'invalid' }, errorIs('Invalid tag_logic: invalid. Valid: and, or')],
  ['TC57', { 'a.md': fm(['vc/project']), 'b.md': fm(['vc/idea']) }, 'search_notes', { query: 'vc', mode: 'tag' },
    ok((r) => assert.deepEqual(names(r), ['a', 'b']))],
  ['TC58', { 'A.md': fm(['vc']) + '[[B]]', 'C.md': '[[A]]' }, 'get_note_metadata', { name: 'A' },
    ok((r) => {
      const m = jsonOf(r);
      assert.deepEqual([m.name, m.frontmatter, m.outgoing, m.incoming], ['A', { tags: ['vc'] }, ['B'], ['C']]);
    })],
  ['TC59', {}, 'get_note_metadata', { name: 'nonexistent' }, errorIs("Note 'nonexistent' not found")],
  ['TC60', { 'test.md': '# Intro\nText\n## Details\nMore\n### Sub' }, 'get_headings', { name: 'test' },
    exact([{ level: 1, text: 'Intro' }, { level: 2, text: 'Details' }, { level: 3, text: 'Sub' }])],
  ['TC61', { 'test.md': 'Just plain text' }, 'get_headings', { name: 'test' }, exact([])],
  ['TC62', { 'test.md': '# Intro\nOld content\n# Other\nKeep' }, 'update_section', { name: 'test', section: 'Intro', content: 'New content' },
    ok((r, v) => {
      assert.deepEqual(jsonOf(r), { name: 'test', section: 'Intro', status: 'updated' });
      assert.equal(readNote(v.vault, 'test.md'), '# Intro\nNew content\n# Other\nKeep');
    })],
  ['TC63', { 'test.md': SECTIONS }, 'update_section', { name: 'test', section: 'Missing', content: 'x' }, errorHas('Missing')],
  ['TC64', { 'test.md': '# Intro\nContent\n# Other\nKeep' }, 'delete_section', { name: 'test', section: 'Intro' },
    ok((r, v) => {
      assert.deepEqual(jsonOf(r), { name: 'test', section: 'Intro', status: 'deleted' });
      assert.equal(readNote(v.vault, 'test.md'), '# Other\nKeep');
    })],
  ['TC65', { 'test.md': SECTIONS }, 'delete_section', { name: 'test', section: 'Missing' }, errorHas('Missing')],
  ['TC66', { 'A.md': '[[B]] [[Missing]]', 'B.md': '' }, 'find_broken_links', {}, exact([{ source: 'A', target: 'Missing' }])],
  ['TC67', { 'A.md': '[[B]]', 'B.md': '' }, 'find_broken_links', {}, exact([])],
  ['TC68', {}, 'get_help', {},
    ok((r) => {
      const h = jsonOf(r);
      assert.equal(h.length, EXPECTED_TOOLS.length);
      for (const t of h) assert.ok(t.name && typeof t.params === 'string' && t.description, JSON.stringify(t));
      // What tools/list leaves unsaid is here: defaults, idempotent writes.
      const help = (n) => h.find((t) => t.name === n);
      assert.match(help('list_notes').params, /limit: integer = 100/);
      // Each parameter's line: type, range, default, what it means.
      assert.match(help('list_notes').description, /\n- limit \(integer, 0 to 1000, default 100\): how many names to give/);
      assert.match(help('append_note').description, /\n- expected_version \(string\): the note's version as read_note gave it/);
      assert.match(help('update_note').description, /Idempotent/);
      assert.doesNotMatch(help('append_note').description, /Idempotent/);
      assert.doesNotMatch(help('read_note').description, /Idempotent/);
    })],
];

describe('seed 000 test cases through MCP', () => {
  for (const [tc, files, tool, args, check] of TCS) {
    test(`${tc} ${tool}`, async () => {
      const { v, client } = await primed(files);
      check(await call(client, tool, args), v);
      await client.close();
    });
  }
});

describe('every tool on a fresh vault', () => {
  test(`a session that uses all ${EXPECTED_TOOLS.length} tools`, async () => {
    const { v, client } = await primed({
      'Home.md': fm(['moc']) + '# Home\n\nSee [[Projects/Plan|the plan]] and [[Ideas]].\n\n## Links\n\n- [[Missing]]\n',
      'Projects/Plan.md': fm(['project']) + '# Plan\n\n## Steps\n\n1. one\n',
      'Ideas.md': 'Some ideas #idea\n',
      'Lonely.md': 'nobody links here',
      '@Ada.md': fm(['Person']) + 'Ada\n- [ ] call her\n',
      'diagram.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
    });
    const used = new Set();
    const c = async (name, args) => {
      used.add(name);
      const r = await call(client, name, args);
      assert.ok(!r.isError, `${name}: ${textOf(r)}`);
      return r;
    };
    assert.equal(textOf(await c('read_note', { name: 'ideas' })), 'Some ideas #idea\n');
    assert.deepEqual((await c('get_note_metadata', { name: 'Plan' })).structuredContent.incoming, ['Home']);
    assert.equal((await c('list_notes', { folder: 'Projects' })).structuredContent.total, 1);
    assert.deepEqual((await c('browse', {})).structuredContent.folders, [{ path: 'Projects', notes: 1 }]);
    assert.deepEqual((await c('search_notes', { query: 'plan' })).structuredContent.results.map((x) => x.path), ['Projects/Plan.md']);
    assert.deepEqual((await c('get_links', { name: 'Home', direction: 'out' })).structuredContent.outgoing, ['Plan', 'Ideas', 'Missing']);
    assert.equal((await c('get_backlinks', { name: 'Ideas' })).structuredContent.backlinks[0].lines[0], 6);
    assert.deepEqual((await c('find_broken_links', {})).structuredContent.result, [{ source: 'Home', target: 'Missing' }]);
    assert.deepEqual((await c('get_orphans', {})).structuredContent.orphans.map((x) => x.name).sort(), ['@Ada', 'Lonely']);
    assert.equal(textOf(await c('read_attachment', { path: 'diagram.svg' })), '<svg xmlns="http://www.w3.org/2000/svg"/>\n');
    assert.deepEqual((await c('list_attachments', { unused: true })).structuredContent.attachments.map((x) => x.path), ['diagram.svg']);
    assert.ok((await c('list_tags', {})).structuredContent.tags.some((t) => t.tag === 'idea'));
    assert.equal((await c('get_headings', { name: 'Plan' })).structuredContent.result.length, 2);
    assert.equal(textOf(await c('read_section', { name: 'Plan', section: 'Steps' })), '1. one');
    assert.ok((await c('recent_notes', { limit: 2 })).structuredContent.notes.length === 2);
    await c('create_note', { name: 'Inbox/Today', content: 'first', frontmatter: { tags: ['idea'] } });
    await c('append_note', { name: 'Today', text: 'last' });
    await c('prepend_note', { name: 'Today', text: 'top' });
    assert.equal(readNote(v.vault, 'Inbox/Today.md'), '---\ntags:\n  - idea\n---\ntop\n\nfirst\n\nlast');
    await c('update_note', { name: 'Lonely', content: '# Lonely\n\nbody\n' });
    assert.equal((await c('replace_text', { name: 'Lonely', old_text: 'body', new_text: 'text' })).structuredContent.replaced, 1);
    await c('insert_text', { name: 'Lonely', text: 'inserted', after: '# Lonely' });
    await c('append_section', { name: 'Plan', section: 'Steps', text: '2. two' });
    await c('update_section', { name: 'Home', section: 'Links', content: '- [[Ideas]]' });
    await c('delete_section', { name: 'Lonely', section: 'Lonely' });
    await c('set_frontmatter', { name: 'Ideas', key: 'status', value: 'draft' });
    await c('update_frontmatter', { name: 'Ideas', updates: { status: null, rating: 3 } });
    assert.match(readNote(v.vault, 'Ideas.md'), /^---\nrating: 3\n---\nSome ideas/);
    assert.deepEqual((await c('add_tag', { name: 'Ideas', tag: 'project' })).structuredContent.tags, ['project']);
    assert.equal((await c('remove_tag', { name: 'Ideas', tag: 'project' })).structuredContent.removed, true);
    await c('rename_note', { old_name: 'Projects/Plan', new_name: 'Archive/Plan 2024' });
    assert.match(readNote(v.vault, 'Home.md'), /\[\[Plan 2024\|the plan\]\]/);
    await c('rename_folder', { old_path: 'Inbox', new_path: 'Archive/Inbox' });
    assert.equal(readNote(v.vault, 'Archive/Inbox/Today.md'), '---\ntags:\n  - idea\n---\ntop\n\nfirst\n\nlast');
    await c('delete_note', { name: 'Ideas' });
    assert.match(readNote(v.vault, 'Home.md'), /\[\[Ideas \(deleted\)\]\]/);
    assert.ok((await c('get_policy', {})).structuredContent.allowed_tags.includes('moc'));
    const refused = await call(client, 'add_tag', { name: 'Lonely', tag: 'brand-new' });
    assert.equal(refused.isError, true);
    const viol = await c('list_violations', {});
    assert.ok(viol.structuredContent.violations[0].message.includes("['brand-new']"));
    const task = (await c('list_tasks', { where: 'status = "todo"' })).structuredContent.tasks[0];
    assert.equal(task.text, 'call her');
    await c('set_task_status', { name: task.name, line: task.line, status: 'done', expected_text: task.text });
    assert.match(readNote(v.vault, '@Ada.md'), /\n- \[x\] call her\n$/);
    // History: every step above, by tool.
    const hist = textOf(await c('get_note_history', { name: 'Archive/Plan 2024' }));
    assert.match(hist, /^Version history for Archive\/Plan 2024:/);
    assert.match(hist, /by mcp:rename_note\n {2}Update 2 notes: Archive\/Plan 2024, Home/);
    assert.match(hist, /by mcp:append_section\n {2}Update note: Projects\/Plan/);
    const ids = [...hist.matchAll(/^- ([0-9a-f]{7}) \(/gm)].map((m) => m[1]);
    const first = ids[ids.length - 1];
    const old = textOf(await c('get_note_version', { name: 'Plan 2024', version: first }));
    assert.match(old, /^# Plan \(version [0-9a-f]{7}\)\n\n\*\*Path:\*\* Projects\/Plan\n\*\*Tags:\*\* project\n/);
    assert.ok(old.endsWith('# Plan\n\n## Steps\n\n1. one\n'));
    const diff = textOf(await c('diff_note_versions', { name: 'Plan 2024', from_version: first, to_version: ids[0] }));
    assert.match(diff, /^\+2\. two$/m);
    assert.match(diff, /^--- a\/Projects\/Plan\.md\n\+\+\+ b\/Archive\/Plan 2024\.md$/m);
    assert.equal(textOf(await c('restore_note_version', { name: 'Plan 2024', version: first })), `Restored note 'Plan 2024' to version ${first}`);
    assert.ok(readNote(v.vault, 'Archive/Plan 2024.md').endsWith('1. one\n'));
    assert.deepEqual((await c('query_notes', { from: '#project' })).structuredContent.rows.length, 1);
    writeNote(v.vault, 'All.base', 'filters: file.hasTag("moc")\n');
    assert.equal((await c('query_base', { path: 'All.base' })).structuredContent.rows[0].path, 'Home.md');
    assert.equal((await c('get_help', {})).structuredContent.result.length, EXPECTED_TOOLS.length);
    // This session's changes, newest first; undone, Lonely is as it was.
    const changes = (await c('list_changes', {})).structuredContent.changes;
    assert.equal(changes[0].tool, 'restore_note_version');
    assert.ok(changes.some((x) => x.change === 'renamed' && x.from === 'Projects/Plan.md'));
    const session = changes[0].session;
    assert.match(client.getInstructions(), new RegExp(`session ${session}`));
    await c('undo_changes', { session });
    assert.equal(readNote(v.vault, 'Lonely.md'), 'nobody links here');
    assert.equal(readNote(v.vault, 'Projects/Plan.md'), fm(['project']) + '# Plan\n\n## Steps\n\n1. one\n');
    // Daily notes: the default settings (YYYY-MM-DD in the root).
    assert.equal((await c('periodic_note', { date: '2024-01-05' })).structuredContent.exists, false);
    assert.equal((await c('append_periodic_note', { date: '2024-01-05', text: 'A day.' })).structuredContent.created, true);
    assert.equal(readNote(v.vault, '2024-01-05.md'), 'A day.');
    assert.deepEqual([...used].sort(), [...EXPECTED_TOOLS].sort());
    await client.close();
  });

  test('wrong argument types and unknown arguments are tool errors', async () => {
    const { client } = await primed({ 'a.md': 'x' });
    const r1 = await call(client, 'list_notes', { limit: 'ten' });
    assert.equal(r1.isError, true);
    assert.match(textOf(r1), /'limit'.*must be an integer/);
    const r2 = await call(client, 'read_note', { name: 'a', bogus: 1 });
    assert.match(textOf(r2), /Unknown argument 'bogus'/);
    const r3 = await call(client, 'read_note', {});
    assert.match(textOf(r3), /Missing required argument 'name'/);
    await client.close();
  });

  test('an unknown tool is a protocol error (-32602)', async () => {
    const { client } = await primed({});
    await assert.rejects(call(client, 'no_such_tool'), (e) => e.code === -32602 && /Unknown tool/.test(e.message));
    await client.close();
  });

  test('a long result is cut, says so, and still matches its schema', async () => {
    const files = {};
    for (let i = 0; i < 300; i++) files[`n${i}.md`] = `[[missing target number ${i} with a long name to fill space]]`;
    files['big.md'] = 'x'.repeat(20000);
    const { client } = await primed(files, { args: ['--max-result', '8192'] });
    const r = await call(client, 'find_broken_links');
    assert.ok(!r.isError);
    assert.match(textOf(r), /\[Result cut: \d+ of 300 items shown/);
    assert.ok(r.structuredContent.result.length < 300);
    const t = await call(client, 'read_note', { name: 'big' });
    assert.match(textOf(t), /\[Result cut: 8192 of 20000 bytes shown/);
    await client.close();
  });
});

describe('hostile notes', () => {
  test('a note that is not UTF-8 reads as valid JSON with U+FFFD and a warning; edits keep its bytes; a YAML alias bomb is refused', async () => {
    const bad = Buffer.concat([Buffer.from('---\ntitle: T\n---\nStart '), Buffer.from([0xff, 0xfe]), Buffer.from(' end\n')]);
    let bomb = '---\n';
    for (let l = 0; l < 9; l++) {
      const c = String.fromCharCode(97 + l);
      const items = Array(9).fill(l ? '*' + String.fromCharCode(96 + l) : '"lol"');
      bomb += `${c}: &${c} [${items.join(',')}]\n`;
    }
    bomb += '---\nbody\n';
    const { v, client } = await primed({ 'Bad.md': bad, 'Bomb.md': bomb, 'Good.md': 'good' });
    const r = await call(client, 'read_note', { name: 'Bad' });
    assert.equal(r.isError, undefined);
    assert.equal(textOf(r), '---\ntitle: T\n---\nStart \uFFFD\uFFFD end\n');
    assert.match(r.content[1].text, /^\[Version [0-9a-f]{12}\.\]$/);
    assert.match(r.content[2].text, /Bad\.md.*not valid UTF-8.*U\+FFFD/);
    // The session goes on; an edit elsewhere in the note keeps the bytes.
    assert.equal(textOf(await call(client, 'read_note', { name: 'Good' })), 'good');
    const s = await call(client, 'set_frontmatter', { name: 'Bad', key: 'status', value: 'x' });
    assert.equal(s.isError, undefined, textOf(s));
    const onDisk = fs.readFileSync(path.join(v.vault, 'Bad.md'));
    assert.ok(onDisk.equals(Buffer.concat([Buffer.from('---\ntitle: T\nstatus: x\n---\nStart '), Buffer.from([0xff, 0xfe]), Buffer.from(' end\n')])));
    // The bomb: indexed, readable, its frontmatter reported.
    assert.equal(textOf(await call(client, 'read_note', { name: 'Bomb' })), bomb);
    const m = await call(client, 'get_note_metadata', { name: 'Bomb' });
    assert.match(m.structuredContent.frontmatter_error, /frontmatter too complex/);
    // vaultctl on the same daemon.
    const vc = vaultctl(v, ['call', 'read_note', 'name=Bad']);
    assert.equal(vc.code, 0, vc.err);
    assert.equal(vc.out, '---\ntitle: T\nstatus: x\n---\nStart \uFFFD\uFFFD end\n');
    assert.match(vc.err, /warning: .*not valid UTF-8/);
    assert.equal(vaultctl(v, ['call', 'read_note', 'name=Good']).out, 'good\n');
    assert.equal(textOf(await call(client, 'list_notes')).includes('Bomb'), true);
    await client.close();
  });
});
