// Start benchmark: spawn -> first successful answer through vault-mcp
// (official SDK client), the daemon not running, on generated vaults with
// the generator's size mix (a few notes of 100 KB - 20 MB).
//   node bench-start.mjs [N...]          (default: 1000 10000 100000)
// For each size: a cold start (no cache, no history; with the page cache
// dropped when run as root, then with it warm), then three warm restarts
// (cache present, vault unchanged). Each start times a name search, a tag
// search, get_backlinks and a full-text search, all sent at once right
// after the client connects and repeated until they succeed; their first
// answers are checked against the same calls once vaultd is settled.
// Then the cache's size after the first start and after three restarts,
// and vaultd's peak RSS, against the vault's markdown bytes.
// Goals at 100k: warm <= 1.5 s to the first full-text answer (name and
// tag sooner); cold <= 12 s to the first full-text answer, name, tag and
// backlinks within 3 s; the cache never grows across restarts and is
// <= 1.2 x the markdown bytes; peak RSS <= 1.3 x markdown + 32 MB.
// Vaults are generated once under BENCH_DIR (default /tmp/vaultd-bench).
// BENCH_COLD_ONLY=1 runs the cold starts alone (with the page cache
// dropped when root) and stops each at full-text ready.
// BENCH_WARM_ONLY=N runs N warm restarts alone and keeps the cache and
// the run folder for the next invocation (a cold start first makes them
// when there are none), so that two builds can be run in turn, each with
// a BENCH_DIR of its own, and the medians compared.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, ctlConnect, daemonPid as libDaemonPid, sleep, socketPath as libSocketPath } from './lib.mjs';

const sizes = process.argv.slice(2).map((x) => parseInt(x, 10));
if (!sizes.length) sizes.push(1000, 10000, 100000);
const benchDir = process.env.BENCH_DIR || '/tmp/vaultd-bench';
const RESTARTS = 3;
// BENCH_COLD_ONLY=1: only the cold starts (to compare builds quickly).
const coldOnly = !!process.env.BENCH_COLD_ONLY;

const now = () => Number(process.hrtime.bigint()) / 1e6;
const secs = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;

function generate(dir, n) {
  if (fs.existsSync(path.join(dir, '.generated'))) {
    // Vaults generated before vaultd asked for .obsidian/.
    fs.mkdirSync(path.join(dir, '.obsidian'), { recursive: true });
    return;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  const r = spawnSync(process.env.GEN_VAULT_BIN, [dir, String(n), '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  fs.writeFileSync(path.join(dir, '.generated'), r.stdout);
}

// The notes: their bytes, a name that has backlinks, a tag.
function survey(vault) {
  let bytes = 0;
  let count = 0;
  let big = 0;
  const names = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) {
        const sz = fs.statSync(p).size;
        bytes += sz;
        count++;
        if (sz > 100 * 1024) big++;
        if (names.length < 200) names.push(e.name.slice(0, -3));
      }
    }
  };
  walk(vault);
  return { bytes, count, big, names };
}

function envFor(root, vault) {
  return {
    PATH: process.env.PATH,
    HOME: root,
    XDG_RUNTIME_DIR: path.join(root, 'run'),
    XDG_CACHE_HOME: path.join(root, 'cache'),
    OBSIDIAN_VAULT_PATH: vault,
    VAULTD_BIN: BIN.vaultd,
  };
}

// lib.mjs's helpers take a vault's runtime folder.
const daemonPid = (env) => libDaemonPid({ runtime: env.XDG_RUNTIME_DIR });
const socketPath = (env) => libSocketPath({ runtime: env.XDG_RUNTIME_DIR });

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function stop(env) {
  const pid = daemonPid(env);
  if (!pid || !alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 600 && alive(pid); i++) await sleep(50);
  if (alive(pid)) throw new Error(`vaultd ${pid} did not stop`);
}

function peakRss(pid) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
    return m ? parseInt(m[1], 10) * 1024 : 0;
  } catch {
    return 0;
  }
}

function cacheBytes(env) {
  let total = 0;
  const walk = (d) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else total += fs.statSync(p).size;
    }
  };
  walk(path.join(env.XDG_CACHE_HOME, 'vaultd'));
  return total;
}

async function status(env) {
  const c = await ctlConnect(socketPath(env));
  try {
    return await c.call('status');
  } finally {
    c.close();
  }
}

// What vaultd answers after a while: every index complete, the history
// recorded and packed (what a start does in the background).
async function settle(env) {
  for (;;) {
    const st = await status(env);
    const h = st.history;
    if (
      st.index.state === 'ready' &&
      st.search_index.state === 'ready' &&
      st.search_index.substrings_ready &&
      (h.state !== 'on' || (h.versions > 0 && h.settled))
    )
      return st;
    await sleep(200);
  }
}

async function fulltextReady(env) {
  for (;;) {
    const st = await status(env);
    if (st.index.state === 'ready' && st.search_index.state === 'ready') return st;
    await sleep(100);
  }
}

const answerOf = (r) => r.structuredContent ?? JSON.parse(r.content[0].text.split('\n\n---\n')[0]);

// Spawn vault-mcp (which starts vaultd) and time each call to its first
// success from the spawn.
async function timedStart(env, calls) {
  const t0 = now();
  const transport = new StdioClientTransport({ command: BIN.mcp, args: [], env, stderr: 'pipe' });
  let log = '';
  transport.stderr?.on('data', (d) => (log += d));
  const client = new Client({ name: 'bench-start', version: '1.0.0' });
  await client.connect(transport);
  const tConnect = now() - t0;
  const first = {};
  const answers = {};
  const notes = {};
  await Promise.all(
    Object.entries(calls).map(async ([k, call]) => {
      for (;;) {
        const r = await client.callTool(call, undefined, { timeout: 600000 });
        if (!r.isError) {
          first[k] = now() - t0;
          answers[k] = answerOf(r);
          return;
        }
        notes[k] = r.content?.[0]?.text ?? '';
        await sleep(20);
      }
    }),
  );
  return { client, tConnect, first, answers, notes, log: () => log };
}

function same(a, b) {
  const key = (x) =>
    JSON.stringify({ total: x.total, notes: x.notes, links: x.links, results: (x.results ?? x.backlinks ?? []).map((y) => y.path) });
  return key(a) === key(b);
}

const KEYS = ['name', 'tag', 'backlinks', 'fulltext'];

// ready: wait only until full-text search is ready (a start whose cache
// and history are thrown away next); otherwise until vaultd is settled.
async function run(label, env, calls, ready = false) {
  const s = await timedStart(env, calls);
  const pid = daemonPid(env);
  const st = ready ? await fulltextReady(env) : await settle(env);
  // The first answers, checked against the same calls now.
  const wrong = [];
  for (const k of KEYS) {
    const r = await s.client.callTool(calls[k]);
    if (r.isError || !same(answerOf(r), s.answers[k])) wrong.push(k);
  }
  const rss = peakRss(pid);
  await s.client.close();
  await stop(env);
  const si = st.search_index;
  console.log(
    `${label.padEnd(30)} connect ${secs(s.tConnect)}; name ${secs(s.first.name)}, tag ${secs(s.first.tag)}, ` +
      `backlinks ${secs(s.first.backlinks)}, fulltext ${secs(s.first.fulltext)}; ` +
      `${si.unchanged_at_start} unchanged, ${si.read_at_start} read; peak RSS ${mb(rss)}` +
      (wrong.length ? `; FIRST ANSWERS DIFFER: ${wrong.join(', ')}` : ''),
  );
  return { ...s.first, rss, wrong, read: si.read_at_start };
}

function dropCaches() {
  if (process.getuid?.() !== 0) return false;
  spawnSync('sync');
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

const verdict = (ok) => (ok ? 'ok' : 'MISSED');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// BENCH_WARM_ONLY: restarts only, the cache kept across invocations.
async function warmOnly(n, rounds) {
  const vault = path.join(benchDir, `start-vault-${n}`);
  generate(vault, n);
  const root = path.join(benchDir, `start-run-${n}`);
  fs.mkdirSync(path.join(root, 'run'), { recursive: true, mode: 0o700 });
  const env = envFor(root, vault);
  const sv = survey(vault);
  const calls = {
    name: { name: 'search_notes', arguments: { query: sv.names[0], mode: 'name' } },
    tag: { name: 'search_notes', arguments: { query: 'project', mode: 'tag' } },
    backlinks: { name: 'get_backlinks', arguments: { name: sv.names[0] } },
    fulltext: { name: 'search_notes', arguments: { query: 'meeting review', mode: 'fulltext' } },
  };
  console.log(`\n== ${n} notes, ${mb(sv.bytes)} of markdown in ${vault}: ${rounds} warm restarts`);
  await stop(env);
  if (!cacheBytes(env) || !fs.existsSync(path.join(vault, '.vaultd'))) await run('first start (makes the cache)', env, calls);
  const warm = [];
  for (let i = 1; i <= rounds; i++) warm.push(await run(`warm start ${i}`, env, calls));
  const m = Object.fromEntries(KEYS.map((k) => [k, median(warm.map((x) => x[k]))]));
  console.log(
    `warm (median of ${rounds}): name ${secs(m.name)}, tag ${secs(m.tag)}, backlinks ${secs(m.backlinks)}; ` +
      `fulltext ${secs(m.fulltext)} (best ${secs(Math.min(...warm.map((x) => x.fulltext)))}, ` +
      `worst ${secs(Math.max(...warm.map((x) => x.fulltext)))}); peak RSS ${mb(Math.max(...warm.map((x) => x.rss)))}` +
      (warm.some((x) => x.wrong.length) ? '; SOME FIRST ANSWERS DIFFERED FROM THE SETTLED ONES' : ''),
  );
}

const warmRounds = parseInt(process.env.BENCH_WARM_ONLY ?? '0', 10);
if (warmRounds > 0) {
  for (const n of sizes) await warmOnly(n, warmRounds);
  process.exit(0);
}

const summary = [];
for (const n of sizes) {
  const vault = path.join(benchDir, `start-vault-${n}`);
  generate(vault, n);
  const root = path.join(benchDir, `start-run-${n}`);
  fs.rmSync(root, { recursive: true, force: true });
  fs.mkdirSync(path.join(root, 'run'), { recursive: true, mode: 0o700 });
  const env = envFor(root, vault);
  const sv = survey(vault);
  console.log(`\n== ${n} notes (${sv.big} over 100 KB), ${mb(sv.bytes)} of markdown in ${vault}`);
  const name = sv.names[0];
  const calls = {
    name: { name: 'search_notes', arguments: { query: name, mode: 'name' } },
    tag: { name: 'search_notes', arguments: { query: 'project', mode: 'tag' } },
    backlinks: { name: 'get_backlinks', arguments: { name } },
    fulltext: { name: 'search_notes', arguments: { query: 'meeting review', mode: 'fulltext' } },
  };
  const fresh = () => {
    fs.rmSync(env.XDG_CACHE_HOME, { recursive: true, force: true });
    fs.rmSync(path.join(vault, '.vaultd'), { recursive: true, force: true });
  };
  await stop(env);
  const cold = [];
  fresh();
  if (dropCaches()) cold.push(await run('cold start, cold page cache', env, calls, true));
  if (!coldOnly || !cold.length) {
    fresh();
    cold.push(await run('cold start, warm page cache', env, calls));
  }
  const after1 = cacheBytes(env);
  if (coldOnly) {
    const c = cold[0];
    console.log(
      `cold: name ${secs(c.name)}, tag ${secs(c.tag)}, backlinks ${secs(c.backlinks)}; fulltext ${secs(c.fulltext)}; ` +
        `cache at full-text ready ${mb(after1)} (${(after1 / sv.bytes).toFixed(2)} x markdown)`,
    );
    if (!process.env.KEEP_BENCH_RUNS) fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(path.join(vault, '.vaultd'), { recursive: true, force: true });
    continue;
  }
  const warm = [];
  const sizesAfter = [after1];
  for (let i = 1; i <= RESTARTS; i++) {
    warm.push(await run(`warm start ${i}`, env, calls));
    sizesAfter.push(cacheBytes(env));
  }
  const c = cold[0];
  // The worst of the restarts.
  const w = Object.fromEntries(KEYS.map((k) => [k, Math.max(...warm.map((x) => x[k]))]));
  const wBest = Math.min(...warm.map((x) => x.fulltext));
  const wWorst = w.fulltext;
  const rss = Math.max(...cold.map((x) => x.rss), ...warm.map((x) => x.rss));
  const grew = sizesAfter.some((x, i) => i > 0 && x > sizesAfter[i - 1]);
  const after3 = sizesAfter[sizesAfter.length - 1];
  const rssGoal = 1.3 * sv.bytes + 32e6;
  const wrong = [...cold, ...warm].some((x) => x.wrong.length);
  const big = n >= 100000;
  console.log(
    `cold${cold.length > 1 ? ' (page cache dropped)' : ''}: name ${secs(c.name)}, tag ${secs(c.tag)}, backlinks ${secs(c.backlinks)}` +
      (big ? ` (goal <= 3 s: ${verdict(Math.max(c.name, c.tag, c.backlinks) <= 3000)})` : '') +
      `; fulltext ${secs(c.fulltext)}` +
      (big ? ` (goal <= 12 s: ${verdict(c.fulltext <= 12000)})` : ''),
  );
  console.log(
    `warm (worst of ${RESTARTS}): name ${secs(w.name)}, tag ${secs(w.tag)}, backlinks ${secs(w.backlinks)}; ` +
      `fulltext ${secs(w.fulltext)} (best ${secs(wBest)})` +
      (big ? ` (goal <= 1.5 s: ${verdict(wWorst <= 1500)})` : '') +
      `; notes read at restart: ${warm.map((x) => x.read).join(', ')} (goal 0: ${verdict(warm.every((x) => x.read === 0))})`,
  );
  console.log(
    `cache: ${mb(after1)} after the first start (${(after1 / sv.bytes).toFixed(2)} x markdown, goal <= 1.2: ` +
      `${verdict(after1 <= 1.2 * sv.bytes)}), ${mb(after3)} after ${RESTARTS} restarts (${sizesAfter.map(mb).join(' -> ')}; ` +
      `goal: never grows: ${verdict(!grew)})`,
  );
  console.log(
    `peak RSS: ${mb(rss)} = ${(rss / sv.bytes).toFixed(2)} x markdown (goal <= 1.3 x markdown + 32 MB = ${mb(rssGoal)}: ` +
      `${verdict(rss <= rssGoal)})` + (wrong ? '; SOME FIRST ANSWERS DIFFERED FROM THE SETTLED ONES' : ''),
  );
  summary.push({ n, c, w, wWorst, after1, after3, bytes: sv.bytes, rss });
  if (!process.env.KEEP_BENCH_RUNS) fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(path.join(vault, '.vaultd'), { recursive: true, force: true });
}

if (summary.length)
  console.log('\nnotes    markdown   cold name/tag/links  cold fulltext  warm name/tag/links  warm fulltext (worst)  cache 1st / 3rd restart  peak RSS');
for (const r of summary)
  console.log(
    `${String(r.n).padEnd(8)} ${mb(r.bytes).padStart(9)}  ${secs(Math.max(r.c.name, r.c.tag, r.c.backlinks)).padStart(19)}  ` +
      `${secs(r.c.fulltext).padStart(13)}  ${secs(Math.max(r.w.name, r.w.tag, r.w.backlinks)).padStart(19)}  ` +
      `${secs(r.wWorst).padStart(21)}  ${(mb(r.after1) + ' / ' + mb(r.after3)).padStart(23)}  ${mb(r.rss).padStart(8)}`,
  );
