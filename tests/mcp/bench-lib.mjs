// What the tool benchmarks share: a generated vault served and settled,
// a series of timed calls, percentiles and the daemon's memory.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { ctlConnect, daemonPid, makeVault, mcpClient, socketPath, sleep } from './lib.mjs';

const now = () => Number(process.hrtime.bigint()) / 1e6;
export const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];
export const fmt = (ms) => `${ms.toFixed(2)} ms`;

// A generated vault of n notes served through vault-mcp, timed once it
// has settled: index, full-text index and history ready (a cold start's
// background work would otherwise share the CPU with the calls).
export async function settledVault(n) {
  const v = makeVault({});
  const g = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, String(n), '1'], { encoding: 'utf8' });
  if (g.status !== 0) throw new Error(g.stderr);
  const mdBytes = Number(/(\d+) bytes of markdown/.exec(g.stdout)?.[1] ?? 0);
  const client = await mcpClient(v);
  const c = await ctlConnect(socketPath(v));
  for (;;) {
    const st = await c.call('status');
    const settled = st.history.state !== 'on' || (st.history.versions > 0 && st.history.settled);
    if (st.index.state === 'ready' && st.search_index.state === 'ready' && settled) break;
    await sleep(20);
  }
  c.close();
  await client.callTool({ name: 'get_help', arguments: {} }); // the context block
  return { v, client, mdBytes };
}

// calls timed calls of tool with argsFor(i); total: the last result's
// structuredContent.total.
export async function series(client, tool, calls, label, argsFor) {
  const times = [];
  let total = 0;
  for (let i = 0; i < calls; i++) {
    const t = now();
    const r = await client.callTool({ name: tool, arguments: argsFor(i) });
    times.push(now() - t);
    if (r.isError) throw new Error(`${label}: ${r.content[0].text}`);
    total = r.structuredContent.total;
  }
  return { label, times, total };
}

// The daemon's resident memory now and at its peak, in bytes.
export function daemonMemory(v) {
  const status = fs.readFileSync(`/proc/${daemonPid(v)}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}
