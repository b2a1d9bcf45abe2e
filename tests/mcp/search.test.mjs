// Full-text search end to end, with the official SDK client on vault-mcp:
// ranking, snippets, paging, errors; the index kept in step with writes
// (big notes too); progress while a first build runs; the index reused at
// restart; a damaged index rebuilt.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { after, describe, test } from 'node:test';
import { ctlConnect, jsonOf, makeVault, mcpClient, sleep, socketPath, startDaemon, textOf } from './lib.mjs';

const vaults = [];
const clients = [];
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  for (const v of vaults) await v.cleanup();
});

async function session(files) {
  const v = makeVault(files);
  vaults.push(v);
  await startDaemon(v, ['-f']);
  const c = await mcpClient(v);
  clients.push(c);
  return { v, c };
}

const search = async (c, args) => {
  const r = await c.callTool({ name: 'search_notes', arguments: { mode: 'fulltext', ...args } });
  return r.isError ? { error: textOf(r) } : jsonOf(r);
};
// Full-text results name a note by its path only; the other modes by
// name and path.
const names = (r) => {
  assert.ok(r.results, r.error);
  return r.results.map((x) => x.name ?? x.path.replace(/^.*\//, '').replace(/\.md$/, ''));
};

async function status(v) {
  const s = await ctlConnect(socketPath(v));
  const st = await s.call('status');
  s.close();
  return st;
}

describe('fulltext search through MCP', () => {
  test('ranking, snippets, syntax, Cyrillic, CJK, diacritics, errors', async () => {
    const { c } = await session({
      'Gardening.md': '---\ntags: [hobby/outdoor]\n---\nTomatoes need sun.\n',
      'Kitchen.md': 'Notes on gardening tools and the kitchen garden.\n',
      'projects/Проект.md': 'Это проект про сад.\n',
      'projects/Plan.md': 'Plan for the café opening. #work\n',
      '日本.md': '東京都の天気は晴れです。\n',
      'Rare.md': 'zyzzyva appears once; the word common appears here.\n',
      'Common.md': 'common common common words.\n',
    });
    // The session's first result carries the auto-context block; the
    // helpers read the JSON part.
    let r = await search(c, { query: 'gardening' });
    assert.deepEqual(names(r), ['Gardening', 'Kitchen'], 'a title hit outranks a body hit');
    assert.equal(r.total, 2);
    assert.match(r.results[1].snippet, /\*\*gardening\*\*/i);
    assert.deepEqual(r.results[0].tags, ['hobby/outdoor']);
    assert.ok(r.results[0].score >= r.results[1].score);
    // vaultd sends the result's JSON once, as the text; vault-mcp passes
    // that on as the structured content too.
    const both = await c.callTool({ name: 'search_notes', arguments: { mode: 'fulltext', query: 'gardening' } });
    assert.deepEqual(both.structuredContent, JSON.parse(textOf(both)));
    assert.deepEqual(both.structuredContent, r);
    r = await search(c, { query: 'проект' });
    assert.deepEqual(names(r), ['Проект']);
    r = await search(c, { query: 'ПРОЕКТ' });
    assert.deepEqual(names(r), ['Проект'], 'Cyrillic is case-folded');
    r = await search(c, { query: 'cafe' });
    assert.deepEqual(names(r), ['Plan'], 'diacritics fold');
    r = await search(c, { query: '天気' });
    assert.deepEqual(names(r), ['日本'], 'a CJK substring is found');
    assert.match(r.results[0].snippet, /\*\*天気\*\*/);
    r = await search(c, { query: 'tag:hobby sun' });
    assert.deepEqual(names(r), ['Gardening'], 'hierarchical tag filter');
    r = await search(c, { query: 'folder:projects -café' });
    assert.deepEqual(names(r), ['Проект']);
    r = await search(c, { query: '"kitchen garden" OR title:rare' });
    assert.deepEqual(names(r).sort(), ['Kitchen', 'Rare']);
    r = await search(c, { query: 'Common', case_sensitive: true });
    assert.deepEqual(names(r), ['Common'], 'a title match with the case asked for');
    r = await search(c, { query: 'tomato*' });
    assert.deepEqual(names(r), ['Gardening']);
    r = await search(c, { query: 'gardening AND (' });
    assert.match(r.error, /^Invalid query at character \d+/);
    r = await search(c, { query: 'gardening', limit: 101 });
    assert.match(r.error, /limit/);
    // The content mode is index-backed and case-insensitive for Cyrillic.
    const cr = await c.callTool({ name: 'search_notes', arguments: { query: 'ПРО САД', mode: 'content' } });
    assert.ok(!cr.isError, textOf(cr));
    assert.deepEqual(jsonOf(cr).results.map((x) => x.name), ['Проект']);
  });

  test('paging returns every result once; a stale or forged cursor is an error', async () => {
    const files = {};
    for (let i = 0; i < 25; i++) files[`n${String(i).padStart(2, '0')}.md`] = `alpha ${'beta '.repeat(i)}\n`;
    const { c } = await session(files);
    const seen = [];
    let cursor;
    let pages = 0;
    do {
      const r = await search(c, { query: 'alpha', limit: 7, ...(cursor ? { cursor } : {}) });
      assert.equal(r.total, 25);
      seen.push(...names(r));
      cursor = r.next_cursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 4);
    assert.equal(new Set(seen).size, 25);
    assert.equal(seen.length, 25);
    const first = await search(c, { query: 'alpha', limit: 7 });
    let r = await search(c, { query: 'alpha', limit: 7, cursor: 'garbage!!' });
    assert.match(r.error, /cursor/i);
    r = await search(c, { query: 'beta', limit: 7, cursor: first.next_cursor });
    assert.match(r.error, /cursor/i, 'a cursor of another query');
    await c.callTool({ name: 'create_note', arguments: { name: 'n99', content: 'alpha again' } });
    r = await search(c, { query: 'alpha', limit: 7, cursor: first.next_cursor });
    assert.match(r.error, /cursor/i, 'the index changed');
  });

  test('create, update, rename, delete through the tools; a big note written in a burst', async () => {
    const { c } = await session({ 'Home.md': 'links to [[Old Name]]\n', 'Old Name.md': 'original quokka text\n' });
    const call = async (name, args) => {
      const r = await c.callTool({ name, arguments: args });
      assert.ok(!r.isError, textOf(r));
    };
    await call('create_note', { name: 'Fresh', content: 'a narwhal appears\n' });
    assert.deepEqual(names(await search(c, { query: 'narwhal' })), ['Fresh']);
    await call('replace_text', { name: 'Old Name', old_text: 'quokka', new_text: 'wombat' });
    assert.deepEqual(names(await search(c, { query: 'quokka' })), []);
    assert.deepEqual(names(await search(c, { query: 'wombat' })), ['Old Name']);
    await call('rename_note', { old_name: 'Old Name', new_name: 'New Name' });
    let r = await search(c, { query: 'wombat' });
    assert.deepEqual(names(r), ['New Name']);
    assert.equal(r.results[0].path, 'New Name.md');
    assert.deepEqual(names(await search(c, { query: 'title:new' })), ['New Name']);
    await call('delete_note', { name: 'Fresh' });
    assert.deepEqual(names(await search(c, { query: 'narwhal' })), []);
    // A note over 64 KiB is put by the index thread; searches still see
    // every write at once.
    for (let i = 0; i < 40; i++) await call('append_note', { name: 'Home', text: `${'filler words '.repeat(300)}\nmarker${i}x\n` });
    assert.deepEqual(names(await search(c, { query: 'marker39x' })), ['Home']);
    const cr = await c.callTool({ name: 'search_notes', arguments: { query: 'marker39x', mode: 'content' } });
    assert.deepEqual(jsonOf(cr).results.map((x) => x.name), ['Home']);
  });
});

describe('the index across restarts', () => {
  test('progress while the first build runs; reused at restart; a damaged file rebuilt', async () => {
    const v = makeVault({});
    vaults.push(v);
    const gen = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, '12000', '3'], { encoding: 'utf8' });
    assert.equal(gen.status, 0, gen.stderr);
    let log = '';
    const start = () => {
      const child = spawn(process.env.VAULTD_BIN, ['--no-mount', '-f', '--vault', v.vault], { env: v.env, stdio: ['ignore', 'ignore', 'pipe'] });
      child.stderr.on('data', (d) => (log += d));
      return child;
    };
    let child = start();
    let sock;
    for (let i = 0; i < 400 && !(sock = socketPath(v)); i++) await sleep(25);
    const c = await mcpClient(v);
    clients.push(c);
    // Asked with a progress token, the call waits for the build and
    // reports how far it is.
    const progress = [];
    const early = await status(v);
    const r = await c.callTool({ name: 'search_notes', arguments: { query: 'meeting', mode: 'fulltext' } }, undefined, {
      onprogress: (p) => progress.push(p),
      timeout: 300000,
    });
    assert.ok(!r.isError, textOf(r));
    const st = await status(v);
    assert.equal(st.search_index.unchanged_at_start, 0);
    // Asked well before the build was through, the call heard how far.
    if (early.search_index.state === 'building' && early.search_index.percent < 80) assert.ok(progress.length > 0, JSON.stringify(early));
    else console.log('# the first build was (almost) through before the search: ' + JSON.stringify(early.search_index));
    // vault-mcp says it is still working until vaultd's own progress
    // comes (the notes index first, under a sanitizer that takes a while).
    assert.ok(progress.every((p) => /Indexing note text|still working/.test(p.message ?? 'still working')), JSON.stringify(progress));
    if (progress.length) assert.ok(progress.some((p) => /Indexing note text: \d+ of 12000 notes/.test(p.message ?? '')), JSON.stringify(progress));
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress >= progress[i - 1].progress);
    for (const p of progress) if (p.total !== undefined) assert.ok(p.total >= p.progress, JSON.stringify(p));
    assert.equal(st.search_index.state, 'ready');
    const before = jsonOf(await c.callTool({ name: 'search_notes', arguments: { query: 'meeting', mode: 'fulltext', limit: 5 } }));

    // Restart: nothing unchanged is read again.
    await c.close();
    clients.pop();
    child.kill('SIGTERM');
    await new Promise((res) => child.on('exit', res));
    log = '';
    child = start();
    for (let i = 0; i < 400; i++) {
      try {
        if ((await status(v)).search_index.state === 'ready') break;
      } catch {}
      await sleep(25);
    }
    const st2 = await status(v);
    assert.equal(st2.search_index.state, 'ready');
    assert.equal(st2.search_index.unchanged_at_start, st2.notes);
    assert.equal(st2.search_index.read_at_start, 0);
    const c2 = await mcpClient(v);
    clients.push(c2);
    const again = jsonOf(await c2.callTool({ name: 'search_notes', arguments: { query: 'meeting', mode: 'fulltext', limit: 5 } }));
    assert.deepEqual(again.results.map((x) => x.path), before.results.map((x) => x.path));

    // A damaged database file: rebuilt with a log line; search works.
    const file = st2.search_index.path;
    await c2.close();
    clients.pop();
    child.kill('SIGTERM');
    await new Promise((res) => child.on('exit', res));
    for (const f of [file + '-wal', file + '-shm']) fs.rmSync(f, { force: true });
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 0);
    fs.closeSync(fd);
    log = '';
    child = start();
    // Its socket first: a client connecting sooner would start a daemon
    // of its own, and this one would find the vault taken.
    for (let i = 0; i < 400; i++) {
      try {
        await status(v);
        break;
      } catch {}
      await sleep(25);
    }
    const c3 = await mcpClient(v);
    clients.push(c3);
    const r3 = await c3.callTool({ name: 'search_notes', arguments: { query: 'meeting', mode: 'fulltext', limit: 5 } }, undefined, {
      onprogress: () => {},
      timeout: 300000,
    });
    assert.ok(!r3.isError, textOf(r3));
    assert.deepEqual(jsonOf(r3).results.map((x) => x.path), before.results.map((x) => x.path));
    assert.match(log, /rebuilt/);
    await c3.close();
    clients.pop();
    child.kill('SIGTERM');
    await new Promise((res) => child.on('exit', res));
  });
});
