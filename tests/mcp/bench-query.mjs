// Property query benchmark: end-to-end figures through vault-mcp with the
// official SDK client on a generated vault with typed properties.
//   node bench-query.mjs [N=10000]
// Goals: a property query (query_notes where/sort/fields) <= 5 ms median;
// a DQL TABLE ... FROM #tag WHERE ... SORT <= 10 ms median.
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
  // Steady state: the full-text index and history built (a cold start's
  // background work would otherwise share the CPU with the queries).
  const st = await c.call('status');
  const settled = st.history.state !== 'on' || (st.history.versions > 0 && st.history.settled);
  if (st.index.state === 'ready' && st.search_index.state === 'ready' && settled) break;
  await sleep(20);
}
c.close();
await client.callTool({ name: 'get_help', arguments: {} }); // the context block

async function series(label, argsFor) {
  const times = [];
  let rows = 0;
  for (let i = 0; i < CALLS; i++) {
    const t = now();
    const r = await client.callTool({ name: 'query_notes', arguments: argsFor(i) });
    times.push(now() - t);
    if (r.isError) throw new Error(`${label}: ${r.content[0].text}`);
    rows = r.structuredContent.total;
  }
  return { label, times, rows };
}

const months = ['2026-03-01', '2026-06-01', '2026-09-01', '2026-12-01'];
const prop = await series('property query', (i) => ({
  where: `priority >= ${1 + (i % 4)} and due < ${months[i % 4]} and done = false`,
  sort: 'due desc',
  fields: 'due, priority, rating',
  limit: 20,
}));
const tags = ['project', 'area', 'topic', 'work', 'research'];
const dql = await series('DQL TABLE', (i) => ({
  query: `TABLE due, priority AS "P" FROM #${tags[i % tags.length]} WHERE priority > ${i % 3} AND done = false SORT due DESC LIMIT 20`,
}));
const pid = daemonPid(v);
const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
await client.close();
await v.cleanup();

console.log(`== ${n} notes, ${(mdBytes / 1e6).toFixed(1)} MB of markdown, typed properties`);
for (const [s, goal] of [[prop, 5], [dql, 10]])
  console.log(
    `${s.label.padEnd(16)} median ${fmt(pct(s.times, 50))}  p95 ${fmt(pct(s.times, 95))}  ` +
      `(${s.rows} rows matched in the last; goal median <= ${goal} ms: ${pct(s.times, 50) <= goal ? 'met' : 'MISSED'})`,
  );
console.log(
  `daemon RSS ${(kb('VmRSS') / 1e6).toFixed(0)} MB, peak ${(kb('VmHWM') / 1e6).toFixed(0)} MB ` +
    `(goal at 100k: <= 1.3 x markdown + 32 MB = ${((1.3 * mdBytes + 32e6) / 1e6).toFixed(0)} MB here)`,
);
