// The judged queries (queries.tsv) and the rewritten forms the benchmark
// also runs: the query's words joined by an explicit AND or OR.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE } from './make-vault.mjs';

export const QUERIES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'queries.tsv');
export const KINDS = ['descriptive', 'exact', 'topic'];

export function loadQueries(file = QUERIES) {
  const out = [];
  const ids = new Set();
  let header = true;
  for (const [i, line] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
    if (!line.trim() || line.startsWith('#')) continue;
    const cols = line.split('\t');
    if (header) {
      header = false;
      if (cols[0] === 'id') continue;
    }
    const [id, kind, lang, query, relevant] = cols;
    const where = `${path.basename(file)}:${i + 1}`;
    if (cols.length !== 5) throw new Error(`${where}: 5 tab-separated columns expected, got ${cols.length}`);
    if (!KINDS.includes(kind)) throw new Error(`${where}: unknown kind ${kind}`);
    if (ids.has(id)) throw new Error(`${where}: duplicate id ${id}`);
    ids.add(id);
    const rel = relevant.split('|').map((s) => s.trim());
    for (const r of rel) if (!fs.existsSync(path.join(SOURCE, r))) throw new Error(`${where}: no note ${r}`);
    out.push({ id, kind, lang, query, relevant: rel });
  }
  return out;
}

// The query's terms: quoted phrases whole, other words without the
// punctuation around them.
export function terms(query) {
  const out = [];
  for (const m of query.matchAll(/"[^"]*"|\S+/g)) {
    let t = m[0];
    if (!t.startsWith('"')) t = t.replace(/^[¿¡(«"']+|[?!.,;:)»"']+$/gu, '');
    if (t) out.push(t);
  }
  return out;
}

export const rewrite = {
  plain: (q) => q,
  and: (q) => terms(q).join(' AND '),
  or: (q) => terms(q).join(' OR '),
};
