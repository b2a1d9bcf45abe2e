// MCP benchmark (daemon issue): end-to-end figures through vault-mcp with
// the official SDK client on a generated 10k-note vault, and initialize
// while a 100k-note vault is still being indexed.
//   node bench-mcp.mjs [N_SMALL=10000] [N_BIG=100000]
// Goals: initialize <= 50 ms always; read_note <= 1 ms median;
// name/tag search <= 5 ms median.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ctlConnect, makeVault, mcpClient, socketPath, sleep, stopDaemon } from './lib.mjs';

const nSmall = parseInt(process.argv[2] || '10000', 10);
const nBig = parseInt(process.argv[3] || '100000', 10);
const CALLS = 200;

function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
}
const fmt = (ms) => `${ms.toFixed(2)} ms`;
const now = () => Number(process.hrtime.bigint()) / 1e6;

function generate(dir, n) {
  const r = spawnSync(process.env.GEN_VAULT_BIN, [dir, String(n), '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
}

async function waitReady(v) {
  const c = await ctlConnect(socketPath(v));
  for (;;) {
    const st = await c.call('status');
    if (st.index.state === 'ready') break;
    await sleep(20);
  }
  c.close();
}

async function timeConnect(v) {
  const t = now();
  const client = await mcpClient(v);
  return { client, ms: now() - t };
}

async function series(client, name, argsFor) {
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const args = argsFor(i);
    const t = now();
    const r = await client.callTool({ name, arguments: args });
    times.push(now() - t);
    if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
  }
  return times;
}

// --- 10k vault --------------------------------------------------------------
const small = makeVault({});
generate(small.vault, nSmall);
const notes = fs
  .readdirSync(small.vault, { recursive: true })
  .filter((p) => p.endsWith('.md'))
  .map((p) => p.replace(/\.md$/, ''));
// First connect starts the daemon; wait for its index, then measure.
let { client } = await timeConnect(small);
await waitReady(small);
await client.close();
const inits = [];
for (let i = 0; i < 20; i++) {
  const s = await timeConnect(small);
  inits.push(s.ms);
  if (i < 19) await s.client.close();
  else client = s.client;
}
await client.listTools();
await client.callTool({ name: 'get_help', arguments: {} }); // the auto-context
const read = await series(client, 'read_note', (i) => ({ name: notes[(i * 7919) % notes.length] }));
const words = ['alpha', 'river', 'summit', 'proj', 'graph', 'note 12', 'meadow', 'zephyr'];
const partial = await series(client, 'search_notes', (i) => ({ query: words[i % words.length], mode: 'name_partial', limit: 20 }));
const tags = ['project', 'area', 'topic,idea', 'research', 'work/', 'status'];
const tag = await series(client, 'search_notes', (i) => ({ query: tags[i % tags.length].replace('/', ''), mode: 'tag', limit: 20 }));
// Conditional writes: the same calls with and without expected_version
// (read_note gives the version; the check hashes the note's text).
const verOf = (r) => /^\[Version ([0-9a-f]{12})/.exec(r.content[1]?.text ?? '')[1];
const readV = await series(client, 'read_note', (i) => ({ name: notes[(i * 7919) % notes.length] }));
const upd = await series(client, 'update_note', (i) => ({ name: notes[(i * 104729) % notes.length], content: `plain ${i}\n` }));
const updV = [];
for (let i = 0; i < CALLS; i++) {
  const name = notes[(i * 104729) % notes.length];
  const ver = verOf(await client.callTool({ name: 'read_note', arguments: { name } }));
  const t = now();
  const r = await client.callTool({ name: 'update_note', arguments: { name, content: `checked ${i}\n`, expected_version: ver } });
  updV.push(now() - t);
  if (r.isError) throw new Error(`update_note: ${r.content[0].text}`);
}
await client.close();
await stopDaemon(small);

console.log(`vault: ${nSmall} generated notes, ${CALLS} calls each, through vault-mcp (SDK client)`);
console.log(`initialize (spawn vault-mcp + connect + handshake): median ${fmt(pct(inits, 50))}, p95 ${fmt(pct(inits, 95))}  (goal <= 50 ms)`);
console.log(`read_note:                median ${fmt(pct(read, 50))}, p95 ${fmt(pct(read, 95))}  (goal <= 1 ms median)`);
console.log(`search_notes name_partial: median ${fmt(pct(partial, 50))}, p95 ${fmt(pct(partial, 95))}  (goal <= 5 ms median)`);
console.log(`search_notes tag:          median ${fmt(pct(tag, 50))}, p95 ${fmt(pct(tag, 95))}  (goal <= 5 ms median)`);
console.log(`read_note (gives the version): median ${fmt(pct(readV, 50))}`);
console.log(`update_note:                   median ${fmt(pct(upd, 50))}, p95 ${fmt(pct(upd, 95))}`);
console.log(`update_note + expected_version: median ${fmt(pct(updV, 50))}, p95 ${fmt(pct(updV, 95))}  (the check: ${fmt(pct(updV, 50) - pct(upd, 50))}; goal <= 0.1 ms)`);

// --- initialize while a big vault is still indexing -------------------------------
if (nBig > 0) {
  const big = makeVault({});
  generate(big.vault, nBig);
  // Cold start: vault-mcp starts vaultd, which answers at once and indexes
  // in the background.
  const cold = await timeConnect(big);
  const c = await ctlConnect(socketPath(big));
  const st = await c.call('status');
  c.close();
  const during = [];
  for (let i = 0; i < 10; i++) {
    const s = await timeConnect(big);
    during.push(s.ms);
    await s.client.close();
  }
  const c2 = await ctlConnect(socketPath(big));
  const st2 = await c2.call('status');
  c2.close();
  await cold.client.close();
  console.log(`vault: ${nBig} notes, still indexing (${st.index.percent}% at the first status, ${st2.index.percent}% after the runs)`);
  console.log(`initialize, vaultd started on demand: ${fmt(cold.ms)}  (goal <= 50 ms)`);
  console.log(`initialize while indexing: median ${fmt(pct(during, 50))}, max ${fmt(Math.max(...during))}  (goal <= 50 ms)`);
  await big.cleanup();
}
await small.cleanup();
