// Retrieval quality benchmark: how often full-text search finds the note
// that answers a query. The vault is tests/bench/quality/vault (hand-written
// notes in English, Russian, German, French, Spanish, Chinese, Japanese)
// plus generated distractors and long notes (make-vault.mjs); the queries and
// their judged answers are tests/bench/quality/queries.tsv. Each query goes
// through vault-mcp (official SDK client) as search_notes fulltext, limit 10,
// as written (words side by side find the notes with any of them), then
// with its words joined by an explicit AND and by OR. Per kind of query: hit@1, hit@5, MRR@10, queries
// with no result; and the size of the answers.
//   node bench-quality.mjs [--modes plain,and,or] [--distractors N]
// VERBOSE=1 lists the queries whose answer is not first (expected, top 3
// got); QUALITY_JSON=FILE writes every query's results; BENCH_DIR=DIR builds
// the vault there (KEEP_TEST_VAULTS=1 keeps it).
// Goals: descriptive hit@5 >= 90 % and MRR@10 >= 0.8, exact hit@5 100 %,
// no query without a result, <= 1.8 KB for an answer of 10 results.
import fs from 'node:fs';
import { buildVault, DEFAULT_DISTRACTORS } from '../bench/quality/make-vault.mjs';
import { KINDS, loadQueries, rewrite } from '../bench/quality/queries.mjs';
import { ctlConnect, makeVault, mcpClient, sleep, socketPath, startDaemon, stopDaemon } from './lib.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const modes = opt('--modes', 'plain,and,or').split(',');
for (const m of modes) if (!rewrite[m]) throw new Error(`unknown mode ${m} (plain, and, or)`);
const distractors = parseInt(opt('--distractors', String(DEFAULT_DISTRACTORS)), 10);
const VERBOSE = !!process.env.VERBOSE && process.env.VERBOSE !== '0';
const MODE_NAME = {
  plain: 'queries as written (words side by side: any of them, more first)',
  and: 'words joined with AND',
  or: 'words joined with OR',
};
const GOAL = {
  descriptive: { hit5: 0.9, mrr: 0.8 },
  exact: { hit5: 1 },
  topic: {},
  empty: 0,
  bytes10: 1800,
};

const now = () => Number(process.hrtime.bigint()) / 1e6;
const pct = (x) => `${(100 * x).toFixed(1)} %`;

function summarize(rows) {
  const n = rows.length;
  const hit1 = rows.filter((r) => r.rank === 1).length;
  const hit5 = rows.filter((r) => r.rank >= 1 && r.rank <= 5).length;
  const mrr = rows.reduce((s, r) => s + (r.rank ? 1 / r.rank : 0), 0);
  const empty = rows.filter((r) => r.got.length === 0).length;
  const errors = rows.filter((r) => r.error).length;
  return { n, hit1: n ? hit1 / n : 0, hit5: n ? hit5 / n : 0, mrr: n ? mrr / n : 0, empty, errors };
}

async function runMode(client, queries, mode) {
  const rows = [];
  for (const q of queries) {
    const query = rewrite[mode](q.query);
    const t = now();
    const r = await client.callTool({ name: 'search_notes', arguments: { query, mode: 'fulltext', limit: 10 } });
    const ms = now() - t;
    const text = (r.content || []).map((c) => c.text ?? '').join('');
    const bytes = Buffer.byteLength(text);
    let got = [];
    let error = null;
    if (r.isError) error = text.slice(0, 200);
    else {
      const res = r.structuredContent ?? JSON.parse(text.split('\n\n---\n')[0]);
      got = (res.results || []).map((x) => x.path);
    }
    const i = got.findIndex((p) => q.relevant.includes(p));
    rows.push({ ...q, mode, sent: query, got, rank: i >= 0 ? i + 1 : 0, error, bytes, ms });
  }
  return rows;
}

function report(mode, rows) {
  console.log(`\n-- ${MODE_NAME[mode]}`);
  console.log('kind           queries   hit@1    hit@5                   MRR@10                 no result');
  const line = (name, s, g = {}) => {
    const h5 = pct(s.hit5) + (g.hit5 !== undefined ? ` (goal >= ${g.hit5 * 100} %)` : '');
    const mrr = s.mrr.toFixed(3) + (g.mrr !== undefined ? ` (goal >= ${g.mrr})` : '');
    const empty = `${s.empty}${s.errors ? ` (${s.errors} errors)` : ''}`;
    console.log(
      `${name.padEnd(14)} ${String(s.n).padStart(7)}   ${pct(s.hit1).padStart(7)}  ${h5.padEnd(22)}  ${mrr.padEnd(21)}  ${empty}`,
    );
  };
  for (const k of KINDS)
    line(
      k,
      summarize(rows.filter((r) => r.kind === k)),
      GOAL[k],
    );
  const all = summarize(rows);
  line('all', all);
  console.log(`queries with no result: ${all.empty} (goal: ${GOAL.empty})`);
  const full = rows.filter((r) => r.got.length === 10);
  const avg = (a) => a.reduce((s, r) => s + r.bytes, 0) / Math.max(1, a.length);
  console.log(
    `answer size: ${full.length ? `${Math.round(avg(full))} bytes on average for 10 results` : 'no answer had 10 results'} ` +
      `(goal <= ${GOAL.bytes10} bytes; ${full.length} answers had 10), ${Math.round(avg(rows))} bytes over all answers`,
  );
  const langs = [...new Set(rows.map((r) => r.lang))];
  console.log(
    'by language (all kinds; descriptive in brackets): ' +
      langs
        .map((l) => {
          const s = summarize(rows.filter((r) => r.lang === l));
          const d = summarize(rows.filter((r) => r.lang === l && r.kind === 'descriptive'));
          return `${l} ${s.n}: hit@5 ${pct(s.hit5)}, MRR ${s.mrr.toFixed(2)} [${d.n}: ${pct(d.hit5)}, ${d.mrr.toFixed(2)}]`;
        })
        .join('; '),
  );
  const ms = rows.map((r) => r.ms).sort((a, b) => a - b);
  console.log(`latency: median ${ms[Math.floor(ms.length / 2)].toFixed(1)} ms, max ${ms[ms.length - 1].toFixed(1)} ms`);
  if (VERBOSE) {
    const bad = rows.filter((r) => r.rank !== 1);
    console.log(`\nqueries whose answer is not first (${bad.length}):`);
    for (const r of bad) {
      const where = r.error ? `error: ${r.error}` : r.got.length === 0 ? 'no result' : r.rank ? `rank ${r.rank}` : 'not in top 10';
      console.log(`  ${r.id} [${r.kind}] ${r.sent}`);
      console.log(`      expected: ${r.relevant.join(' | ')}  (${where})`);
      if (r.got.length) console.log(`      got: ${r.got.slice(0, 3).join(' | ')}`);
    }
  }
  return {
    all,
    kinds: Object.fromEntries(KINDS.map((k) => [k, summarize(rows.filter((r) => r.kind === k))])),
    bytes10: full.length ? Math.round(avg(full)) : null,
  };
}

if (process.env.BENCH_DIR) {
  fs.mkdirSync(process.env.BENCH_DIR, { recursive: true });
  process.env.TMPDIR = process.env.BENCH_DIR;
}
const queries = loadQueries();
const v = makeVault({});
try {
  let t = now();
  const st = buildVault(v.vault, { distractors });
  const langs = Object.entries(st.byLang)
    .map(([l, n]) => `${l} ${n}`)
    .join(', ');
  const count = (k) => queries.filter((q) => q.kind === k).length;
  console.log(
    `== Retrieval quality: ${queries.length} queries (${KINDS.map((k) => `${count(k)} ${k}`).join(', ')}) ` +
      `on ${st.judged + st.distractors + st.long} notes, ${(st.bytes / 1e6).toFixed(1)} MB: ${st.judged} hand-written (${langs}), ` +
      `${st.distractors} distractors, ${st.long} long notes (${(st.longBytes / 1e6).toFixed(1)} MB); vault written in ${((now() - t) / 1000).toFixed(1)} s`,
  );
  console.log(`vault: ${v.vault}`);
  t = now();
  await startDaemon(v);
  const ctl = await ctlConnect(socketPath(v));
  while ((await ctl.call('status')).search_index.state !== 'ready') await sleep(100);
  ctl.close();
  console.log(`search index ready in ${((now() - t) / 1000).toFixed(1)} s; search_notes fulltext, limit 10, through vault-mcp`);
  const client = await mcpClient(v);
  // The session's first result carries the auto-context block: not counted.
  await client.callTool({ name: 'search_notes', arguments: { query: 'warm up', mode: 'fulltext', limit: 10 } });
  const summary = {};
  const all = [];
  for (const mode of modes) {
    const rows = await runMode(client, queries, mode);
    summary[mode] = report(mode, rows);
    all.push(...rows);
  }
  await client.close();
  if (modes.length > 1) {
    console.log(
      '\n-- summary (goals: descriptive hit@5 >= 90 %, MRR@10 >= 0.8; exact hit@5 100 %; 0 with no result; <= 1800 bytes for 10 results)',
    );
    console.log('mode     descr. hit@5  descr. MRR  exact hit@5  topic hit@5  topic MRR  no result  bytes/10 results');
    for (const m of modes) {
      const s = summary[m];
      console.log(
        `${m.padEnd(8)} ${pct(s.kinds.descriptive.hit5).padStart(12)}  ${s.kinds.descriptive.mrr.toFixed(3).padStart(10)}  ` +
          `${pct(s.kinds.exact.hit5).padStart(11)}  ${pct(s.kinds.topic.hit5).padStart(11)}  ${s.kinds.topic.mrr.toFixed(3).padStart(9)}  ${String(s.all.empty).padStart(9)}  ` +
          `${s.bytes10 === null ? '-' : s.bytes10}`.padStart(16),
      );
    }
  }
  if (process.env.QUALITY_JSON) {
    fs.writeFileSync(process.env.QUALITY_JSON, JSON.stringify(all, null, 1));
    console.log(`per-query results: ${process.env.QUALITY_JSON}`);
  }
} finally {
  await stopDaemon(v);
  await v.cleanup();
}
