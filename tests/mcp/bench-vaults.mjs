// Several-vaults benchmark through vault-mcp with the official SDK client,
// on a generated vault of N notes (default 10000) and a small second one.
//   node bench-vaults.mjs [N=10000]
// Goals: read_note with a `vault` argument costs <= 0.05 ms more (median)
// than without; load_vault of the N-note vault with a warm cache (its
// vaultd not running) <= 1 s.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { makeVault, mcpClient, sleep } from './lib.mjs';

const N = parseInt(process.argv[2] || '10000', 10);
const CALLS = 2000;
const LOADS = 5;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const fmt = (ms) => `${ms.toFixed(3)} ms`;

const v = makeVault({});
const big = path.join(v.root, 'lib', 'big');
const small = path.join(v.root, 'small');
fs.mkdirSync(path.join(small, '.obsidian'), { recursive: true });
fs.writeFileSync(path.join(small, 'S.md'), 'small\n');
const r = spawnSync(process.env.GEN_VAULT_BIN, [big, String(N), '1'], { encoding: 'utf8' });
if (r.status !== 0) throw new Error(r.stderr);
const names = fs
  .readdirSync(big, { recursive: true })
  .filter((f) => f.endsWith('.md') && !f.startsWith('.'))
  .slice(0, 200)
  .map((f) => f.replace(/\.md$/, ''));

function pidOf(folder) {
  const dir = path.join(v.runtime, 'vaultd');
  const lock = fs.existsSync(dir) && fs.readdirSync(dir).find((f) => f.startsWith(folder + '-') && f.endsWith('.sock.lock'));
  return lock ? parseInt(fs.readFileSync(path.join(dir, lock), 'utf8'), 10) : null;
}
const alive = (pid) => {
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return st.slice(st.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};
async function stop(folder) {
  const pid = pidOf(folder);
  if (!pid || !alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 400 && alive(pid); i++) await sleep(25);
}

// --- read_note with and without `vault` ---------------------------------
const c = await mcpClient(v, { args: ['--vault', big, '--vault', small] });
for (let i = 0; i < 200; i++) await c.callTool({ name: 'read_note', arguments: { name: names[i % names.length] } });
const without = [];
const withv = [];
for (let i = 0; i < CALLS; i++) {
  const name = names[i % names.length];
  // Interleaved, so both see the same machine.
  let t = now();
  let res = await c.callTool({ name: 'read_note', arguments: { name } });
  without.push(now() - t);
  if (res.isError) throw new Error(res.content[0].text);
  t = now();
  res = await c.callTool({ name: 'read_note', arguments: { name, vault: 'big' } });
  withv.push(now() - t);
  if (res.isError) throw new Error(res.content[0].text);
}
await c.close();
const single = await mcpClient(v, { args: ['--vault', big] });
const one = [];
for (let i = 0; i < CALLS; i++) {
  const t = now();
  await single.callTool({ name: 'read_note', arguments: { name: names[i % names.length] } });
  one.push(now() - t);
}
await single.close();
const extra = median(withv) - median(without);

// --- load_vault with a warm cache ---------------------------------------
const loads = [];
let count = 0;
for (let i = 0; i < LOADS; i++) {
  await stop('big');
  const m = await mcpClient(v, { args: ['--vault', small, '--allow-root', path.dirname(big)], env: { OBSIDIAN_VAULT_PATH: '' } });
  const t = now();
  const res = await m.callTool({ name: 'load_vault', arguments: { vault_path: big } });
  loads.push(now() - t);
  if (res.isError) throw new Error(res.content[0].text);
  count = res.structuredContent.note_count;
  // Loaded already: the same answer, at once.
  const t2 = now();
  await m.callTool({ name: 'load_vault', arguments: { vault_path: big } });
  if (i === LOADS - 1) loads.again = now() - t2;
  await m.close();
}
await stop('big');
await stop('small');
// The read_note part ran its vaultd: the cache is warm from the start.
const worst = Math.max(...loads);

const ok = (b) => (b ? 'ok' : 'MISSED');
console.log(`vaults benchmark: ${N} notes (load_vault counted ${count})`);
console.log(
  `read_note median: single-vault server ${fmt(median(one))}; several vaults: without vault ${fmt(median(without))}, ` +
    `with vault ${fmt(median(withv))}; the argument costs ${fmt(extra)} (goal <= 0.05 ms: ${ok(extra <= 0.05)})`,
);
console.log(
  `load_vault, vaultd not running, warm cache: ${loads.map(fmt).join(', ')}; ` +
    `worst warm ${fmt(worst)} (goal <= 1 s: ${ok(worst <= 1000)}); loaded already ${fmt(loads.again)}`,
);
await v.cleanup();
process.exit(extra <= 0.05 && worst <= 1000 ? 0 : 1);
