// Tasks through vault-mcp with the official SDK client: list_tasks (its
// rows checked against the output schema by the SDK) and set_task_status
// through the guarded write path (history with its writer, the expected
// text, what the policy and a read-only server refuse); and the same
// through `vaultctl call`.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, readNote, sleep, textOf, vaultctl } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

const FILES = {
  '.obsidian/plugins/obsidian-tasks-plugin/manifest.json': '{"id": "obsidian-tasks-plugin"}',
  '.vaultd/policy.yaml': 'ignore: ["private/"]\n',
  'work/Plan.md':
    '---\ntags: [project]\n---\n# Plan\n\n- [ ] Write report 📅 2024-06-01 #work\n' +
    '- [x] Ship it ✅ 2024-05-20\n    - [/] Refactor ⏫ #work/code\n' +
    '- [ ] Weekly review 🔁 every week 📅 2024-06-03\n```\n- [ ] in code\n```\n',
  'Home.md': '- [ ] Fix the door 📅 2024-05-30\n* [>] Call plumber\n',
  'private/Secret.md': '- [ ] hidden task\n',
};

async function session(opts) {
  const v = makeVault(FILES);
  vaults.push(v);
  const client = await mcpClient(v, opts);
  await client.listTools(); // so the SDK checks structuredContent
  await client.callTool({ name: 'get_help', arguments: {} }); // the context block
  return { v, client };
}
const where = (r) => r.structuredContent.tasks.map((x) => `${x.path}:${x.line}`);
const today = () => {
  const d = new Date();
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
};

describe('tasks', () => {
  test('list_tasks: every task with its fields; filters by status, date, tag, folder, text', async () => {
    const { client } = await session();
    const all = await client.callTool({ name: 'list_tasks', arguments: {} });
    assert.equal(all.isError, undefined, textOf(all));
    assert.deepEqual(where(all), ['Home.md:1', 'Home.md:2', 'work/Plan.md:6', 'work/Plan.md:7', 'work/Plan.md:8', 'work/Plan.md:9']);
    const t = all.structuredContent.tasks[2];
    assert.deepEqual(t, {
      name: 'Plan', path: 'work/Plan.md', line: 6, symbol: ' ', status: 'todo',
      text: 'Write report 📅 2024-06-01 #work',
      fields: { description: 'Write report #work', tags: ['work'], due: '2024-06-01' },
    });
    assert.deepEqual(all.structuredContent.tasks[1].fields, {});
    const open = await client.callTool({ name: 'list_tasks', arguments: { where: 'status = "todo" and due < 2024-06-02', sort: 'due' } });
    assert.deepEqual(where(open), ['Home.md:1', 'work/Plan.md:6']);
    const tagged = await client.callTool({ name: 'list_tasks', arguments: { from: '"work"', where: 'econtains(tags, "work/code")' } });
    assert.deepEqual(where(tagged), ['work/Plan.md:8']);
    assert.equal(tagged.structuredContent.tasks[0].fields.priority, 'high');
    const text = await client.callTool({ name: 'list_tasks', arguments: { where: 'icontains(text, "PLUMBER")' } });
    assert.deepEqual(where(text), ['Home.md:2']);
    const bad = await client.callTool({ name: 'list_tasks', arguments: { where: 'due <' } });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /Cannot run the query: where/);
  });

  test('set_task_status: done adds the done date, through the guard and the history', async () => {
    const { v, client } = await session();
    const r = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'Plan', line: 6, status: 'done', expected_text: 'Write report 📅 2024-06-01 #work' },
    });
    assert.equal(r.isError, undefined, textOf(r));
    assert.equal(r.structuredContent.status, 'done');
    assert.match(readNote(v.vault, 'work/Plan.md'), new RegExp(`\\n- \\[x\\] Write report 📅 2024-06-01 #work ✅ ${today()}\\n`));
    const done = await client.callTool({ name: 'list_tasks', arguments: { where: 'completed' } });
    assert.deepEqual(where(done), ['work/Plan.md:6', 'work/Plan.md:7']);
    let h = '';
    for (let i = 0; i < 200 && !/mcp:set_task_status/.test(h); i++) {
      await sleep(25);
      h = textOf(await client.callTool({ name: 'get_note_history', arguments: { name: 'Plan' } }));
    }
    assert.match(h, /by mcp:set_task_status/);
    // Undone: the date goes again.
    const u = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'Plan', line: 7, status: 'todo', expected_text: 'Ship it ✅ 2024-05-20' },
    });
    assert.equal(u.isError, undefined, textOf(u));
    assert.match(readNote(v.vault, 'work/Plan.md'), /\n- \[ \] Ship it\n/);
  });

  test('set_task_status refuses a stale expected text, a recurring task, and what the policy hides', async () => {
    const { v, client } = await session();
    const before = readNote(v.vault, 'Home.md');
    const stale = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'Home', line: 2, status: 'done', expected_text: 'Fix the door 📅 2024-05-30' },
    });
    assert.equal(stale.isError, true);
    assert.match(textOf(stale), /is not the task .*now at line 1\. Nothing was written/);
    const rec = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'Plan', line: 9, status: 'done', expected_text: 'Weekly review 🔁 every week 📅 2024-06-03' },
    });
    assert.equal(rec.isError, true);
    assert.match(textOf(rec), /recurs/);
    // The policy ignores private/: its tasks are not listed nor edited.
    const all = await client.callTool({ name: 'list_tasks', arguments: { where: 'text contains "hidden"' } });
    assert.deepEqual(where(all), []);
    const hidden = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'private/Secret', line: 1, status: 'done', expected_text: 'hidden task' },
    });
    assert.equal(hidden.isError, true);
    assert.equal(readNote(v.vault, 'private/Secret.md'), '- [ ] hidden task\n');
    assert.equal(readNote(v.vault, 'Home.md'), before);
  });

  test('a read-only server offers list_tasks only', async () => {
    const { v, client } = await session({ args: ['--read-only'] });
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'list_tasks'));
    assert.ok(!tools.some((t) => t.name === 'set_task_status'));
    const r = await client.callTool({
      name: 'set_task_status',
      arguments: { name: 'Home', line: 1, status: 'done', expected_text: 'Fix the door 📅 2024-05-30' },
    });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /read-only/);
    assert.match(readNote(v.vault, 'Home.md'), /^- \[ \] Fix the door/);
  });

  test('vaultctl call list_tasks and set_task_status', async () => {
    const { v } = await session();
    const l = vaultctl(v, ['--vault', v.vault, 'call', 'list_tasks', 'where=status = "todo"', 'from=#project']);
    assert.equal(l.code, 0, l.err);
    assert.deepEqual(JSON.parse(l.out).tasks.map((x) => x.line), [6, 9]);
    const s = vaultctl(v, ['--vault', v.vault, 'call', 'set_task_status', 'name=Home', 'line=2', 'status=cancelled', 'expected_text=Call plumber']);
    assert.equal(s.code, 0, s.err);
    assert.match(readNote(v.vault, 'Home.md'), new RegExp(`\\n\\* \\[-\\] Call plumber ❌ ${today()}\\n`));
    const bad = vaultctl(v, ['--vault', v.vault, 'call', 'set_task_status', 'name=Home', 'line=2', 'status=done', 'expected_text=Call plumber']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /is not the task/);
  });
});
