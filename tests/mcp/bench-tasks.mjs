// Task benchmark: list_tasks end to end through vault-mcp with the
// official SDK client on a generated vault (about one note in three has
// a task list: gen_vault).
//   node bench-tasks.mjs [N=10000]
// Prints median/p95 over 200 calls of: every task (first page), open
// tasks due before a date (a date filter over every task), a tag and
// status filter sorted by due date, and a text filter; with the tasks
// matched and the daemon's RSS.
import { daemonMemory, fmt, pct, series, settledVault } from './bench-lib.mjs';

const n = parseInt(process.argv[2] || '10000', 10);
const CALLS = 200;
const { v, client, mdBytes } = await settledVault(n);

const months = ['2026-03-01', '2026-06-01', '2026-09-01', '2026-12-01'];
const tags = ['project', 'area', 'topic', 'work', 'research'];
const words = ['alpha', 'river', 'summit', 'willow', 'orbit'];
const runs = [
  await series(client, 'list_tasks', CALLS, 'all tasks', () => ({ limit: 50 })),
  await series(client, 'list_tasks', CALLS, 'open, due before', (i) => ({ where: `status != "done" and due < ${months[i % 4]}`, limit: 50 })),
  await series(client, 'list_tasks', CALLS, 'tag+status, sorted', (i) => ({
    where: `contains(tags, "${tags[i % tags.length]}") and !completed`,
    sort: 'due asc, priority desc',
    limit: 20,
  })),
  await series(client, 'list_tasks', CALLS, 'text contains', (i) => ({ where: `text contains "${words[i % words.length]}"`, limit: 50 })),
];
const all = runs[0].total;
const mem = daemonMemory(v);
await client.close();
await v.cleanup();

console.log(`== ${n} notes, ${(mdBytes / 1e6).toFixed(1)} MB of markdown, ${all} tasks`);
for (const s of runs)
  console.log(`list_tasks ${s.label.padEnd(20)} median ${fmt(pct(s.times, 50))}  p95 ${fmt(pct(s.times, 95))}  (${s.total} tasks matched in the last)`);
console.log(`daemon RSS ${(mem.rss / 1e6).toFixed(0)} MB, peak ${(mem.peak / 1e6).toFixed(0)} MB`);
