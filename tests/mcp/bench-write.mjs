// Write benchmark: on generated vaults, end to end through vault-mcp with
// the official SDK client: update_note and append_note on distinct notes,
// 1,000 appends to one note, rename_note of a note that 1,000 notes link
// to, and the same rename made with rename(2) (what mv does) on a mounted
// view of the vault (root and /dev/fuse only), timed until every referrer
// is rewritten.
//   node bench-write.mjs [N...]      (default: 1000 10000 100000)
// Goals: update/append median <= 0.6 ms; 1,000 appends <= 0.8 s; rename
// with 1,000 referrers <= 300 ms, through MCP and through the mount.
// Beside them, what bounds them from below on this machine: read_note
// (the same round trip without a write) and the disk's own cost of one
// durable atomic write (temp file, fsync, rename, fsync of the folder).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ctlConnect, makeVault, mcpClient, sleep, socketPath, startDaemon, stopDaemon } from './lib.mjs';

const sizes = process.argv.slice(2).map((x) => parseInt(x, 10));
if (!sizes.length) sizes.push(1000, 10000, 100000);
const CALLS = 200;
const APPENDS = 1000;
const REFERRERS = 1000;
const GOAL = { write: 0.6, appends: 800, rename: 300 };

const now = () => Number(process.hrtime.bigint()) / 1e6;
function pct(a, p) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
}
const ms = (x) => `${x.toFixed(2)} ms`;
const verdict = (x, goal) => (x <= goal ? 'met' : 'NOT met');

function generate(dir, n) {
  const r = spawnSync(process.env.GEN_VAULT_BIN, [dir, String(n), '1'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

const FILLER =
  'The meeting notes below record what was decided about the garden project, ' +
  'who reviews the budget, and which drafts wait for the next round.\n';

// The notes the benchmark works on, next to the generated ones: two
// targets that every referrer links to (one renamed through MCP, one on
// the mount), the referrers, and a note for the appends.
function addBenchNotes(vault) {
  const dir = path.join(vault, 'bench');
  fs.mkdirSync(path.join(dir, 'refs'), { recursive: true });
  for (const t of ['Target A', 'Target B'])
    fs.writeFileSync(path.join(dir, `${t}.md`), `---\ntags: [bench]\n---\n# ${t}\n\n${FILLER}`);
  for (let i = 0; i < REFERRERS; i++) {
    const id = String(i).padStart(4, '0');
    fs.writeFileSync(
      path.join(dir, 'refs', `Ref ${id}.md`),
      `---\ntags: [bench, ref]\n---\n# Ref ${id}\n\n${FILLER}\nSee [[Target A]] and [[Target B|the other one]].\n\n${FILLER.repeat(3)}`,
    );
  }
  fs.writeFileSync(path.join(dir, 'Appends.md'), `# Appends\n\n${FILLER}`);
}

// Small generated notes (what update_note and append_note work on): the
// paths without .md, in a fixed order.
function smallNotes(vault) {
  return fs
    .readdirSync(vault, { recursive: true })
    .filter((f) => f.endsWith('.md') && !f.startsWith('bench/') && !f.startsWith('.'))
    .filter((f) => fs.statSync(path.join(vault, f)).size < 8192)
    .sort()
    .map((f) => f.slice(0, -3));
}

async function status(v) {
  const c = await ctlConnect(socketPath(v));
  try {
    return await c.call('status');
  } finally {
    c.close();
  }
}

// Everything a start does in the background is done: the search index
// (and its substrings) complete, the history recorded and packed.
async function settled(v) {
  for (;;) {
    const st = await status(v);
    const h = st.history;
    if (
      st.index.state === 'ready' &&
      st.search_index.state === 'ready' &&
      st.search_index.substrings_ready &&
      (h.state !== 'on' || (h.recorded && h.settled))
    )
      return;
    await sleep(100);
  }
}

// What the disk takes for one durable atomic write, as vaultd makes each
// (a new temp file, fsync, rename over the note, fsync of the folder),
// in a folder beside the vault: the median of CALLS.
function diskFloor(dir) {
  const tmp = path.join(dir, 'floor.tmp');
  const dst = path.join(dir, 'floor.md');
  const data = Buffer.from(FILLER.repeat(8));
  const dfd = fs.openSync(dir, 'r');
  const times = [];
  try {
    for (let i = 0; i < CALLS; i++) {
      const t = now();
      const fd = fs.openSync(tmp, 'wx', 0o644);
      fs.writeSync(fd, data);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      fs.renameSync(tmp, dst);
      fs.fsyncSync(dfd);
      times.push(now() - t);
    }
  } finally {
    fs.closeSync(dfd);
    fs.rmSync(dst, { force: true });
  }
  return times;
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
  return r;
}

async function series(client, name, argsFor) {
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const args = argsFor(i);
    const t = now();
    await call(client, name, args);
    times.push(now() - t);
  }
  return times;
}

function countLinks(vault, link) {
  const dir = path.join(vault, 'bench', 'refs');
  let n = 0;
  for (const f of fs.readdirSync(dir)) if (fs.readFileSync(path.join(dir, f), 'utf8').includes(link)) n++;
  return n;
}

const mounted = (dir) =>
  fs
    .readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[1] === dir);

// Target B renamed with rename(2) on the mount: the time until every
// referrer links to the new name (the mount answers the rename once it
// has rewritten them; the poll is there in case it did not).
async function mountRename(v) {
  const mnt = path.join(v.root, 'mnt');
  fs.mkdirSync(mnt, { recursive: true });
  const d = spawn(process.env.VAULTD_BIN, ['--vault', v.vault, '--mount', mnt, '-f'], {
    env: v.env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  d.stderr.on('data', (x) => (log += x));
  const exited = new Promise((r) => d.once('exit', r));
  try {
    for (let i = 0; i < 400 && !(mounted(mnt) && socketPath(v)); i++) {
      if (d.exitCode !== null) throw new Error('vaultd exited: ' + log);
      await sleep(25);
    }
    await settled(v);
    const from = path.join(mnt, 'bench', 'Target B.md');
    const to = path.join(mnt, 'bench', 'Target B2.md');
    const t = now();
    fs.renameSync(from, to);
    const tRename = now() - t;
    // Rewritten before the answer: the first check finds them all.
    const link = '[[Target B2|the other one]]';
    let tAll = tRename;
    let n = countLinks(v.vault, link);
    while (n < REFERRERS && now() - t < 60000) {
      await sleep(1);
      n = countLinks(v.vault, link);
      tAll = now() - t;
    }
    if (n < REFERRERS) throw new Error(`mount rename: ${n} of ${REFERRERS} referrers rewritten after 60 s`);
    return { tRename, tAll };
  } finally {
    d.kill('SIGTERM');
    await exited;
    if (mounted(mnt)) spawnSync('umount', ['-l', mnt]);
  }
}

const canMount = process.getuid?.() === 0 && fs.existsSync('/dev/fuse');
const rows = [];
for (const n of sizes) {
  const v = makeVault({});
  try {
    console.log(`\n== ${n} notes: ${generate(v.vault, n)}; plus 2 targets, ${REFERRERS} notes linking to both, 1 note for appends`);
    addBenchNotes(v.vault);
    const notes = smallNotes(v.vault);
    await startDaemon(v);
    await settled(v);
    const client = await mcpClient(v);
    // Warm up: connections, caches, the first writes.
    for (let i = 0; i < 10; i++) await call(client, 'append_note', { name: 'bench/Appends', text: `warm-up ${i}` });
    await settled(v);

    const rd = await series(client, 'read_note', (i) => ({ name: notes[(i * 7919) % notes.length] }));
    const floor = diskFloor(v.root);
    const body = (i) => `# Updated ${i}\n\n${FILLER.repeat(6)}Call ${i}.\n`;
    const upd = await series(client, 'update_note', (i) => ({ name: notes[(i * 7919) % notes.length], content: body(i) }));
    await settled(v);
    const app = await series(client, 'append_note', (i) => ({
      name: notes[(i * 7919 + 3) % notes.length],
      text: `Appended line ${i}: ${FILLER}`,
    }));
    await settled(v);
    let t = now();
    for (let i = 0; i < APPENDS; i++) await call(client, 'append_note', { name: 'bench/Appends', text: `Line ${i} of the appends.` });
    const tAppends = now() - t;
    const lines = fs.readFileSync(path.join(v.vault, 'bench', 'Appends.md'), 'utf8').match(/^Line \d+ of the appends\.$/gm);
    if (lines?.length !== APPENDS) throw new Error(`appends: ${lines?.length} lines in the note`);
    await settled(v);

    t = now();
    const rr = await call(client, 'rename_note', { old_name: 'bench/Target A', new_name: 'bench/Target A2' });
    const tRename = now() - t;
    const updated = rr.structuredContent?.files_updated?.length;
    const onDisk = countLinks(v.vault, '[[Target A2]]');
    if (updated !== REFERRERS || onDisk !== REFERRERS)
      throw new Error(`rename_note: ${updated} files updated, ${onDisk} on disk`);
    await client.close();
    await settled(v);
    await stopDaemon(v);

    console.log(`read_note (${CALLS} notes, the round trip without a write): median ${ms(pct(rd, 50))}; the disk, one durable atomic write: median ${ms(pct(floor, 50))}`);
    console.log(`update_note (${CALLS} notes): median ${ms(pct(upd, 50))}, p90 ${ms(pct(upd, 90))} (goal: median <= ${GOAL.write} ms, ${verdict(pct(upd, 50), GOAL.write)})`);
    console.log(`append_note (${CALLS} notes): median ${ms(pct(app, 50))}, p90 ${ms(pct(app, 90))} (goal: median <= ${GOAL.write} ms, ${verdict(pct(app, 50), GOAL.write)})`);
    console.log(`${APPENDS} appends to one note: ${ms(tAppends)} (goal: <= ${GOAL.appends} ms, ${verdict(tAppends, GOAL.appends)})`);
    console.log(`rename_note, ${REFERRERS} referrers: ${ms(tRename)} (goal: <= ${GOAL.rename} ms, ${verdict(tRename, GOAL.rename)})`);
    const row = { n, upd, app, tAppends, tRename, rd, floor, mount: null };
    if (canMount) {
      row.mount = await mountRename(v);
      console.log(
        `rename(2) on the mount, ${REFERRERS} referrers: ${ms(row.mount.tAll)} until all are rewritten, the rename answered in ${ms(row.mount.tRename)} ` +
          `(goal: <= ${GOAL.rename} ms, ${verdict(row.mount.tAll, GOAL.rename)})`,
      );
    } else {
      console.log('rename(2) on the mount: skipped (needs root and /dev/fuse)');
    }
    rows.push(row);
  } finally {
    await stopDaemon(v);
    await v.cleanup();
  }
}

const col = (s, w) => String(s).padStart(w);
console.log(`\ngoals: update/append median <= ${GOAL.write} ms; ${APPENDS} appends <= ${GOAL.appends} ms; rename with ${REFERRERS} referrers <= ${GOAL.rename} ms (MCP and mount)`);
console.log(`${'notes'.padEnd(8)}${col('update med/p90', 18)}${col('append med/p90', 18)}${col(`${APPENDS} appends`, 14)}${col('rename_note', 13)}${col('mount rename', 14)}${col('read_note', 11)}${col('disk write', 12)}`);
for (const r of rows)
  console.log(
    `${String(r.n).padEnd(8)}${col(`${pct(r.upd, 50).toFixed(2)}/${pct(r.upd, 90).toFixed(2)} ms`, 18)}` +
      `${col(`${pct(r.app, 50).toFixed(2)}/${pct(r.app, 90).toFixed(2)} ms`, 18)}${col(ms(r.tAppends), 14)}` +
      `${col(ms(r.tRename), 13)}${col(r.mount ? ms(r.mount.tAll) : 'skipped', 14)}` +
      `${col(ms(pct(r.rd, 50)), 11)}${col(ms(pct(r.floor, 50)), 12)}`,
  );
