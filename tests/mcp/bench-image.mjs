// Image benchmark: what images cost vaultd, end to end through vault-mcp
// with the official SDK client on a generated vault.
//   node bench-image.mjs [N=1000]
// Prints the daemon's resident memory once the vault has settled and no
// image was read yet (what every daemon pays), then the median and p95
// of read_attachment over 30 calls each of a typical PNG and JPEG (sent
// byte for byte once checked whole) and of a PNG too wide for clients
// (made smaller), then the memory again. The JPEG is made with the vips
// command when it is installed (skipped otherwise).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { daemonMemory, fmt, pct, settledVault } from './bench-lib.mjs';
import { daemonPid, sleep } from './lib.mjs';
import { png } from './png.mjs';

const n = parseInt(process.argv[2] || '1000', 10);
const CALLS = 30;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;

// A photo-like picture: smooth shapes and a little grain.
let seed = 11;
const photo = (w) => (y, b) => {
  for (let x = 0; x < w; x++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const grain = (seed >>> 24) & 7;
    const v = 128 + 100 * Math.sin(x / 97 + y / 53) * Math.cos(y / 71);
    b[3 * x] = (v + grain) & 0xff;
    b[3 * x + 1] = (200 - v / 2 + grain) & 0xff;
    b[3 * x + 2] = ((x ^ y) & 0x3f) + 96;
  }
};
const ramp = (y, b) => {
  for (let i = 0; i < b.length; i++) b[i] = (i + y) & 0xff;
};

// Resident memory split: anonymous (heap) and file-backed (mostly the
// shared libraries' pages, shared with other processes).
function split(v) {
  const status = fs.readFileSync(`/proc/${daemonPid(v)}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
  return `anon ${mb(kb('RssAnon'))}, file ${mb(kb('RssFile'))}`;
}

const { v, client, mdBytes } = await settledVault(n);
const idle = daemonMemory(v);
const idleSplit = split(v);

const assets = path.join(v.vault, 'assets');
fs.mkdirSync(assets);
const images = [
  ['assets/photo.png', png(1600, 1000, { row: photo(1600) })],
  ['assets/wide.png', png(12000, 300, { color: 0, row: ramp })],
];
for (const [rel, buf] of images) fs.writeFileSync(path.join(v.vault, rel), buf);
const jpeg = spawnSync('vips', ['copy', path.join(v.vault, 'assets/photo.png'), path.join(assets, 'photo.jpg[Q=85]')]);
if (jpeg.status === 0) images.splice(1, 0, ['assets/photo.jpg', fs.readFileSync(path.join(assets, 'photo.jpg'))]);
else console.log('# no vips command: the JPEG is skipped');

// The watcher indexes the new files.
for (let i = 0; ; i++) {
  const r = await client.callTool({ name: 'list_attachments', arguments: {} });
  if (r.structuredContent?.attachments?.length === images.length) break;
  if (i > 400) throw new Error('the images were not indexed');
  await sleep(25);
}

const runs = [];
for (const [rel, buf] of images) {
  const times = [];
  let text = '';
  for (let i = 0; i < CALLS; i++) {
    const t = now();
    const r = await client.callTool({ name: 'read_attachment', arguments: { path: rel } });
    times.push(now() - t);
    text = r.content.find((b) => b.type === 'text')?.text ?? '';
    if (r.isError) throw new Error(`${rel}: ${text}`);
  }
  runs.push({ rel, size: buf.length, times, text: text.split('\n')[0] });
}
const after = daemonMemory(v);
const afterSplit = split(v);
await client.close();
await v.cleanup();

console.log(`== ${n} notes, ${mb(mdBytes)} of markdown`);
console.log(`vaultd idle, settled, no image read yet: RSS ${mb(idle.rss)} (${idleSplit}), peak ${mb(idle.peak)}`);
for (const s of runs)
  console.log(
    `read_attachment ${s.rel.padEnd(18)} ${mb(s.size).padStart(8)}  median ${fmt(pct(s.times, 50))}  p95 ${fmt(pct(s.times, 95))}  (${s.text})`,
  );
console.log(`vaultd after ${runs.length * CALLS} image reads: RSS ${mb(after.rss)} (${afterSplit}), peak ${mb(after.peak)}`);
