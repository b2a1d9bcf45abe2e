// Sanity check of the benchmark's data, independent of any search engine:
// every relevant path exists, ids are unique, and how many generated notes
// (distractors and long notes) contain all of a query's words (as whole
// words, case-insensitively, without stemming), next to whether the judged
// notes do. A generated note never answers a query; this shows how much
// competition each query meets from them, and which queries share no word
// with their answer in its exact form (those need stemming or OR). Also
// checks the distractors' promise: none contains two of the uncommon words
// of any hand-written note.
//   node check-corpus.mjs [DISTRACTORS]      (VERBOSE=1 lists every query)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildVault, listNotes, SOURCE } from './make-vault.mjs';
import { loadQueries } from './queries.mjs';

const n = process.argv[2] ? parseInt(process.argv[2], 10) : undefined;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quality-check-'));
try {
  const stats = buildVault(dir, n === undefined ? {} : { distractors: n });
  const judged = new Set(listNotes(SOURCE));
  const queries = loadQueries();
  // Words of a note, without frontmatter keys (tags:, created:).
  const words = (s) =>
    new Set((s.normalize('NFC').replace(/^[a-z]+:/gm, ' ').toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).filter(Boolean));
  const notes = listNotes(dir).map((f) => {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    return { f, w: words(text), gen: !judged.has(f), long: Buffer.byteLength(text) >= 100000 };
  });
  // The distractors' promise.
  const files = [...judged];
  const langOf = (await import('./make-vault.mjs')).langOf;
  const uncommon = new Map(); // word -> hand-written notes that have it, uncommon in their language
  for (const f of files) {
    const text = fs.readFileSync(path.join(SOURCE, f), 'utf8');
    for (const w of words(text)) {
      if (/\d/.test(w) || w.length < 2 || stats.common[langOf(f)]?.has(w)) continue;
      if (!uncommon.has(w)) uncommon.set(w, new Set());
      uncommon.get(w).add(f);
    }
  }
  let broken = 0;
  let borrowing = 0;
  for (const x of notes) {
    if (!x.gen || x.long) continue;
    const per = new Map();
    let any = false;
    for (const w of x.w) {
      const fs_ = uncommon.get(w);
      if (!fs_) continue;
      any = true;
      for (const f of fs_) per.set(f, (per.get(f) || []).concat(w));
    }
    if (any) borrowing++;
    for (const [f, ws] of per)
      if (ws.length > 1 && ws.every((w) => !stats.common[langOf(x.f)]?.has(w))) {
        if (broken++ < 10) console.log(`  distractor ${x.f} has ${ws.join(', ')} of ${f}`);
      }
  }
  console.log(`distractors with a real uncommon word: ${borrowing}; with two of one hand-written note: ${broken} (must be 0)`);
  // ...and no phrase of two common words that is not common.
  let phrases = 0;
  for (const x of notes) {
    if (!x.gen || x.long) continue;
    const lang = langOf(x.f);
    const text = fs
      .readFileSync(path.join(dir, x.f), 'utf8')
      .replace(/^---\n[\s\S]*?\n---\n/, '')
      .toLowerCase();
    for (const part of text.split(/[.!?:;\n]|\[\[|\]\]/)) {
      const ws = part.match(/[\p{L}\p{N}]+/gu) || [];
      for (let i = 1; i < ws.length; i++) {
        const [a, b] = [ws[i - 1], ws[i]];
        if (!stats.common[lang].has(a) || !stats.common[lang].has(b) || stats.commonPairs[lang].has(a + ' ' + b)) continue;
        if (phrases++ < 10) console.log(`  distractor ${x.f} has "${a} ${b}"`);
      }
    }
  }
  console.log(`uncommon phrases of common words in distractors: ${phrases} (must be 0)`);
  let noExact = 0;
  let rows = [];
  for (const q of queries) {
    const qw = [...words(q.query.replace(/"/g, ' '))];
    const all = (nw) => qw.every((w) => nw.has(w));
    const gen = notes.filter((x) => x.gen && all(x.w)).length;
    const rel = q.relevant.some((r) => all(notes.find((x) => x.f === r).w));
    const anyRare = notes.filter((x) => x.gen && qw.some((w) => x.w.has(w))).length;
    if (!rel) noExact++;
    rows.push({ q, gen, rel, anyRare });
  }
  console.log(
    `${stats.judged} hand-written notes, ${stats.distractors} distractors, ${stats.long} long notes; ` +
      `${queries.length} queries, ${noExact} whose answer lacks some query word in its exact form`,
  );
  const withGen = rows.filter((r) => r.gen > 0);
  console.log(`queries whose words are all in some generated note: ${withGen.length}`);
  for (const r of process.env.VERBOSE ? rows : withGen)
    console.log(
      `  ${r.q.id.padEnd(7)} all words in ${String(r.gen).padStart(4)} generated notes, some in ${String(r.anyRare).padStart(4)}; ` +
        `answer has all: ${r.rel ? 'yes' : 'no '}  ${r.q.query}`,
    );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
