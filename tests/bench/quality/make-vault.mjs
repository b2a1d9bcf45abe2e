// The vault of the retrieval quality benchmark: the hand-written notes of
// vault/ (the judged answers and their neighbours) plus, generated
// deterministically (same seed, same bytes):
//  - distractor notes: text from a word chain trained on the hand-written
//    notes of the same language. Common words (found in at least 3 notes of
//    that language, and 3 % of them) are kept, so they have many hits and
//    ranking matters; two of them stay side by side only if they are so in
//    as many notes (a common phrase, not one note's "Greek fire"). Every
//    other word is replaced, consistently within a
//    note, by an invented word, or by one of a few real uncommon words the
//    note borrows from unrelated notes and mentions once or twice: no
//    hand-written note contains two of the words one distractor borrows. So
//    a distractor can mention a rare word of a judged note (Berlin,
//    sourdough, налогов), never two of them: it
//    is about no judged topic, whatever the query. Titles are invented
//    words and at most one common word;
//  - long notes (100 KB - 1.5 MB: journals, logs, clippings), about one in
//    400 notes, of the same kind of text, that mention rare words of the
//    hand-written notes in passing ("someone mentioned sourdough at
//    lunch"), as real vaults do.
// Nothing here reads the queries or runs a search engine.
//
//   node make-vault.mjs DIR [DISTRACTORS]     (default 6000)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'vault');
export const DEFAULT_DISTRACTORS = 6000;

// Language of a hand-written note, by its top folder.
const LANG_DIRS = { Русский: 'ru', Deutsch: 'de', Français: 'fr', Español: 'es', 中文: 'zh', 日本語: 'ja' };
export const langOf = (rel) => LANG_DIRS[rel.split('/')[0]] ?? 'en';

// Share of the distractors in each language (CJK notes get none).
const LANG_SHARE = { en: 0.7, ru: 0.075, de: 0.075, fr: 0.075, es: 0.075 };

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hash32(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

export function listNotes(dir) {
  return fs
    .readdirSync(dir, { recursive: true })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith('.md'))
    .sort();
}

// Letters and digits of a token, lower-cased: its key for document frequency.
const LETTER = /[\p{L}\p{N}]/u;
function core(tok) {
  let i = 0,
    j = tok.length;
  while (i < j && !LETTER.test(tok[i])) i++;
  while (j > i && !LETTER.test(tok[j - 1])) j--;
  return { pre: tok.slice(0, i), word: tok.slice(i, j), post: tok.slice(j) };
}

// Words of a token as a search engine splits them ("don't": don, t).
function subwords(tok, lower = true) {
  const ws = tok.match(/[\p{L}\p{N}]+/gu) || [];
  return lower ? ws.map((w) => w.toLowerCase()) : ws;
}

// Prose of a note, as sentences of tokens: no frontmatter, code, markup.
function sentencesOf(text) {
  text = text.replace(/^---\n[\s\S]*?\n---\n/, '');
  text = text.replace(/```[\s\S]*?```/g, ' ');
  const out = [];
  for (let line of text.split('\n')) {
    if (/^\s*#/.test(line) || /^\s*\|/.test(line)) continue;
    line = line
      .replace(/\[\[([^\]|]*)(\|[^\]]*)?\]\]/g, '$1')
      .replace(/`/g, '')
      .replace(/\*\*?|__/g, '')
      .replace(/^\s*(?:[-*]|\d+\.)\s+(?:\[[ x]\]\s+)?/, '');
    const toks = line.split(/\s+/).filter(Boolean);
    let cur = [];
    for (const t of toks) {
      cur.push(t);
      if (/[.!?]["»”)]*$/.test(t) && cur.length > 2) {
        out.push(cur);
        cur = [];
      }
    }
    if (cur.length > 2) out.push(cur);
  }
  return out;
}

// Invented words that look like the language: never a word of the
// hand-written notes.
const SYL = {
  en: {
    on: ['b', 'br', 'c', 'cl', 'd', 'dr', 'f', 'fl', 'g', 'gr', 'h', 'k', 'l', 'm', 'n', 'p', 'pl', 'r', 's', 'st', 't', 'tr', 'v', 'w', 'z'],
    nu: ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou', 'oo'],
    co: ['', '', 'n', 'r', 'l', 's', 'm', 'nd', 'st', 'rk', 'th', 'x'],
  },
  de: {
    on: ['b', 'br', 'd', 'f', 'g', 'gr', 'h', 'k', 'kr', 'l', 'm', 'n', 'p', 'pf', 'r', 's', 'sch', 'st', 't', 'w', 'z'],
    nu: ['a', 'e', 'i', 'o', 'u', 'ä', 'ö', 'ü', 'ei', 'au', 'ie'],
    co: ['', 'n', 'r', 'l', 'ng', 'cht', 'rt', 'ss', 'lm', 'nk'],
  },
  fr: {
    on: ['b', 'br', 'c', 'ch', 'd', 'f', 'g', 'gr', 'j', 'l', 'm', 'n', 'p', 'pr', 'r', 's', 't', 'tr', 'v'],
    nu: ['a', 'e', 'i', 'o', 'u', 'é', 'è', 'ou', 'eau', 'ai', 'oi'],
    co: ['', '', 'n', 'r', 'l', 's', 'lle', 'ne', 'rt'],
  },
  es: {
    on: ['b', 'c', 'ch', 'd', 'f', 'g', 'j', 'l', 'll', 'm', 'n', 'ñ', 'p', 'r', 's', 't', 'v', 'z'],
    nu: ['a', 'e', 'i', 'o', 'u', 'ia', 'ue', 'io'],
    co: ['', '', 'n', 'r', 'l', 's', 'z'],
  },
  ru: {
    on: ['б', 'в', 'г', 'д', 'ж', 'з', 'к', 'л', 'м', 'н', 'п', 'р', 'с', 'т', 'ф', 'х', 'ч', 'ш', 'ст', 'пр', 'кр'],
    nu: ['а', 'е', 'и', 'о', 'у', 'ы', 'я', 'ю'],
    co: ['', '', 'н', 'р', 'л', 'с', 'в', 'к', 'м'],
  },
};

// Case and accents folded, as a search engine may fold them: an invented
// word must differ from every real word in this form too.
export const fold = (w) =>
  w
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase();

function inventWords(lang, n, rnd, taken) {
  const s = SYL[lang];
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const out = [];
  const seen = new Set();
  while (out.length < n) {
    const k = 2 + Math.floor(rnd() * 2);
    let w = '';
    for (let i = 0; i < k; i++) w += pick(s.on) + pick(s.nu) + (i === k - 1 || rnd() < 0.3 ? pick(s.co) : '');
    if (w.length < 4 || seen.has(fold(w)) || taken.has(fold(w))) continue;
    seen.add(fold(w));
    out.push(w);
  }
  return out;
}

const capital = (w) => w.charAt(0).toUpperCase() + w.slice(1);
const isCapital = (w) => w.charAt(0) !== w.charAt(0).toLowerCase();

// One language's model: a word chain over its notes, the common words,
// the rare ones (for passing mentions) and the invented ones.
function buildModel(lang, notes, allWords, docsOf, rnd) {
  const df = new Map();
  const pairDf = new Map();
  const orig = new Map();
  const sents = [];
  for (const text of notes) {
    const ss = sentencesOf(text);
    sents.push(...ss);
    const seen = new Set();
    // Words as a search engine splits them ("don't": don, t).
    for (const s of ss)
      for (const t of s)
        for (const w of subwords(t, false)) {
          seen.add(w.toLowerCase());
          if (!orig.has(w.toLowerCase())) orig.set(w.toLowerCase(), w);
        }
    for (const w of seen) if (w) df.set(w, (df.get(w) || 0) + 1);
    const pairs = new Set();
    for (const s of ss) {
      const ws = s.flatMap((t) => subwords(t));
      for (let i = 1; i < ws.length; i++) pairs.add(ws[i - 1] + ' ' + ws[i]);
    }
    for (const p of pairs) pairDf.set(p, (pairDf.get(p) || 0) + 1);
  }
  // Common: in at least 3 notes of this language, and in at least 3 % of them.
  const minDf = Math.max(3, Math.ceil(notes.length * 0.03));
  const common = new Set([...df].filter(([w, n]) => n >= minDf && !/\d/.test(w)).map(([w]) => w));
  // Common phrases likewise: two common words are written next to each
  // other only if they are so in as many notes ("Greek fire", "wet on wet"
  // and "Дорога жизни" are one note's phrases).
  const commonPairs = new Set([...pairDf].filter(([, n]) => n >= minDf).map(([p]) => p));
  // Words for titles: common ones, but not the most frequent (what, when,
  // have), which no title is made of.
  const byDf = [...common].sort((a, b) => df.get(b) - df.get(a) || (a < b ? -1 : 1));
  const titleWords = byDf.slice(Math.round(byDf.length * 0.25)).filter((w) => w.length >= 4 && /^\p{L}+$/u.test(w));
  const rare = [...df].filter(([w, n]) => n === 1 && w.length >= 5 && !/\d/.test(w)).map(([w]) => orig.get(w));
  // Uncommon real words a distractor may borrow, with the notes (of any
  // language) that contain them.
  // Words in more notes are borrowed more often (up to 3 times as often).
  const borrow = [];
  for (const [w] of df) {
    if (common.has(w) || w.length < 4 || /\d/.test(w) || !docsOf.has(w)) continue;
    const c = { w: orig.get(w), docs: docsOf.get(w) };
    for (let k = Math.min(3, c.docs.size); k > 0; k--) borrow.push(c);
  }
  const chain = new Map();
  const add = (k, v) => {
    let a = chain.get(k);
    if (!a) chain.set(k, (a = []));
    a.push(v);
  };
  for (const s of sents) {
    let a = '\u0002',
      b = '\u0002';
    for (const t of s) {
      add(a + '\u0001' + b, t);
      a = b;
      b = t;
    }
    add(a + '\u0001' + b, '\u0003');
  }
  return { lang, chain, common, commonPairs, titleWords, rare, borrow, invented: inventWords(lang, 4000, rnd, allWords), notes: notes.length, minDf };
}

// A generator of text for one note: the chain's words, the uncommon ones
// replaced by invented words chosen for this note (the same word gets the
// same replacement throughout the note, like the topic words of a real
// note).
function writer(model, rnd, noteSeed, borrowed = []) {
  const map = new Map();
  const uses = new Map();
  const replace = (w) => {
    const k = w.toLowerCase();
    // A borrowed word, mentioned once or twice, in place of an uncommon one.
    if (borrowed.length && rnd() < 0.03) {
      const b = borrowed[Math.floor(rnd() * borrowed.length)];
      if ((uses.get(b) || 0) < 2) {
        uses.set(b, (uses.get(b) || 0) + 1);
        return isCapital(w) ? capital(b) : b;
      }
    }
    let r = map.get(k);
    if (!r) {
      r = model.invented[((hash32(k) ^ noteSeed) >>> 0) % model.invented.length];
      map.set(k, r);
    }
    return isCapital(w) ? capital(r) : r;
  };
  // prev: the last word written, if a common one kept as it is.
  let prev = null;
  const keep = (t) => {
    const ws = subwords(t);
    if (!ws.length || !ws.every((x) => model.common.has(x))) return false;
    const seq = prev ? [prev, ...ws] : ws;
    for (let i = 1; i < seq.length; i++) if (!model.commonPairs.has(seq[i - 1] + ' ' + seq[i])) return false;
    return true;
  };
  const token = (t) => {
    const { pre, word, post } = core(t);
    if (!word) return t;
    if (/^[\d.,:/-]+$/.test(word)) {
      prev = null;
      return pre + word.replace(/\d/g, () => String(Math.floor(rnd() * 10))) + post;
    }
    if (keep(t)) {
      prev = subwords(t).at(-1);
      return t;
    }
    prev = null;
    return pre + replace(word) + post;
  };
  const sentence = (maxLen = 40) => {
    const out = [];
    prev = null;
    let a = '\u0002',
      b = '\u0002';
    for (;;) {
      const next = model.chain.get(a + '\u0001' + b);
      const t = next[Math.floor(rnd() * next.length)];
      if (t === '\u0003' || out.length >= maxLen) break;
      out.push(token(t));
      a = b;
      b = t;
    }
    let s = out.join(' ');
    if (!/[.!?:]["»”)]*$/.test(s)) s += '.';
    return s;
  };
  return { sentence, replace };
}

function pickWeighted(rnd, weights) {
  let x = rnd();
  for (const [k, w] of Object.entries(weights)) {
    if ((x -= w) < 0) return k;
  }
  return Object.keys(weights)[0];
}

// Where distractors live: the hand-written notes' folders and some more.
const FOLDERS = {
  en: ['Wiki/History', 'Wiki/Science', 'Wiki/Geography', 'Cooking', 'Programming', 'Personal', 'Meetings', 'Books', 'Hobbies', 'Archive/2019', 'Archive/2020', 'Archive/2021', 'Inbox', 'Projects/Alpha', 'Projects/Beacon', 'Projects/Cedar', 'Reference', 'Clippings'],
  ru: ['Русский/История', 'Русский/Наука', 'Русский/Личное', 'Русский/Работа', 'Русский/Архив'],
  de: ['Deutsch/Wissen', 'Deutsch/Persönlich', 'Deutsch/Arbeit', 'Deutsch/Archiv'],
  fr: ['Français/Histoire', 'Français/Personnel', 'Français/Travail', 'Français/Archives'],
  es: ['Español/Historia', 'Español/Personal', 'Español/Trabajo', 'Español/Archivo'],
};

export function buildVault(dest, { distractors = DEFAULT_DISTRACTORS, seed = 20240601 } = {}) {
  const rnd = mulberry32(seed);
  const files = listNotes(SOURCE);
  const texts = new Map(files.map((f) => [f, fs.readFileSync(path.join(SOURCE, f), 'utf8')]));
  const stats = { judged: files.length, byLang: {}, distractors: 0, long: 0, bytes: 0, longBytes: 0 };
  for (const f of files) {
    const p = path.join(dest, f);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, texts.get(f));
    stats.byLang[langOf(f)] = (stats.byLang[langOf(f)] || 0) + 1;
    stats.bytes += Buffer.byteLength(texts.get(f));
  }
  // Every word of the hand-written notes, so invented words never equal one.
  // and the notes each word is in.
  const allWords = new Set();
  const docsOf = new Map();
  for (const [i, f] of files.entries())
    for (const m of texts.get(f).toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
      allWords.add(fold(m[0]));
      let d = docsOf.get(m[0]);
      if (!d) docsOf.set(m[0], (d = new Set()));
      d.add(i);
    }
  const models = {};
  for (const lang of Object.keys(LANG_SHARE))
    models[lang] = buildModel(
      lang,
      files.filter((f) => langOf(f) === lang).map((f) => texts.get(f)),
      allWords,
      docsOf,
      rnd,
    );
  const tagPool = {};
  for (const f of files) {
    const m = texts.get(f).match(/^tags: \[(.*)\]$/m);
    if (m) for (const t of m[1].split(',')) (tagPool[langOf(f)] ??= []).push(t.trim());
  }
  const used = new Set(files.map((f) => f.toLowerCase()));
  const titles = { en: [], ru: [], de: [], fr: [], es: [] };
  const write = (rel, text) => {
    const p = path.join(dest, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
    stats.bytes += Buffer.byteLength(text);
  };

  for (let i = 0; i < distractors; i++) {
    const lang = pickWeighted(rnd, LANG_SHARE);
    const model = models[lang];
    const noteSeed = Math.floor(rnd() * 0xffffffff) >>> 0;
    // Up to 5 real uncommon words, no two of them in one hand-written note.
    const borrowed = [];
    const docs = new Set();
    for (let k = Math.floor(rnd() * 6), tries = 0; borrowed.length < k && tries < 50; tries++) {
      const c = model.borrow[Math.floor(rnd() * model.borrow.length)];
      if ([...c.docs].some((d) => docs.has(d))) continue;
      for (const d of c.docs) docs.add(d);
      borrowed.push(c.w);
    }
    const w = writer(model, rnd, noteSeed, borrowed);
    const pick = (a) => a[Math.floor(rnd() * a.length)];
    const daily = lang === 'en' && rnd() < 0.12;
    let title, folder;
    if (daily) {
      do {
        const d = new Date(Date.UTC(2018, 0, 1) + Math.floor(rnd() * 2400) * 86400000);
        title = d.toISOString().slice(0, 10);
        folder = `Daily/${title.slice(0, 4)}`;
      } while (used.has(`${folder}/${title}.md`.toLowerCase()));
    } else {
      // Invented words, at most one common word: a title is made of its
      // note's topic words, and a distractor's topic is invented.
      const inv = () => pick(model.invented);
      const com = () => pick(model.titleWords);
      const shape = pick([[inv], [inv, inv], [inv, inv], [com, inv], [inv, com], [inv, inv, inv]]);
      title = capital(shape.map((f) => f()).join(' '));
      folder = pick(FOLDERS[lang]);
    }
    if (!title) title = capital(pick(model.invented));
    let rel = `${folder}/${title}.md`;
    for (let k = 2; used.has(rel.toLowerCase()); k++) rel = `${folder}/${title} ${k}.md`;
    used.add(rel.toLowerCase());
    // Length: most notes short, a few long (words, roughly log-normal).
    const target = Math.min(1500, Math.max(30, Math.round(Math.exp(5.1 + 0.8 * gauss(rnd)))));
    let out = '';
    if (rnd() < 0.4) {
      const tags = new Set();
      const pool = tagPool[lang];
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        // Real tags only if made of common words (a tag is a word too).
        const t = pick(pool);
        const ok = (t.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).every((x) => model.common.has(x));
        tags.add(ok && rnd() < 0.7 ? t : pick(model.invented));
      }
      out += `---\ntags: [${[...tags].join(', ')}]\n`;
      if (rnd() < 0.3) out += `created: 20${18 + Math.floor(rnd() * 7)}-0${1 + Math.floor(rnd() * 9)}-1${Math.floor(rnd() * 10)}\n`;
      out += '---\n';
    }
    if (!daily && rnd() < 0.6) out += `# ${title}\n\n`;
    let words = 0;
    while (words < target) {
      if (rnd() < 0.3) {
        const h = w.sentence(5).replace(/[.!?:]+$/, '');
        out += `## ${capital(h)}\n\n`;
      }
      if (daily || rnd() < 0.25) {
        for (let k = 2 + Math.floor(rnd() * 5); k > 0; k--) {
          const s = w.sentence(14);
          out += (daily && rnd() < 0.5 ? `- [${rnd() < 0.5 ? 'x' : ' '}] ` : '- ') + s + '\n';
          words += s.split(' ').length;
        }
        out += '\n';
      } else {
        const para = [];
        for (let k = 2 + Math.floor(rnd() * 5); k > 0; k--) para.push(w.sentence());
        if (rnd() < 0.25) {
          // Links between distractors of one language only (a
          // hand-written note's title is made of its topic's words).
          if (titles[lang].length) para.push(`${lang === 'en' ? 'See' : '→'} [[${pick(titles[lang])}]].`);
        }
        const p = para.join(' ');
        out += p + '\n\n';
        words += p.split(' ').length;
      }
    }
    write(rel, out);
    titles[lang].push(path.basename(rel, '.md'));
    stats.distractors++;
  }

  // Long notes: about one in 400 notes, 100 KB - 1.5 MB, English with some
  // parts in the other languages, mentioning rare words of the hand-written
  // notes in passing.
  const mentions = {
    en: [
      (x) => `Someone at lunch mentioned ${x}.`,
      (x) => `Note to self: read up on ${x} some day.`,
      (x) => `- ${x}?`,
      (x) => `Unrelated, but ${x} came up again today.`,
      (x) => `Bookmark: ${x}.`,
      (x) => `(${x})`,
    ],
    ru: [(x) => `Кто-то сегодня упомянул ${x}.`, (x) => `- ${x}?`],
    de: [(x) => `Heute wieder über ${x} gesprochen.`, (x) => `- ${x}?`],
    fr: [(x) => `Quelqu'un a parlé de ${x} aujourd'hui.`, (x) => `- ${x} ?`],
    es: [(x) => `Alguien mencionó ${x} hoy.`, (x) => `- ¿${x}?`],
  };
  const longNames = [
    'Journal 2019-2023',
    'Work log',
    'Clippings archive',
    'Reading highlights',
    'Ideas backlog',
    'Meeting notes archive 2022',
    'Phone notes import',
    'Quotes and snippets',
    'Research scratchpad',
    'Evernote export',
    'Commonplace book',
    'Inbox dump 2021',
    'Старые заметки',
    'Notizen Sammlung',
    'Carnet de notes',
  ];
  const nLong = Math.max(1, Math.round((stats.judged + stats.distractors) / 400));
  for (let i = 0; i < nLong; i++) {
    const name = longNames[i % longNames.length] + (i >= longNames.length ? ` ${i}` : '');
    const size = Math.round(100000 * Math.pow(15, rnd()));
    const mainLang = name === 'Старые заметки' ? 'ru' : name === 'Notizen Sammlung' ? 'de' : name === 'Carnet de notes' ? 'fr' : 'en';
    const parts = [];
    let bytes = 0;
    let day = Date.UTC(2019, 0, 1) + Math.floor(rnd() * 400) * 86400000;
    while (bytes < size) {
      const lang = rnd() < 0.85 ? mainLang : pickWeighted(rnd, LANG_SHARE);
      const w = writer(models[lang], rnd, Math.floor(rnd() * 0xffffffff) >>> 0);
      day += Math.floor(1 + rnd() * 4) * 86400000;
      let sec = `## ${new Date(day).toISOString().slice(0, 10)}\n\n`;
      for (let k = 1 + Math.floor(rnd() * 4); k > 0; k--) {
        const para = [];
        for (let j = 2 + Math.floor(rnd() * 5); j > 0; j--) para.push(w.sentence());
        sec += para.join(' ') + '\n\n';
      }
      if (rnd() < 0.6) {
        const ml = rnd() < 0.7 ? 'en' : pickWeighted(rnd, LANG_SHARE);
        const rare = models[ml].rare;
        const x = rare[Math.floor(rnd() * rare.length)];
        const t = mentions[ml][Math.floor(rnd() * mentions[ml].length)];
        sec += t(x) + '\n\n';
      }
      parts.push(sec);
      bytes += Buffer.byteLength(sec);
    }
    const text = `# ${name}\n\n` + parts.join('');
    write(`Archive/${name}.md`, text);
    stats.long++;
    stats.longBytes += Buffer.byteLength(text);
  }
  // The common words of each language (for check-corpus.mjs), not printed.
  Object.defineProperty(stats, 'common', { value: Object.fromEntries(Object.values(models).map((m) => [m.lang, m.common])) });
  Object.defineProperty(stats, 'commonPairs', {
    value: Object.fromEntries(Object.values(models).map((m) => [m.lang, m.commonPairs])),
  });
  stats.models = Object.fromEntries(
    Object.values(models).map((m) => [m.lang, { notes: m.notes, common: m.common.size, minDf: m.minDf }]),
  );
  return stats;
}

function gauss(rnd) {
  const u = Math.max(rnd(), 1e-12),
    v = rnd();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: node make-vault.mjs DIR [DISTRACTORS]');
    process.exit(2);
  }
  const n = process.argv[3] ? parseInt(process.argv[3], 10) : DEFAULT_DISTRACTORS;
  fs.mkdirSync(dir, { recursive: true });
  console.log(JSON.stringify(buildVault(dir, { distractors: n }), null, 1));
}
