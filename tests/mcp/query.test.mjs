// Property queries through vault-mcp with the official SDK client:
// query_notes (predicates and a Dataview query) and query_base, typed by
// .obsidian/types.json, answered from memory and following edits; and
// the same through `vaultctl call`.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, textOf, vaultctl, writeNote } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

const FILES = {
  '.obsidian/types.json': JSON.stringify({ types: { due: 'date', priority: 'number' } }),
  'work/Alpha.md': '---\ntags: [project]\nstatus: active\ndue: 2024-1-5\npriority: 3\n---\n# Alpha\n',
  'work/Beta.md': '---\ntags: [project]\nstatus: done\ndue: 2024-01-20\npriority: "10"\n---\n# Beta\n[[Alpha]]\n',
  'Home.md': 'No properties.\n',
  'Board.base':
    'filters:\n  and:\n    - file.hasTag("project")\nformulas:\n  double: "priority * 2"\n' +
    'views:\n  - type: table\n    name: Main\n    order: [file.basename, formula.double]\n' +
    '    sort:\n      - property: note.priority\n        direction: DESC\n',
};

async function session() {
  const v = makeVault(FILES);
  vaults.push(v);
  const client = await mcpClient(v);
  await client.listTools(); // so the SDK checks structuredContent
  await client.callTool({ name: 'get_help', arguments: {} }); // the context block
  return { v, client };
}
const names = (r) => r.structuredContent.rows.map((x) => x.name);

describe('property queries', () => {
  test('query_notes: typed predicates, fields, sort; rows without bodies', async () => {
    const { client } = await session();
    const r = await client.callTool({
      name: 'query_notes',
      arguments: { where: 'due = 2024-01-05 or priority > 5', fields: 'due, priority', sort: 'priority desc' },
    });
    assert.equal(r.isError, undefined, textOf(r));
    assert.deepEqual(names(r), ['Beta', 'Alpha']);
    assert.deepEqual(r.structuredContent.rows[0].fields, { due: '2024-01-20', priority: 10 });
    assert.equal(r.structuredContent.total, 2);
    assert.ok(!textOf(r).includes('# Alpha'));
  });

  test('query_notes: a Dataview TABLE query, and an error naming what it cannot run', async () => {
    const { client } = await session();
    const r = await client.callTool({
      name: 'query_notes',
      arguments: { query: 'TABLE status AS "State", due FROM #project WHERE due < date(2024-01-10) SORT file.name' },
    });
    assert.deepEqual(names(r), ['Alpha']);
    assert.deepEqual(r.structuredContent.columns, ['State', 'due']);
    const bad = await client.callTool({ name: 'query_notes', arguments: { query: 'TABLE x GROUP BY status' } });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /GROUP BY is not supported/);
  });

  test('query_notes sees edits at once', async () => {
    const { client } = await session();
    const before = await client.callTool({ name: 'query_notes', arguments: { where: 'status = "active"' } });
    assert.deepEqual(names(before), ['Alpha']);
    const w = await client.callTool({ name: 'set_frontmatter', arguments: { name: 'Beta', key: 'status', value: 'active' } });
    assert.equal(w.isError, undefined, textOf(w));
    const afterEdit = await client.callTool({ name: 'query_notes', arguments: { where: 'status = "active"' } });
    assert.deepEqual(names(afterEdit), ['Alpha', 'Beta']);
  });

  test('query_base runs a .base view; a broken base is a clear error', async () => {
    const { v, client } = await session();
    const r = await client.callTool({ name: 'query_base', arguments: { path: 'Board.base' } });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal(r.structuredContent.view, 'Main');
    assert.deepEqual(names(r), ['Beta', 'Alpha']);
    assert.deepEqual(r.structuredContent.rows[1].fields, { 'file.basename': 'Alpha', 'formula.double': 6 });
    writeNote(v.vault, 'Broken.base', 'filters: [oops\n');
    const bad = await client.callTool({ name: 'query_base', arguments: { path: 'Broken.base' } });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /not valid YAML/);
  });

  test('vaultctl call query_notes', async () => {
    const { v } = await session();
    const r = vaultctl(v, ['--vault', v.vault, 'call', 'query_notes', 'query=LIST FROM #project WHERE priority >= 3']);
    assert.equal(r.code, 0, r.err);
    const rows = JSON.parse(r.out).rows.map((x) => x.name);
    assert.deepEqual(rows, ['Alpha', 'Beta']);
  });
});
