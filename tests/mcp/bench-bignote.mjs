// Big-note benchmark: the generated vault plus one 5 MB and one 20 MB note
// made of lines that repeat a common word. Through vault-mcp (official SDK
// client), end to end: full-text search for that word and for a 2-word
// query (goal: median <= 50 ms), content search, and replace_text with
// replace_all on both big notes (goal: linear in the note's size).
//   node bench-bignote.mjs [N]      (default: 10000)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ctlConnect, makeVault, mcpClient, sleep, socketPath, startDaemon, stopDaemon } from './lib.mjs';

const n = parseInt(process.argv[2] || '10000', 10);
const RUNS = 21;
const WORD = 'garden';
const LINE = 'the garden grows tomatoes every summer in the garden\n';

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const ms = (x) => `${x.toFixed(1)} ms`;

function bigNote(file, bytes) {
  fs.writeFileSync(file, LINE.repeat(Math.ceil(bytes / LINE.length)));
}

async function timed(client, name, args, runs = RUNS) {
  const times = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const t = now();
    last = await client.callTool({ name, arguments: args });
    times.push(now() - t);
    if (last.isError) throw new Error(`${name}: ${last.content[0].text}`);
  }
  return { median: median(times), max: Math.max(...times), last };
}

const v = makeVault({});
try {
  const r = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, String(n), '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  bigNote(path.join(v.vault, 'Big 5MB.md'), 5 << 20);
  bigNote(path.join(v.vault, 'Big 20MB.md'), 20 << 20);
  console.log(`== ${n} notes (${r.stdout.trim()}) plus a 5 MB and a 20 MB note of "${LINE.trim()}"`);
  await startDaemon(v);
  // Wait for the search index (tools answer meanwhile from a scan).
  const ctl = await ctlConnect(socketPath(v));
  while ((await ctl.call('status')).search_index.state !== 'ready') await sleep(200);
  ctl.close();
  const client = await mcpClient(v);
  for (const query of [WORD, `${WORD} tomatoes`]) {
    const f = await timed(client, 'search_notes', { query, mode: 'fulltext' });
    const top = f.last.structuredContent?.results?.[0];
    console.log(
      `fulltext "${query}": median ${ms(f.median)}, max ${ms(f.max)} (goal: median <= 50 ms); ` +
        `${f.last.structuredContent?.total} notes, first ${top?.path}: ${JSON.stringify(top?.snippet ?? '').slice(0, 80)}`,
    );
  }
  const c = await timed(client, 'search_notes', { query: 'tomatoes every', mode: 'content' }, 5);
  console.log(`content "tomatoes every": median ${ms(c.median)}, ${c.last.structuredContent?.total} notes`);
  const per = [];
  for (const [note, mb] of [
    ['Big 5MB', 5],
    ['Big 20MB', 20],
  ]) {
    const t = now();
    const res = await client.callTool({
      name: 'replace_text',
      arguments: { name: note, old_text: 'tomatoes', new_text: 'potatoes', replace_all: true },
    });
    const dt = now() - t;
    if (res.isError) throw new Error(res.content[0].text);
    per.push(dt / mb);
    console.log(
      `replace_text replace_all on the ${mb} MB note: ${ms(dt)} ` +
        `(${res.structuredContent?.replaced} replaced; ${ms(dt / mb)} per MB)`,
    );
  }
  console.log(`replace_all cost per MB, 20 MB against 5 MB: ${(per[1] / per[0]).toFixed(2)}x (linear: about 1x)`);
  await client.close();
  await stopDaemon(v);
} finally {
  v.cleanup();
}
