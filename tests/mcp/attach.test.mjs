// Attachments through vault-mcp with the official SDK client:
// read_attachment sends images as MCP image content (byte for byte when
// within the clients' limits, made smaller when not), SVG as text, other
// files as resource links; refuses paths out of the vault, a broken image
// and a decompression bomb (the daemon under `ulimit -v`, its peak memory
// checked) and keeps serving. The decoder, vaultd-image, crashing or
// running over its time: a clear error, no child left, notes served
// meanwhile. get_note_metadata, find_broken_links and
// list_attachments see attachments; vaultctl call reaches the same tools.
// The images are made here (zlib), none is kept in the tree.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { BIN, daemonPid, makeVault, mcpClient, sanitized, sleep, startDaemon, textOf, underTsan, vaultctl } from './lib.mjs';
import { png, pngSize } from './png.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

const MAX_SIDE = 8000;
const MAX_DATA = 5 * 1024 * 1024;

const ramp = (y, b) => {
  for (let i = 0; i < b.length; i++) b[i] = (i + y) & 0xff;
};
let seed = 7;
const noise = (y, b) => {
  for (let i = 0; i < b.length; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    b[i] = seed >>> 16;
  }
};

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>\n';

function attachVault() {
  const v = makeVault({
    '.obsidian/app.json': JSON.stringify({ attachmentFolderPath: 'assets' }),
    'Trip.md': '# Trip\n![[small.png]]\n![](assets/my%20map.svg)\n[[doc.pdf]]\n![[lost.png]]\n',
    'assets/my map.svg': SVG,
    'docs/doc.pdf': '%PDF-1.4\n%fake\n',
    'assets/spare.pdf': '%PDF-1.4\n',
  });
  vaults.push(v);
  const put = (rel, buf) => {
    fs.mkdirSync(path.dirname(path.join(v.vault, rel)), { recursive: true });
    fs.writeFileSync(path.join(v.vault, rel), buf);
  };
  put('assets/small.png', png(120, 80, { row: ramp }));
  put('assets/wide.png', png(12000, 300, { color: 0, row: ramp }));
  put('assets/noise.png', png(2000, 2000, { row: noise }));
  // 30000 x 30000 pixels (900 MB decoded) in about 110 KB.
  put('assets/bomb.png', png(30000, 30000, { depth: 1, color: 0 }));
  const whole = png(400, 400, { row: noise });
  put('assets/cut.png', whole.subarray(0, 3000));
  fs.writeFileSync(path.join(v.root, 'secret.png'), png(10, 10, { row: ramp }));
  fs.symlinkSync(path.join(v.root, 'secret.png'), path.join(v.vault, 'assets/link.png'));
  return v;
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

const imageOf = (r) => r.content.find((b) => b.type === 'image');


function peakKB(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

// Images bigger than a message takes: made smaller, whole.
async function bigImages(client) {
  let r = await call(client, 'read_attachment', { path: 'assets/wide.png' });
  assert.ok(!r.isError, textOf(r));
  let img = imageOf(r);
  let bytes = Buffer.from(img.data, 'base64');
  assert.deepEqual(pngSize(bytes), { w: MAX_SIDE, h: 200 });
  assert.match(textOf(r), /made smaller from 12000 x 300/);

  // Over 5 MB of data (noise does not compress): smaller until it fits.
  r = await call(client, 'read_attachment', { path: 'assets/noise.png' });
  assert.ok(!r.isError, textOf(r));
  img = imageOf(r);
  bytes = Buffer.from(img.data, 'base64');
  assert.ok(img.data.length <= MAX_DATA && bytes.length <= MAX_DATA, `${img.data.length} bytes`);
  const { w, h } = pngSize(bytes);
  assert.ok(w === h && w < 2000 && w > 100, `${w} x ${h}`);
}

describe('attachments', () => {
  test('images, SVG, links, refusals; bounded memory; the daemon keeps serving', async () => {
    const v = attachVault();
    await startDaemon(v, [], sanitized ? {} : { vmLimitKB: 3 * 1024 * 1024 });
    const pid = daemonPid(v);
    const client = await mcpClient(v);
    await client.listTools();

    // Small: the file's own bytes; found by name in the attachment folder.
    let r = await call(client, 'read_attachment', { path: 'small.png' });
    assert.ok(!r.isError, textOf(r));
    let img = imageOf(r);
    assert.equal(img.mimeType, 'image/png');
    assert.deepEqual(Buffer.from(img.data, 'base64'), fs.readFileSync(path.join(v.vault, 'assets/small.png')));
    assert.match(textOf(r), /assets\/small\.png: image\/png, 120 x 80 pixels/);

    // Too wide: made smaller, whole. (Not under ThreadSanitizer: libvips
    // is not built with it, and the decoder, built with it, takes longer
    // than its time limit on a big image; test_attach's small images run
    // there.)
    if (!underTsan) await bigImages(client);

    // SVG: its text.
    r = await call(client, 'read_attachment', { path: 'assets/my map.svg' });
    assert.ok(!r.isError, textOf(r));
    assert.equal(r.content[0].text.split('\n\n---\n')[0], SVG);

    // Other files: a resource link with type and size.
    r = await call(client, 'read_attachment', { path: 'doc.pdf' });
    assert.ok(!r.isError, textOf(r));
    const link = r.content.find((b) => b.type === 'resource_link');
    assert.deepEqual(link, {
      type: 'resource_link',
      uri: 'vault:///docs/doc.pdf',
      name: 'doc.pdf',
      mimeType: 'application/pdf',
      size: 15,
    });
    // The link reads: resources/read gives the file's bytes.
    const res = await client.readResource({ uri: link.uri });
    assert.deepEqual(res.contents, [
      { uri: link.uri, mimeType: 'application/pdf', blob: Buffer.from('%PDF-1.4\n%fake\n').toString('base64') },
    ]);
    const pngRes = await client.readResource({ uri: 'vault:///assets/small.png' });
    assert.equal(pngRes.contents[0].mimeType, 'image/png');
    assert.ok(Buffer.from(pngRes.contents[0].blob, 'base64').equals(fs.readFileSync(path.join(v.vault, 'assets/small.png'))));
    // One too big for a message is refused, saying so.
    fs.writeFileSync(path.join(v.vault, 'assets/huge.bin'), Buffer.alloc(9 << 20, 1));
    let huge = null;
    for (let i = 0; i < 100 && !huge; i++) {
      try {
        await client.readResource({ uri: 'vault:///assets/huge.bin' });
        huge = 'read';
      } catch (e) {
        if (/more than a resource read sends/.test(e.message)) huge = e.message;
        else await new Promise((ok) => setTimeout(ok, 50)); // the watcher
      }
    }
    assert.match(huge, /'assets\/huge\.bin' is 9437184 bytes: more than a resource read sends \(8388608 bytes\)/);
    fs.unlinkSync(path.join(v.vault, 'assets/huge.bin'));

    // Refused: out of the vault, a symlink, Obsidian's settings.
    for (const [p, why] of [
      ['../secret.png', /'\.\.' is not allowed/],
      ['assets/link.png', /is a symlink/],
      ['.obsidian/app.json', /inside \.obsidian/],
      ['nothing.png', /Attachment not found/],
    ]) {
      r = await call(client, 'read_attachment', { path: p });
      assert.ok(r.isError, p);
      assert.match(textOf(r), why);
    }

    // A broken image and a decompression bomb: clear errors.
    r = await call(client, 'read_attachment', { path: 'assets/cut.png' });
    assert.ok(r.isError);
    assert.match(textOf(r), /Cannot send 'assets\/cut\.png' as an image: /);
    r = await call(client, 'read_attachment', { path: 'assets/bomb.png' });
    assert.ok(r.isError);
    assert.match(textOf(r), /30000 x 30000 pixels \(900 megapixels\); images over 150 megapixels are not decoded/);

    // The same daemon goes on: the small image again, byte for byte.
    r = await call(client, 'read_attachment', { path: 'small.png' });
    assert.ok(!r.isError, textOf(r));
    assert.equal(daemonPid(v), pid);
    if (!sanitized) {
      // The images are decoded by vaultd-image: vaultd holds only the
      // base64 of what it sends.
      const peak = peakKB(pid);
      console.log(`# vaultd's peak resident memory after the big images and the bomb: ${(peak / 1024).toFixed(1)} MB`);
      assert.ok(peak < 80 * 1024, `peak resident memory ${peak} kB`);
    }
    await client.close();
  });

  test('a decoder that crashes or runs over: a clear error, nothing left behind, notes served meanwhile', async () => {
    const v = attachVault();
    // One stand-in decoder whose behaviour a file sets: crash, hang, or
    // hand over to the real one.
    const mode = path.join(v.root, 'decoder-mode');
    const helper = path.join(v.root, 'decoder.sh');
    const real = path.join(path.dirname(BIN.vaultd), 'vaultd-image');
    fs.writeFileSync(
      helper,
      `#!/bin/sh\nread m < '${mode}'\ncase $m in\ncrash) kill -SEGV $$ ;;\nhang) exec /bin/sleep 30 ;;\nesac\nexec '${real}'\n`,
      { mode: 0o755 },
    );
    const setMode = (m) => fs.writeFileSync(mode, `${m}\n`);
    v.env.VAULTD_IMAGE_HELPER = helper;
    v.env.VAULTD_IMAGE_TIMEOUT_MS = '1500';
    await startDaemon(v);
    const pid = daemonPid(v);
    const client = await mcpClient(v);

    setMode('crash');
    let r = await call(client, 'read_attachment', { path: 'small.png' });
    assert.ok(r.isError);
    assert.match(textOf(r), /Cannot send 'assets\/small\.png' as an image: the image decoder crashed \(signal 11, Segmentation fault\)/);

    // A decoder that hangs is stopped; a note read meanwhile answers first.
    setMode('hang');
    const t0 = Date.now();
    const slow = call(client, 'read_attachment', { path: 'small.png' }).then((res) => ({ res, at: Date.now() - t0 }));
    await sleep(200);
    r = await call(client, 'read_note', { name: 'Trip' });
    const noteAt = Date.now() - t0;
    assert.ok(!r.isError, textOf(r));
    assert.match(textOf(r), /!\[\[small\.png\]\]/);
    const { res, at } = await slow;
    assert.ok(res.isError);
    assert.match(textOf(res), /the image decoder did not finish within 1500 ms and was stopped/);
    assert.ok(noteAt < at && noteAt < 1200, `note after ${noteAt} ms, image after ${at} ms`);
    assert.ok(at < 6000, `the timeout took ${at} ms`);

    // No decoder is left running or unreaped.
    const kids = fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((t) => fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean));
    for (const k of kids) {
      let stat = '';
      try {
        stat = fs.readFileSync(`/proc/${k}/stat`, 'utf8');
      } catch {}
      assert.ok(!/\((sleep|decoder\.sh|vaultd-image)\)/.test(stat), `left behind: ${stat}`);
    }

    // The real decoder again (under ThreadSanitizer it takes longer than
    // this test's time limit).
    setMode('real');
    if (!underTsan) {
      r = await call(client, 'read_attachment', { path: 'small.png' });
      assert.ok(!r.isError, textOf(r));
      assert.deepEqual(Buffer.from(imageOf(r).data, 'base64'), fs.readFileSync(path.join(v.vault, 'assets/small.png')));
    }
    assert.equal(daemonPid(v), pid);
    await client.close();
  });

  test('metadata, broken links, list_attachments; vaultctl; not in the core profile', async () => {
    const v = attachVault();
    const client = await mcpClient(v);
    await client.listTools();
    let r = await call(client, 'get_note_metadata', { name: 'Trip' });
    assert.deepEqual(r.structuredContent.embeds, ['small.png', 'assets/my map.svg', 'lost.png']);
    assert.deepEqual(r.structuredContent.attachments, [
      { target: 'small.png', path: 'assets/small.png' },
      { target: 'assets/my map.svg', path: 'assets/my map.svg' },
      { target: 'doc.pdf', path: 'docs/doc.pdf' },
      { target: 'lost.png', path: null },
    ]);
    r = await call(client, 'find_broken_links', {});
    assert.deepEqual(r.structuredContent.result, [{ source: 'Trip', target: 'lost.png' }]);
    r = await call(client, 'list_attachments', { unused: true });
    assert.deepEqual(
      r.structuredContent.attachments.map((a) => a.path),
      ['assets/bomb.png', 'assets/cut.png', 'assets/noise.png', 'assets/spare.pdf', 'assets/wide.png'],
    );
    r = await call(client, 'list_attachments', { folder: 'docs' });
    assert.deepEqual(r.structuredContent.attachments, [{ path: 'docs/doc.pdf', type: 'application/pdf', size: 15 }]);

    const out = vaultctl(v, ['--vault', v.vault, 'call', 'read_attachment', 'path=small.png']);
    assert.equal(out.code, 0, out.err);
    assert.match(out.out, /^assets\/small\.png: image\/png, 120 x 80 pixels, \d+ bytes\n$/);
    const js = vaultctl(v, ['--vault', v.vault, '--json', 'call', 'read_attachment', 'path=small.png']);
    const img = JSON.parse(js.out).content[0];
    assert.deepEqual(Buffer.from(img.data, 'base64'), fs.readFileSync(path.join(v.vault, 'assets/small.png')));
    const ls = vaultctl(v, ['--vault', v.vault, 'call', 'list_attachments', 'folder=docs']);
    assert.equal(ls.code, 0, ls.err);
    assert.match(ls.out, /docs\/doc\.pdf/);

    const all = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(all.includes('read_attachment') && all.includes('list_attachments'));
    await client.close();
    const core = await mcpClient(v, { args: ['--tools', 'core'] });
    const names = (await core.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('read_attachment') && !names.includes('list_attachments'));
    await core.close();
  });
});
