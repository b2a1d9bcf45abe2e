// Notes read as Obsidian reads them, end to end through vault-mcp: links
// whose text holds inline code, indented code blocks, math, links in
// properties (quoted as Obsidian writes them), and Obsidian 1.9's
// properties (no tag/alias unless the policy keeps them).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { jsonOf, makeVault, mcpClient, readNote, sleep, textOf } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

// A session whose first result (with the context block) is spent.
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

const USES =
  '[[Functions|`hasTag`]] and [[Functions#h|a `b` c]]\n' +
  '[[#`move`|move]] and `[[Functions]]` stays code\n';
const CODE =
  'Paragraph.\n\n' +
  '    [[Target]] [[IndentOnly]] #indentonly\n\n' +
  '- item\n\n' +
  '    [[InItem]] is the item\'s paragraph\n\n' +
  '$$\n[[Target]] #inmath\n$$\n' +
  'Inline $[[Target]]^2$ while $5 and $6 [[Money]] is money\n';
const PROPS =
  '---\n' +
  'title: Ünïcode first\n' +
  'related: "[[Target]]"\n' +
  'list:\n' +
  '  - "[[Other]]" # kept comment\n' +
  "  - '[[Target|T]]'\n" +
  'up: [[Unquoted]]\n' +
  '---\n' +
  'Body [[Target]]\n';
const FILES = {
  'Functions.md': '# Functions\n## `move`\n## h\n',
  'Uses.md': USES,
  'Code.md': CODE,
  'Props.md': PROPS,
  'Target.md': 'target\n',
  'Other.md': 'other\n',
  'InItem.md': 'in item\n',
  'Old.md': '---\ntag: oldtag\nalias: Old Name\naliases: [AI, ai]\n---\nold\n',
};

describe('reading notes as Obsidian does', () => {
  test('links, backlinks, broken links, orphans, tags', async () => {
    const { client } = await session(FILES);
    let r = await call(client, 'get_backlinks', { name: 'Functions' });
    assert.deepEqual(r.backlinks, [{ name: 'Uses', path: 'Uses.md', count: 2, lines: [1] }]);
    r = await call(client, 'get_backlinks', { name: 'Target' });
    assert.deepEqual(r.backlinks, [{ name: 'Props', path: 'Props.md', count: 3, lines: [3, 6, 9] }],
      'property links with their lines; nothing in code or math');
    r = await call(client, 'get_links', { name: 'Props', direction: 'out' });
    assert.deepEqual([...r.outgoing].sort(), ['Other', 'Target']);
    r = await call(client, 'get_backlinks', { name: 'InItem' });
    assert.equal(r.backlinks.length, 1, 'an indented list item paragraph is no code');
    r = await call(client, 'find_broken_links');
    assert.deepEqual(r, [{ source: 'Code', target: 'Money' }],
      'no IndentOnly (code), no Unquoted (a YAML list, not a link)');
    r = await call(client, 'get_orphans');
    assert.deepEqual(r.orphans.map((o) => o.name), ['Old'], 'Other is linked from a property');
    r = await call(client, 'list_tags');
    assert.deepEqual(r.tags, [], 'no tags in code or math; "tag" is no tags property since 1.9');
    // Aliases as written, "AI" and "ai" two of them; "alias" is not read.
    r = await call(client, 'get_note_metadata', { name: 'Old' });
    assert.deepEqual(r.aliases, ['AI', 'ai']);
    assert.deepEqual(r.tags, []);
    const e = await client.callTool({ name: 'read_note', arguments: { name: 'Old Name' } });
    assert.ok(e.isError);
    assert.match(textOf(await client.callTool({ name: 'read_note', arguments: { name: 'ai' } })), /\nold\n$/);
  });

  test('rename_note rewrites links with code and property links, never code or math', async () => {
    const { v, client } = await session(FILES);
    let r = await call(client, 'rename_note', { old_name: 'Target', new_name: "Bob's Goal" });
    assert.deepEqual([...r.files_updated].sort(), ['Props']);
    assert.equal(r.links_updated, 3);
    assert.equal(readNote(v.vault, 'Code.md'), CODE);
    assert.equal(readNote(v.vault, 'Props.md'), PROPS
      .replace('related: "[[Target]]"', 'related: "[[Bob\'s Goal]]"')
      .replace("'[[Target|T]]'", "'[[Bob''s Goal|T]]'")
      .replace('Body [[Target]]', "Body [[Bob's Goal]]"));
    r = await call(client, 'get_backlinks', { name: "Bob's Goal" });
    assert.deepEqual(r.backlinks[0].lines, [3, 6, 9]);
    r = await call(client, 'get_note_metadata', { name: 'Props' });
    assert.deepEqual(r.frontmatter.list, ['[[Other]]', "[[Bob's Goal|T]]"], 'the YAML still reads');
    assert.equal(r.frontmatter.title, 'Ünïcode first');
    r = await call(client, 'rename_note', { old_name: 'Functions', new_name: 'Funcs' });
    assert.equal(r.links_updated, 2);
    assert.equal(readNote(v.vault, 'Uses.md'), USES.replaceAll('[[Functions|', '[[Funcs|')
      .replace('[[Functions#h', '[[Funcs#h'));
    r = await call(client, 'find_broken_links');
    assert.deepEqual(r, [{ source: 'Code', target: 'Money' }]);
  });

  test('legacy_properties: true keeps reading tag and alias, also when the policy changes', async () => {
    const { v, client } = await session({
      ...FILES,
      '.vaultd/policy.yaml': 'legacy_properties: true\n',
    });
    let r = await call(client, 'list_tags');
    assert.deepEqual(r.tags.map((t) => t.tag), ['oldtag']);
    assert.match(textOf(await client.callTool({ name: 'read_note', arguments: { name: 'Old Name' } })), /\nold\n$/);
    r = await call(client, 'get_policy');
    assert.equal(r.legacy_properties, true);
    // Saved without it: the vault is read again, as Obsidian 1.9 reads it.
    fs.writeFileSync(path.join(v.vault, '.vaultd/policy.yaml'), 'legacy_properties: false\n');
    let tags = ['oldtag'];
    for (let i = 0; i < 200 && tags.length; i++) {
      await sleep(50);
      tags = (await call(client, 'list_tags')).tags.map((t) => t.tag);
    }
    assert.deepEqual(tags, []);
    const e = await client.callTool({ name: 'read_note', arguments: { name: 'Old Name' } });
    assert.ok(e.isError);
  });
});
