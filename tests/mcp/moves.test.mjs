// Moves and renames that never re-point a link, end to end through
// vault-mcp and vaultctl: a note moved among same-name notes (its own
// links, its new neighbours' links), rename_folder with its dry run, its
// errors and its annotations.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { jsonOf, makeVault, mcpClient, readNote, textOf, vaultctl } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

async function session(files) {
  const v = makeVault(files);
  vaults.push(v);
  const client = await mcpClient(v);
  await client.callTool({ name: 'get_help', arguments: {} });
  return { v, client };
}

async function call(client, name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${textOf(r)}`);
  return jsonOf(r);
}

async function fails(client, name, args, re) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${textOf(r)}`);
  assert.match(textOf(r), re);
  assert.ok(textOf(r).length < 500, 'a short error');
}

const SAME_NAMES = {
  'Obsidian Publish/Introduction to Obsidian Publish.md': 'See [[Security and privacy]].\n',
  'Obsidian Publish/Security and privacy.md': 'publish\n',
  'Obsidian Sync/Security and privacy.md': 'sync\n',
  'A/Dup.md': 'a\n',
  'B/Sub/Dup.md': 'b\n',
  'C/From C.md': '---\nup: "[[Dup]]"\n---\n[[Dup]] and [[Sub/Dup|the moved one]] and ![[Dup#^x]]\n',
  'Root.md': '[[Dup]] [[Introduction to Obsidian Publish]]\n',
};

describe('a move never re-points a link', () => {
  test('the moved note\'s own links and its new neighbours\' links keep their notes', async () => {
    const { v, client } = await session(SAME_NAMES);
    let r = await call(client, 'rename_note', { old_name: 'Introduction to Obsidian Publish', new_name: 'Guides/Introduction to Obsidian Publish' });
    assert.deepEqual(r.files_updated, []);
    assert.equal(r.links_updated, 1);
    assert.equal(readNote(v.vault, 'Guides/Introduction to Obsidian Publish.md'), 'See [[Obsidian Publish/Security and privacy]].\n');
    assert.equal(readNote(v.vault, 'Root.md'), SAME_NAMES['Root.md'], 'a unique name still leads there');
    r = await call(client, 'get_links', { name: 'Introduction to Obsidian Publish', direction: 'out' });
    assert.deepEqual(r.outgoing, ['Obsidian Publish/Security and privacy']);

    // Moved beside notes whose [[Dup]] meant A/Dup.
    const dry = await call(client, 'rename_note', { old_name: 'B/Sub/Dup', new_name: 'C/Dup', dry_run: true });
    assert.deepEqual(dry.files.map((f) => [f.path, f.to]), [['B/Sub/Dup.md', 'C/Dup.md'], ['C/From C.md', undefined]]);
    assert.match(dry.files[1].diff, /^\+\[\[A\/Dup\]\] and \[\[C\/Dup\|the moved one\]\] and !\[\[A\/Dup#\^x\]\]$/m);
    assert.equal(readNote(v.vault, 'C/From C.md'), SAME_NAMES['C/From C.md'], 'a dry run writes nothing');
    r = await call(client, 'rename_note', { old_name: 'B/Sub/Dup', new_name: 'C/Dup' });
    assert.deepEqual(r.files_updated, ['From C']);
    assert.equal(r.links_updated, 4);
    assert.equal(readNote(v.vault, 'C/From C.md'),
      '---\nup: "[[A/Dup]]"\n---\n[[A/Dup]] and [[C/Dup|the moved one]] and ![[A/Dup#^x]]\n');
    assert.equal(readNote(v.vault, 'Root.md'), SAME_NAMES['Root.md']);
    r = await call(client, 'get_backlinks', { name: 'A/Dup' });
    assert.deepEqual(r.backlinks.map((b) => [b.name, b.count]).sort(), [['From C', 3], ['Root', 1]]);
    assert.deepEqual(await call(client, 'find_broken_links'), []);
  });
});

const FOLDER = {
  'Proj/Plan.md': '# Plan\n[[Dup]] [r](../Root.md) ![[diagram.png]]\n',
  'Proj/Dup.md': 'proj dup\n',
  'Proj/Sub/Spec.md': '[[Plan]]\n',
  'Proj/diagram.png': 'PNG',
  'Dup.md': 'root dup\n',
  'Root.md': '[[Proj/Plan]] [[Proj/Dup|d]] [[Dup]] ![[Proj/diagram.png]] [s](Proj/Sub/Spec.md)\n',
  'Other/Links.md': '---\nrel:\n  - \'[[Proj/Sub/Spec]]\'\n---\n[[Dup]]\n',
};

describe('rename_folder', () => {
  test('is in the table: destructive, with get_help text', async () => {
    const { client } = await session({});
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === 'rename_folder');
    assert.ok(t);
    // Destructive: the protocol's default, so unsaid.
    assert.equal(t.annotations?.destructiveHint ?? true, true);
    assert.equal(t.annotations?.readOnlyHint, undefined);
    assert.deepEqual(t.inputSchema.required, ['old_path', 'new_path']);
    assert.equal(t.inputSchema.properties.dry_run.type, 'boolean');
    const help = (await call(client, 'get_help')).find((x) => x.name === 'rename_folder');
    assert.match(help.params, /old_path/);
    assert.match(help.description, /folder/);
  });

  test('moves the folder and rewrites every path link to it; dry_run shows each diff', async () => {
    const { v, client } = await session(FOLDER);
    const dry = await call(client, 'rename_folder', { old_path: 'Proj', new_path: 'Archive/Project', dry_run: true });
    assert.equal(dry.dry_run, true);
    assert.equal(dry.notes_moved, 3);
    assert.equal(dry.files_moved, 1);
    assert.deepEqual(dry.files.map((c) => [c.path, c.to]),
      [['Other/Links.md', undefined], ['Root.md', undefined], ['Proj/Plan.md', 'Archive/Project/Plan.md']]);
    for (const c of dry.files) assert.match(c.diff, /^--- a\/.*\n\+\+\+ b\/.*\n@@ /);
    assert.ok(fs.existsSync(path.join(v.vault, 'Proj/Plan.md')), 'a dry run moves nothing');
    assert.equal(readNote(v.vault, 'Root.md'), FOLDER['Root.md']);

    const r = await call(client, 'rename_folder', { old_path: 'Proj', new_path: 'Archive/Project' });
    assert.deepEqual(r.files_updated, ['Other/Links.md', 'Root.md', 'Archive/Project/Plan.md']);
    assert.equal(r.links_updated, 6);
    assert.equal(readNote(v.vault, 'Root.md'),
      '[[Plan]] [[Project/Dup|d]] [[Dup]] ![[diagram.png]] [s](Archive/Project/Sub/Spec.md)\n');
    assert.equal(readNote(v.vault, 'Other/Links.md'), '---\nrel:\n  - \'[[Spec]]\'\n---\n[[Dup]]\n');
    assert.equal(readNote(v.vault, 'Archive/Project/Plan.md'), '# Plan\n[[Dup]] [r](../../Root.md) ![[diagram.png]]\n');
    assert.equal(readNote(v.vault, 'Archive/Project/Sub/Spec.md'), '[[Plan]]\n');
    assert.equal(fs.readFileSync(path.join(v.vault, 'Archive/Project/diagram.png'), 'utf8'), 'PNG');
    assert.ok(!fs.existsSync(path.join(v.vault, 'Proj')));
    assert.deepEqual(await call(client, 'find_broken_links'), []);
    const bl = await call(client, 'get_backlinks', { name: 'Spec' });
    assert.deepEqual(bl.backlinks.map((b) => b.name).sort(), ['Links', 'Root']);
    // The notes moved are searched and listed under their new paths.
    const ls = await call(client, 'list_notes', { folder: 'Archive/Project' });
    assert.equal(ls.total, 3);
  });

  test('refuses what it cannot do, with a clear error, and changes nothing', async () => {
    const { v, client } = await session({ ...FOLDER, 'Taken/x.md': 'x\n' });
    await fails(client, 'rename_folder', { old_path: 'Nope', new_path: 'X' }, /No folder 'Nope'/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: 'Proj/Deeper' }, /into itself/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: 'Taken' }, /already exists/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: '../escape' }, /'\.\.'/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: '.hidden' }, /hidden/);
    await fails(client, 'rename_folder', { old_path: 'Root.md', new_path: 'X' }, /not a folder/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: 'a|b' }, /does not allow/);
    await fails(client, 'rename_folder', { old_path: 'Proj', new_path: 'x'.repeat(70000) }, /too long/);
    assert.equal(readNote(v.vault, 'Root.md'), FOLDER['Root.md']);
    assert.ok(fs.existsSync(path.join(v.vault, 'Proj/Plan.md')));
  });

  test('vaultctl call rename_folder', async () => {
    const { v, client } = await session(FOLDER);
    const dry = vaultctl(v, ['--vault', v.vault, '--json', 'call', 'rename_folder', 'old_path=Proj', 'new_path=P2', 'dry_run=true']);
    assert.equal(dry.code, 0, dry.err);
    assert.match(dry.out, /"dry_run": ?true/);
    const r = vaultctl(v, ['--vault', v.vault, 'call', 'rename_folder', 'old_path=Proj', 'new_path=P2']);
    assert.equal(r.code, 0, r.err);
    assert.equal(readNote(v.vault, 'Root.md'), '[[Plan]] [[P2/Dup|d]] [[Dup]] ![[diagram.png]] [s](P2/Sub/Spec.md)\n');
    await client.close();
  });
});
