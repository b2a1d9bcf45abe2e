// Task benchmark: list_tasks end to end through vault-mcp with the
// official SDK client on a generated vault (about one note in three has
// a task list: gen_vault).
//   node bench-tasks.mjs [N=10000]
// Prints median/p95 over 200 calls of: every task (first page), open
// tasks due before a date (a date filter over every task), a tag and
// status filter sorted by due date, and a text filter; with the tasks
// matched and the daemon's RSS.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { ctlConnect, daemonPid, makeVault, mcpClient, socketPath, sleep } from './lib.mjs';

const n = parseInt(process.argv[2] || '10000', 10);
const CALLS = 200;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];
const fmt = (ms) => `${ms.toFixed(2)} ms`;

const v = makeVault({});
const g = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, String(n), '1'], { encoding: 'utf8' });
if (g.status !== 0) throw new Error(g.stderr);
const mdBytes = Number(/(\d+) bytes of markdown/.exec(g.stdout)?.[1] ?? 0);
const client = await mcpClient(v);
const c = await ctlConnect(socketPath(v));
for (;;) {
  const st = await c.call('status');
  if (st.index.state === 'ready') break;
  await sleep(20);
}
c.close();
await client.callTool({ name: 'get_help', arguments: {} }); // the context block

async function series(label, argsFor) {
  const times = [];
  let total = 0;
  for (let i = 0; i < CALLS; i++) {
    const t = now();
    const r = await client.callTool({ name: 'list_tasks', arguments: argsFor(i) });
    times.push(now() - t);
    if (r.isError) throw new Error(`${label}: ${r.content[0].text}`);
    total = r.structuredContent.total;
  }
  return { label, times, total };
}

const months = ['2026-03-01', '2026-06-01', '2026-09-01', '2026-12-01'];
const tags = ['project', 'area', 'topic', 'work', 'research'];
const words = ['alpha', 'river', 'summit', 'willow', 'orbit'];
const runs = [
  await series('all tasks', () => ({ limit: 50 })),
  await series('open, due before', (i) => ({ where: `status != "done" and due < ${months[i % 4]}`, limit: 50 })),
  await series('tag+status, sorted', (i) => ({
    where: `contains(tags, "${tags[i % tags.length]}") and !completed`,
    sort: 'due asc, priority desc',
    limit: 20,
  })),
  await series('text contains', (i) => ({ where: `text contains "${words[i % words.length]}"`, limit: 50 })),
];
const all = runs[0].total;
const pid = daemonPid(v);
const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
await client.close();
await v.cleanup();

console.log(`== ${n} notes, ${(mdBytes / 1e6).toFixed(1)} MB of markdown, ${all} tasks`);
for (const s of runs)
  console.log(`list_tasks ${s.label.padEnd(20)} median ${fmt(pct(s.times, 50))}  p95 ${fmt(pct(s.times, 95))}  (${s.total} tasks matched in the last)`);
console.log(`daemon RSS ${(kb('VmRSS') / 1e6).toFixed(0)} MB, peak ${(kb('VmHWM') / 1e6).toFixed(0)} MB`);
