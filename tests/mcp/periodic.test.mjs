// Daily notes and templates through vault-mcp with the official SDK
// client: periodic_note and append_periodic_note following the vault's
// daily-notes.json and the Periodic Notes plugin, create_note's template,
// Templater refused, the guard judging what a template makes, and the
// same tools through `vaultctl call`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, textOf, vaultctl } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

const FILES = {
  '.obsidian/daily-notes.json': JSON.stringify({ folder: 'Journal', format: 'YYYY/MM/YYYY-MM-DD ddd', template: 'Templates/Daily' }),
  '.obsidian/templates.json': JSON.stringify({ folder: 'Templates', dateFormat: 'D MMMM YYYY' }),
  '.obsidian/plugins/periodic-notes/data.json': JSON.stringify({
    daily: { enabled: false },
    weekly: { enabled: true, folder: 'Weeks', format: 'gggg-[W]ww', template: 'Templates/Weekly' },
  }),
  'Templates/Daily.md': '---\ntags: [journal]\n---\n# {{title}}\n\n[[{{yesterday}}]] | [[{{tomorrow}}]]\n\n## Log\n\n## Tasks\n',
  'Templates/Weekly.md': '# Week {{date:w}} ({{sunday:MMM D}} - {{saturday:MMM D}})\n',
  'Templates/Project.md': '---\ntags: [project]\nstatus: idea\n---\n# {{title}}\nStarted {{date}}.\n',
  'Templates/Scripted.md': '# <% tp.file.title %>\n<%* tR += await tp.system.prompt("x") %>\n',
  'Templates/Agent.md': '---\ntags: [claude]\n---\nAn agent note with no description.\n',
};

async function session(files = FILES, opts) {
  const v = makeVault(files);
  vaults.push(v);
  const client = await mcpClient(v, opts);
  await client.listTools(); // so the SDK checks structuredContent
  await client.callTool({ name: 'get_help', arguments: {} }); // the context block
  return { v, client };
}
const call = (client, name, args = {}) => client.callTool({ name, arguments: args });
const exists = (v, rel) => fs.existsSync(path.join(v.vault, rel));
const read = (v, rel) => fs.readFileSync(path.join(v.vault, rel), 'utf8');

describe('periodic notes', () => {
  test('periodic_note: the path the settings give; create fills the template through the guard', async () => {
    const { v, client } = await session();
    const a = await call(client, 'periodic_note', { date: '2024-1-5' });
    assert.equal(a.isError, undefined, textOf(a));
    assert.deepEqual(a.structuredContent, {
      date: '2024-01-05',
      name: '2024-01-05 Fri',
      path: 'Journal/2024/01/2024-01-05 Fri.md',
      exists: false,
    });
    const b = await call(client, 'periodic_note', { date: '2024-01-05', create: true });
    assert.equal(b.isError, undefined, textOf(b));
    assert.equal(b.structuredContent.created, true);
    const want = '---\ntags: [journal]\n---\n# 2024-01-05 Fri\n\n[[2024/01/2024-01-04 Thu]] | [[2024/01/2024-01-06 Sat]]\n\n## Log\n\n## Tasks\n';
    assert.equal(read(v, 'Journal/2024/01/2024-01-05 Fri.md'), want);
    assert.equal(b.structuredContent.text, want);
    assert.match(b.structuredContent.version, /^[0-9a-f]{12}$/);
    // The note is in the index at once: read_note finds it by name.
    assert.equal(textOf(await call(client, 'read_note', { name: '2024-01-05 Fri' })), want);
    // Weekly notes from the Periodic Notes plugin (daily is off there).
    const w = await call(client, 'periodic_note', { period: 'week', date: '2024-12-30', create: true });
    assert.equal(w.isError, undefined, textOf(w));
    assert.equal(w.structuredContent.path, 'Weeks/2025-W01.md');
    assert.equal(read(v, 'Weeks/2025-W01.md'), '# Week 1 (Dec 29 - Jan 4)\n');
    const m = await call(client, 'periodic_note', { period: 'month' });
    assert.equal(m.isError, true);
    assert.match(textOf(m), /Monthly notes are not set up in this vault/);
  });

  test('append_periodic_note: made if missing, then appended to a section', async () => {
    const { v, client } = await session();
    const a = await call(client, 'append_periodic_note', { text: '- 09:00 standup', date: '2024-03-01', section: 'Log' });
    assert.equal(a.isError, undefined, textOf(a));
    assert.equal(a.structuredContent.created, true);
    const b = await call(client, 'append_periodic_note', { text: '- [ ] write report', date: '2024-03-01', section: 'Tasks' });
    assert.equal(b.isError, undefined, textOf(b));
    assert.equal(b.structuredContent.created, undefined);
    assert.equal(
      read(v, 'Journal/2024/03/2024-03-01 Fri.md'),
      '---\ntags: [journal]\n---\n# 2024-03-01 Fri\n\n[[2024/02/2024-02-29 Thu]] | [[2024/03/2024-03-02 Sat]]\n\n' +
        '## Log\n- 09:00 standup\n\n## Tasks\n- [ ] write report',
    );
    // Its change is this session's, like any other write.
    const changes = (await call(client, 'list_changes', {})).structuredContent.changes;
    assert.ok(changes.some((c) => c.tool === 'append_periodic_note' && c.note === 'Journal/2024/03/2024-03-01 Fri.md'));
  });

  test('a Templater template is refused, and nothing is written', async () => {
    const files = { ...FILES, '.obsidian/daily-notes.json': JSON.stringify({ template: 'Templates/Scripted' }) };
    const { v, client } = await session(files);
    const a = await call(client, 'periodic_note', { date: '2024-01-05', create: true });
    assert.equal(a.isError, true);
    assert.match(textOf(a), /Template 'Templates\/Scripted\.md' uses Templater syntax \(<% \.\.\. %>\), which is code that vaultd never runs/);
    assert.ok(!exists(v, '2024-01-05.md'));
    const b = await call(client, 'create_note', { name: 'Idea', template: 'Scripted' });
    assert.equal(b.isError, true);
    assert.match(textOf(b), /Templater syntax/);
    assert.ok(!exists(v, 'Idea.md'));
  });

  test('what a template makes goes through the policy: a refused note is not created', async () => {
    const files = { ...FILES, '.obsidian/daily-notes.json': JSON.stringify({ template: 'Templates/Agent' }) };
    const { v, client } = await session(files);
    const a = await call(client, 'periodic_note', { date: '2024-01-05', create: true });
    assert.equal(a.isError, true);
    assert.match(textOf(a), /description/);
    assert.ok(!exists(v, '2024-01-05.md'));
    const b = await call(client, 'create_note', { name: 'Helper', template: 'Agent' });
    assert.equal(b.isError, true);
    assert.ok(!exists(v, 'Helper.md'));
    // With the description the rule asks for, the same template passes.
    const c = await call(client, 'create_note', { name: 'Helper', template: 'Agent', frontmatter: { description: 'Helps' } });
    assert.equal(c.isError, undefined, textOf(c));
    assert.match(read(v, 'Helper.md'), /^---\ntags: \[claude\]\ndescription: Helps\n---\n/);
  });

  test('create_note with a template: variables filled, frontmatter merged, content after the body', async () => {
    const { v, client } = await session();
    const r = await call(client, 'create_note', {
      name: 'work/Garden',
      template: 'Project',
      frontmatter: { status: 'active', tags: ['journal'] },
      content: 'First steps.',
    });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal(r.structuredContent.template, 'Templates/Project.md');
    const text = read(v, 'work/Garden.md');
    assert.match(text, /^---\ntags:.*project.*journal.*\nstatus: active\n---\n# Garden\nStarted \d{1,2} [A-Z][a-z]+ \d{4}\.\n\nFirst steps\.$/s);
  });

  test('tools/list: in the full list, not in core; get_help explains them', async () => {
    const { client } = await session();
    const all = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(all.includes('periodic_note') && all.includes('append_periodic_note'));
    const { client: core } = await session(FILES, { args: ['--tools', 'core'] });
    const coreNames = (await core.listTools()).tools.map((t) => t.name);
    assert.ok(!coreNames.includes('periodic_note') && !coreNames.includes('append_periodic_note'));
    const help = (await call(client, 'get_help')).structuredContent.result.find((t) => t.name === 'periodic_note');
    assert.match(help.description, /daily-notes\.json/);
    assert.match(help.params, /create\?: boolean/);
  });

  test('vaultctl call periodic_note and append_periodic_note', async () => {
    const { v } = await session();
    const r = vaultctl(v, ['--vault', v.vault, 'call', 'periodic_note', 'date=2024-02-29', 'create:=true']);
    assert.equal(r.code, 0, r.err);
    const out = JSON.parse(r.out);
    assert.equal(out.path, 'Journal/2024/02/2024-02-29 Thu.md');
    assert.equal(out.created, true);
    const a = vaultctl(v, ['--vault', v.vault, 'call', 'append_periodic_note', 'date=2024-02-29', 'section=Log', 'text=from the shell']);
    assert.equal(a.code, 0, a.err);
    assert.match(read(v, 'Journal/2024/02/2024-02-29 Thu.md'), /## Log\nfrom the shell\n/);
    const bad = vaultctl(v, ['--vault', v.vault, 'call', 'periodic_note', 'date=2024-02-30']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /Invalid date '2024-02-30'/);
  });
});
