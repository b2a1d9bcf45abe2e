// Search benchmark: on generated vaults, the first build of the search
// index, a warm restart, the index's size, and 200 mixed full-text queries
// end-to-end through vault-mcp (official SDK client), next to grep -ril
// over the same files.
//   node bench-search.mjs [N...]      (default: 1000 10000; add 100000,
//                                       which takes minutes to build)
// Then the mixed set of the search issue: descriptive questions, common
// pairs, rare words, phrases, tag filters, folder filters and prefixes,
// 20 of each, per kind and all together, with the size of the answers.
// Goals: query median <= 10 ms at 10k, <= 50 ms at 100k; warm restart to
// ready <= 2 s at 100k; first build <= 60 s at 100k; mixed set median
// <= 2 ms at 10k and <= 8 ms at 100k, p95 <= 3x the median.
// BENCH_SEARCH_KEEP=DIR: the vault and its cache are not removed (DIR/N/root
// names the folder) and the mixed set is written to DIR/N/mixed.tsv (one
// "kind<TAB>query" a line, for bench_search).
// BENCH_SEARCH_ROOT=DIR (one size): the vault and its cache live in DIR and
// are kept; a later run with the same DIR starts warm on them (the first
// build's figures are then those of a warm start), so that two builds can
// be compared on the same large vault without building it each time.
// BENCH_SEARCH_FROM=VAULT: DIR's vault is a copy of VAULT, not generated.
// The mixed set is written to DIR/mixed.tsv.
// BENCH_SEARCH_VIA: how the queries are asked: sdk (the official SDK
// client on vault-mcp, the default), raw (JSON-RPC lines on vault-mcp's
// stdin and stdout, no SDK) or ctl (vaultd's control socket, the call
// vault-mcp makes): the differences split a call's time between the hops.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { RawMcp, ctlConnect, daemonPid, makeVault, mcpClient, socketPath, sleep, startDaemon, stopDaemon } from './lib.mjs';

const sizes = process.argv.slice(2).map((x) => parseInt(x, 10));
if (!sizes.length) sizes.push(1000, 10000);
const QUERIES = 200;
// grep runs per vault (each reads every file); BENCH_SEARCH_GREP=N: N runs.
const GREP_MAX = parseInt(process.env.BENCH_SEARCH_GREP ?? '40', 10);

const now = () => Number(process.hrtime.bigint()) / 1e6;
function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
}
const ms = (x) => `${x.toFixed(2)} ms`;

let seed = 12345;
function rnd(n) {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
}
const choose = (a) => a[rnd(a.length)];

function generate(dir, n) {
  const r = spawnSync(process.env.GEN_VAULT_BIN, [dir, String(n), '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

async function status(v) {
  const c = await ctlConnect(socketPath(v));
  try {
    return await c.call('status');
  } finally {
    c.close();
  }
}

// Start vaultd; times (from the start) to the notes index and to the
// search index being ready. With all: then to the substring index being
// complete and the first history recording done and packed (what a first
// start does in the background), so that later figures are of a settled
// vaultd.
async function startTimed(v, all = false) {
  const t0 = now();
  await startDaemon(v);
  let tIndex = null;
  let r = null;
  for (;;) {
    const st = await status(v);
    if (tIndex === null && st.index.state === 'ready') tIndex = now() - t0;
    if (!r && st.index.state === 'ready' && st.search_index.state === 'ready') {
      r = { tIndex, tReady: now() - t0, st };
      if (!all) return r;
    }
    if (r && !r.tSub && st.search_index.substrings_ready) r.tSub = now() - t0;
    if (r && r.tSub && (st.history.state !== 'on' || (st.history.versions > 0 && st.history.settled))) {
      r.tSettled = now() - t0;
      r.st = st;
      return r;
    }
    await sleep(r ? 100 : 5);
  }
}

// Queries made of words that are in the vault, in the 001 syntax.
function makeQueries(vault) {
  const files = fs
    .readdirSync(vault, { recursive: true })
    .filter((f) => f.endsWith('.md'))
    .sort();
  const sample = [];
  for (let i = 0; i < 400; i++) sample.push(choose(files));
  const freq = new Map();
  const pairs = [];
  const tags = new Set();
  for (const f of sample) {
    const text = fs.readFileSync(path.join(vault, f), 'utf8');
    for (const m of text.matchAll(/^ {2}- ([a-z]+)$/gm)) tags.add(m[1]);
    const body = text.replace(/^---[\s\S]*?\n---\n/, '').replace(/\[\[[^\]]*\]\]|#\S+|```[\s\S]*?```/g, ' ');
    const words = body.match(/[a-z]{3,}/g) || [];
    for (const w of words) freq.set(w, (freq.get(w) || 0) + 1);
    for (let k = 0; k + 1 < words.length; k += 17) pairs.push(`${words[k]} ${words[k + 1]}`);
  }
  const byFreq = [...freq.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0]);
  const common = byFreq.slice(0, 30);
  const mid = byFreq.slice(Math.floor(byFreq.length * 0.2), Math.floor(byFreq.length * 0.5));
  const rare = byFreq.slice(Math.floor(byFreq.length * 0.8));
  const any = () => choose(choose([common, mid, mid, rare]));
  const top = [...new Set(files.map((f) => f.split('/')[0]))].sort();
  const titleWords = ['garden', 'meeting', 'project', 'review', 'design', 'river', 'summit', 'kernel'];
  const q = [];
  const add = (query, grep) => q.push({ query, grep });
  for (let i = 0; i < 20; i++) add(choose(common), null);
  for (let i = 0; i < 20; i++) add(choose(mid), null);
  for (let i = 0; i < 20; i++) add(choose(rare), null);
  for (let i = 0; i < 30; i++) {
    const a = any(), b = any();
    add(`${a} ${b}`, a);
  }
  for (let i = 0; i < 20; i++) {
    const p = choose(pairs);
    add(`"${p}"`, p);
  }
  for (let i = 0; i < 20; i++) {
    const a = choose(mid), b = choose(rare);
    add(`${a} OR ${b}`, a);
  }
  for (let i = 0; i < 20; i++) {
    const w = choose(mid);
    add(`${w} tag:${choose([...tags])}`, w);
  }
  for (let i = 0; i < 15; i++) {
    const w = choose(mid);
    add(`folder:"${choose(top)}" ${w}`, w);
  }
  for (let i = 0; i < 15; i++) {
    const w = choose(titleWords);
    add(`title:${w} -${choose(rare)}`, w);
  }
  for (let i = 0; i < 10; i++) {
    const w = choose(mid);
    add(`${w.slice(0, 4)}*`, w.slice(0, 4));
  }
  for (let i = 0; i < 10; i++) {
    const w = choose(['проект', 'заметка', 'встреча', '研究', '東京', '会議', '計画']);
    add(w, w);
  }
  for (const x of q) x.grep = x.grep ?? x.query;
  const mixed = [];
  const kind = (k, query) => mixed.push({ kind: k, query });
  const openers = ['how does the', 'what is the', 'why did we', 'notes about the', 'where is the'];
  for (let i = 0; i < 20; i++)
    kind('descriptive', `${choose(openers)} ${choose(mid)} ${choose(common)} of ${choose(mid)} ${choose(rare)}`);
  for (let i = 0; i < 20; i++) kind('common pair', `${choose(common)} ${choose(common)}`);
  for (let i = 0; i < 20; i++) kind('rare word', choose(rare));
  for (let i = 0; i < 20; i++) kind('phrase', `"${choose(pairs)}"`);
  for (let i = 0; i < 20; i++) kind('tag filter', `${choose(mid)} tag:${choose([...tags])}`);
  for (let i = 0; i < 20; i++) kind('folder filter', `folder:"${choose(top)}" ${choose(mid)}`);
  for (let i = 0; i < 20; i++) kind('prefix', `${choose(mid).slice(0, 4)}*`);
  return { q: q.slice(0, QUERIES), mixed };
}

// search_notes in mode fulltext, asked the way BENCH_SEARCH_VIA says;
// each answer as a tool result (content, structuredContent, isError).
async function searcher(v) {
  const via = process.env.BENCH_SEARCH_VIA ?? 'sdk';
  const args = (query) => ({ name: 'search_notes', arguments: { query, mode: 'fulltext' } });
  if (via === 'sdk') {
    const c = await mcpClient(v);
    return { ask: (query) => c.callTool(args(query)), close: () => c.close() };
  }
  if (via === 'raw') {
    const r = new RawMcp(v);
    await r.initialize();
    let id = 0;
    const ask = async (query) => {
      const m = await r.request(++id, 'tools/call', args(query));
      if (m.error) throw new Error(`${query}: ${m.error.message}`);
      return m.result;
    };
    return { ask, close: () => r.close() };
  }
  if (via !== 'ctl') throw new Error(`BENCH_SEARCH_VIA: sdk, raw or ctl, not ${via}`);
  const c = await ctlConnect(socketPath(v));
  const ask = async (query) => {
    const d = await c.call('tools/call', { ...args(query), source: 'mcp', lean: true });
    const content = [{ type: 'text', text: d.text }];
    return { content, isError: d.isError, structuredContent: d.isError ? undefined : JSON.parse(d.text) };
  };
  return { ask, close: async () => c.close() };
}

// The mixed set, shuffled (the kinds interleave as they would in use);
// per kind and overall: median, p95; bytes of the answers with 10 results.
async function runMixed(client, mixed) {
  const order = mixed.map((x, i) => [rnd(1 << 30), i]).sort((a, b) => a[0] - b[0]);
  for (let i = 0; i < 5; i++)
    await client.ask(mixed[i].query);
  const by = new Map();
  const all = [];
  const bytes = [];
  for (const [, i] of order) {
    const { kind: k, query } = mixed[i];
    const t = now();
    const r = await client.ask(query);
    const dt = now() - t;
    if (r.isError) throw new Error(`${query}: ${r.content[0].text}`);
    if (r.structuredContent?.results?.length === 10)
      bytes.push(Buffer.byteLength(r.content.map((c) => c.text ?? '').join('')));
    all.push(dt);
    if (!by.has(k)) by.set(k, []);
    by.get(k).push(dt);
  }
  return { by, all, bytes };
}

async function runQueries(client, queries) {
  // Warm up: the first queries open connections and fill caches.
  for (let i = 0; i < 5; i++)
    await client.ask(queries[i].query);
  const times = [];
  const slow = [];
  let hits = 0;
  for (const { query } of queries) {
    const t = now();
    const r = await client.ask(query);
    times.push(now() - t);
    slow.push([now() - t, query]);
    if (r.isError) throw new Error(`${query}: ${r.content[0].text}`);
    if (r.structuredContent?.total > 0) hits++;
  }
  slow.sort((a, b) => b[0] - a[0]);
  return { times, hits, slow: slow.slice(0, 5) };
}

// VmRSS and VmHWM (kB) of process pid, or null.
function vmKB(pid) {
  try {
    const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => parseInt(st.match(new RegExp(`^${k}:\\s+(\\d+)`, 'm'))[1], 10);
    return { VmRSS: kb('VmRSS'), VmHWM: kb('VmHWM') };
  } catch {
    return null;
  }
}

function runGrep(vault, queries) {
  const times = [];
  for (const { grep } of queries.slice(0, GREP_MAX)) {
    const t = now();
    const r = spawnSync('grep', ['-rilF', '--include=*.md', '--', grep, vault], { maxBuffer: 1 << 30 });
    times.push(now() - t);
    if (r.status > 1) throw new Error(`grep ${grep}: ${r.stderr}`);
  }
  return times;
}

// The vault (with its search index) kept and the mixed set written, for
// bench_search.
const kept = [];
function keep(v, n, mixed) {
  const dir = path.join(process.env.BENCH_SEARCH_KEEP, String(n));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'mixed.tsv'), mixed.map((x) => `${x.kind}\t${x.query}\n`).join(''));
  fs.writeFileSync(path.join(dir, 'root'), v.root);
  kept.push(v.root);
}

// The vault of one size: new, or the one kept in BENCH_SEARCH_ROOT.
function vaultFor(n) {
  const root = process.env.BENCH_SEARCH_ROOT;
  if (!root) return { v: makeVault({}), desc: null };
  const v = makeVault({});
  fs.rmSync(v.root, { recursive: true, force: true });
  const abs = path.resolve(root);
  const reuse = fs.existsSync(path.join(abs, 'vault'));
  Object.assign(v, { root: abs, vault: path.join(abs, 'vault'), runtime: path.join(abs, 'run') });
  Object.assign(v.env, { HOME: abs, XDG_RUNTIME_DIR: v.runtime, XDG_CACHE_HOME: path.join(abs, 'cache'), OBSIDIAN_VAULT_PATH: v.vault });
  kept.push(abs);
  if (reuse) return { v, desc: `${v.vault} (kept, warm start)` };
  fs.mkdirSync(v.runtime, { recursive: true, mode: 0o700 });
  const from = process.env.BENCH_SEARCH_FROM;
  if (!from) return { v, desc: null };
  const r = spawnSync('cp', ['-a', from, v.vault]);
  if (r.status !== 0) throw new Error(`cp ${from}: ${r.stderr}`);
  return { v, desc: `a copy of ${from}` };
}

const rows = [];
for (const n of sizes) {
  const { v, desc } = vaultFor(n);
  try {
    console.log(`\n== ${n} notes: ${desc ?? generate(v.vault, n)}`);
    const first = await startTimed(v, true);
    first.tSub ??= first.tReady;
    const bytes = first.st.search_index.bytes;
    console.log(
      `first start: notes index ready in ${ms(first.tIndex)}, full-text search ready in ${(first.tReady / 1000).toFixed(1)} s, ` +
        `substring index complete in ${(first.tSub / 1000).toFixed(1)} s, ${(bytes / 1e6).toFixed(1)} MB on disk ` +
        `(history recorded and packed at ${(first.tSettled / 1000).toFixed(1)} s)`,
    );
    await stopDaemon(v);
    const warm = await startTimed(v);
    const si = warm.st.search_index;
    console.log(
      `warm restart: ready (notes and search) in ${ms(warm.tReady)}; ` +
        `${si.unchanged_at_start} notes reused, ${si.read_at_start} read`,
    );
    const { q: queries, mixed } = makeQueries(v.vault);
    if (process.env.BENCH_SEARCH_KEEP) keep(v, n, mixed);
    if (process.env.BENCH_SEARCH_ROOT) fs.writeFileSync(path.join(v.root, 'mixed.tsv'), mixed.map((x) => `${x.kind}\t${x.query}\n`).join(''));
    const client = await searcher(v);
    const { times, hits, slow } = await runQueries(client, queries);
    const mx = await runMixed(client, mixed);
    const rss = vmKB(daemonPid(v));
    await client.close();
    const g = runGrep(v.vault, queries);
    console.log(
      `fulltext via ${{ sdk: 'MCP', raw: 'MCP without the SDK', ctl: 'the control socket' }[process.env.BENCH_SEARCH_VIA ?? 'sdk']} ` +
        `(${times.length} mixed queries, ${hits} with results): ` +
        `median ${ms(pct(times, 50))}, p95 ${ms(pct(times, 95))}, max ${ms(Math.max(...times))}`,
    );
    console.log(`slowest: ${slow.map(([t, q]) => `${q} (${ms(t)})`).join('; ')}`);
    if (g.length) console.log(`grep -ril (${g.length} of the same queries): median ${ms(pct(g, 50))}, p95 ${ms(pct(g, 95))}`);
    console.log(
      `mixed set (${mx.all.length} queries): median ${ms(pct(mx.all, 50))}, p95 ${ms(pct(mx.all, 95))} ` +
        `(p95/median ${(pct(mx.all, 95) / pct(mx.all, 50)).toFixed(1)}); ` +
        [...mx.by].map(([k, t]) => `${k} ${ms(pct(t, 50))}/${ms(pct(t, 95))}`).join(', '),
    );
    const avgBytes = mx.bytes.length ? Math.round(mx.bytes.reduce((a, b) => a + b, 0) / mx.bytes.length) : null;
    console.log(`mixed set answers with 10 results: ${mx.bytes.length}, ${avgBytes ?? '-'} bytes on average`);
    if (rss) console.log(`vaultd after the queries: RSS ${(rss.VmRSS / 1024).toFixed(0)} MB, peak ${(rss.VmHWM / 1024).toFixed(0)} MB`);
    rows.push({
      n,
      build: first.tReady / 1000,
      sub: first.tSub / 1000,
      restart: warm.tReady,
      mb: bytes / 1e6,
      med: pct(times, 50),
      p95: pct(times, 95),
      grep: g.length ? pct(g, 50) : NaN,
      mmed: pct(mx.all, 50),
      mp95: pct(mx.all, 95),
    });
  } finally {
    await stopDaemon(v);
    if (!kept.includes(v.root)) await v.cleanup();
  }
}
console.log(
  '\nnotes    first build (full-text / substrings)  warm restart  index size  query median  query p95  grep -ril median  mixed median  mixed p95',
);
for (const r of rows)
  console.log(
    `${String(r.n).padEnd(8)} ${(r.build.toFixed(1) + ' s / ' + r.sub.toFixed(1) + ' s').padStart(35)}  ${ms(r.restart).padStart(12)}  ` +
      `${(r.mb.toFixed(1) + ' MB').padStart(10)}  ${ms(r.med).padStart(12)}  ${ms(r.p95).padStart(9)}  ${ms(r.grep).padStart(16)}  ` +
      `${ms(r.mmed).padStart(12)}  ${ms(r.mp95).padStart(9)}`,
  );
