// Property query benchmark: end-to-end figures through vault-mcp with the
// official SDK client on a generated vault with typed properties.
//   node bench-query.mjs [N=10000]
// Goals: a property query (query_notes where/sort/fields) <= 5 ms median;
// a DQL TABLE ... FROM #tag WHERE ... SORT <= 10 ms median.
import { daemonMemory, fmt, pct, series, settledVault } from './bench-lib.mjs';

const n = parseInt(process.argv[2] || '10000', 10);
const CALLS = 200;
const { v, client, mdBytes } = await settledVault(n);

const months = ['2026-03-01', '2026-06-01', '2026-09-01', '2026-12-01'];
const prop = await series(client, 'query_notes', CALLS, 'property query', (i) => ({
  where: `priority >= ${1 + (i % 4)} and due < ${months[i % 4]} and done = false`,
  sort: 'due desc',
  fields: 'due, priority, rating',
  limit: 20,
}));
const tags = ['project', 'area', 'topic', 'work', 'research'];
const dql = await series(client, 'query_notes', CALLS, 'DQL TABLE', (i) => ({
  query: `TABLE due, priority AS "P" FROM #${tags[i % tags.length]} WHERE priority > ${i % 3} AND done = false SORT due DESC LIMIT 20`,
}));
const mem = daemonMemory(v);
await client.close();
await v.cleanup();

console.log(`== ${n} notes, ${(mdBytes / 1e6).toFixed(1)} MB of markdown, typed properties`);
for (const [s, goal] of [[prop, 5], [dql, 10]])
  console.log(
    `${s.label.padEnd(16)} median ${fmt(pct(s.times, 50))}  p95 ${fmt(pct(s.times, 95))}  ` +
      `(${s.total} rows matched in the last; goal median <= ${goal} ms: ${pct(s.times, 50) <= goal ? 'met' : 'MISSED'})`,
  );
console.log(
  `daemon RSS ${(mem.rss / 1e6).toFixed(0)} MB, peak ${(mem.peak / 1e6).toFixed(0)} MB ` +
    `(goal at 100k: <= 1.3 x markdown + 32 MB = ${((1.3 * mdBytes + 32e6) / 1e6).toFixed(0)} MB here)`,
);
