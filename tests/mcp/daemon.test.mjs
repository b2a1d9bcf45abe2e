// vaultd's control socket: bad input, many clients, slow and dead clients,
// answering while indexing, concurrent writers, the peer uid check; and
// vaultctl, its client.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ctlConnect, makeVault, readNote, sanitized, sleep, socketPath, startDaemon, vaultctl } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

async function daemon(files, args) {
  const v = makeVault(files);
  vaults.push(v);
  await startDaemon(v, ['-f', ...(args || [])]);
  return v;
}

// Send raw bytes on a fresh connection, collect what comes back.
function rawExchange(sock, bytes, ms = 2000) {
  return new Promise((resolve) => {
    const s = net.createConnection(sock);
    let out = '';
    let closed = false;
    s.on('data', (d) => (out += d));
    s.on('error', () => {});
    const timer = setTimeout(() => {
      s.destroy();
      if (!closed) resolve({ out, closed: false });
    }, ms);
    s.on('close', () => {
      closed = true;
      clearTimeout(timer);
      resolve({ out, closed });
    });
    s.on('connect', () => s.write(bytes));
  });
}

describe('bad input to the control socket', () => {
  test('errors for malformed messages; the connection and daemon go on', async () => {
    const v = await daemon({ 'a.md': 'alpha' });
    const sock = socketPath(v);
    const r1 = await rawExchange(sock, 'not json\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n', 500);
    const lines = r1.out.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[0].error.code, -32700);
    assert.deepEqual(lines[1], { jsonrpc: '2.0', id: 1, result: {} });
    const bad = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":2,"method":"\xff"}'.replace('\xff', '')), Buffer.from([0xff, 0x0a])]);
    assert.match((await rawExchange(sock, bad, 500)).out, /-32700|UTF-8/);
    const c = await ctlConnect(sock);
    await assert.rejects(c.call('no/such'), (e) => e.code === -32601);
    await assert.rejects(c.call('tools/call', { name: 7 }), (e) => e.code === -32602);
    const wrong = await c.call('tools/call', { name: 'list_notes', arguments: { limit: 'x' } });
    assert.equal(wrong.isError, true);
    assert.equal(wrong.code, -32602);
    const okr = await c.call('tools/call', { name: 'read_note', arguments: { name: 'a' } });
    assert.equal(okr.text, 'alpha');
    c.close();
  });

  test('JSON nested deeper than 1000 levels: "too deeply nested"; the connection goes on', async () => {
    const v = await daemon({ 'a.md': 'alpha' });
    const sock = socketPath(v);
    const r1 = await rawExchange(sock, '['.repeat(1002) + ']'.repeat(1002) + '\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n', 1000);
    const lines = r1.out.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[0].error.code, -32600);
    assert.match(lines[0].error.message, /too deeply nested/);
    assert.deepEqual(lines[1], { jsonrpc: '2.0', id: 1, result: {} });
    const c = await ctlConnect(sock);
    let deep = [];
    for (let i = 0; i < 1001; i++) deep = { k: deep };
    await assert.rejects(
      c.call('tools/call', { name: 'read_note', arguments: { name: 'a', deep } }),
      (e) => e.code === -32600 && /too deeply nested/.test(e.message),
    );
    assert.equal((await c.call('tools/call', { name: 'read_note', arguments: { name: 'a' } })).text, 'alpha');
    c.close();
  });

  test('a 100 MB line closes that connection only', async () => {
    const v = await daemon({ 'a.md': 'alpha' });
    const sock = socketPath(v);
    const other = await ctlConnect(sock);
    const big = Buffer.alloc(100 * 1024 * 1024, 0x61);
    const t0 = Date.now();
    const r = await rawExchange(sock, big, 60000);
    assert.equal(r.closed, true);
    assert.match(r.out, /longer than/);
    assert.ok(Date.now() - t0 < 60000);
    assert.equal((await other.call('tools/call', { name: 'read_note', arguments: { name: 'a' } })).text, 'alpha');
    other.close();
  });

  test('a client that never reads does not hold up the others; a dead one neither', async () => {
    const v = await daemon({ 'a.md': 'alpha', 'b.md': 'beta' });
    const sock = socketPath(v);
    // A subscriber that never reads its socket.
    const lazy = net.createConnection(sock);
    await new Promise((r) => lazy.on('connect', r));
    lazy.pause();
    lazy.write('{"jsonrpc":"2.0","id":1,"method":"subscribe"}\n');
    // A client that asks and vanishes.
    const dead = net.createConnection(sock);
    dead.on('error', () => {});
    dead.on('connect', () => {
      dead.write('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_notes"}}\n');
      dead.destroy();
    });
    const c = await ctlConnect(sock);
    // Held up would mean a call waits on the lazy client (seconds, or
    // for ever); a busy machine only makes every call a little slower.
    // So each call gets a generous bound, and the run none.
    let slowest = 0;
    for (let i = 0; i < 500; i++) {
      const t0 = Date.now();
      const r = await c.call('tools/call', { name: 'append_note', arguments: { name: 'a', text: 'x'.repeat(2000) + i } });
      slowest = Math.max(slowest, Date.now() - t0);
      assert.equal(r.isError, false);
    }
    assert.ok(slowest < 10000, `a write was held up for ${slowest} ms`);
    const st = await c.call('status');
    assert.ok(st.clients >= 2);
    c.close();
    lazy.destroy();
  });

  test('peers with another uid are refused', { skip: process.getuid() !== 0 && 'needs root to act as another uid' }, async () => {
    const v = await daemon({ 'a.md': 'alpha' });
    const sock = socketPath(v);
    fs.chmodSync(path.dirname(sock), 0o755);
    fs.chmodSync(path.dirname(path.dirname(sock)), 0o755);
    fs.chmodSync(v.root, 0o755);
    fs.chmodSync(sock, 0o666);
    const script = `const s=require('net').createConnection(${JSON.stringify(sock)});let o='';` +
      `s.on('data',d=>o+=d);s.on('error',e=>{console.log('ERR '+e.code);process.exit(0)});` +
      `s.on('connect',()=>s.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\\n'));` +
      `s.on('close',()=>{console.log('CLOSED '+o.length);process.exit(0)})`;
    const r = spawnSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8', timeout: 10000 });
    assert.match(r.stdout, /CLOSED 0|ERR/);
  });
});

describe('serving while indexing', () => {
  test('status answers at once and shows progress; tool calls wait for the index', async () => {
    const v = makeVault({});
    vaults.push(v);
    // Enough notes that the index takes a while; fewer under a sanitizer,
    // which would take longer than a call waits for the index.
    const nnotes = sanitized ? 15000 : 60000;
    const gen = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, String(nnotes), '5'], { encoding: 'utf8' });
    assert.equal(gen.status, 0);
    const child = spawn(process.env.VAULTD_BIN, ['--no-mount', '-f', '--vault', v.vault], { env: v.env, stdio: 'ignore' });
    let sock;
    for (let i = 0; i < 400 && !(sock = socketPath(v)); i++) await sleep(5);
    let c;
    for (let i = 0; i < 400; i++) {
      try {
        c = await ctlConnect(sock);
        break;
      } catch {
        await sleep(5);
      }
    }
    const t0 = process.hrtime.bigint();
    const st = await c.call('status');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.ok(ms < 100, `status took ${ms} ms`);
    assert.equal(st.index.state, 'indexing');
    const r = await c.call('tools/call', { name: 'list_notes', arguments: { limit: 1 } });
    assert.equal(JSON.parse(r.text).total, nnotes);
    assert.equal((await c.call('status')).index.state, 'ready');
    c.close();
    child.kill('SIGTERM');
  });
});

describe('concurrent clients', () => {
  test('8 clients x 200 mixed calls; every acknowledged write lands; the graph matches a fresh index', async () => {
    const files = {};
    for (let i = 0; i < 30; i++) files[`n${i}.md`] = `note ${i} links [[n${(i + 1) % 30}]] and [[T${i % 3}]] #t${i % 5}\n`;
    for (let t = 0; t < 3; t++) files[`T${t}.md`] = `---\ntags: [t0]\n---\n# T${t}\n`;
    const v = makeVault(files);
    vaults.push(v);
    const first = await startDaemon(v, ['-f', '--workers', '6']);
    const sock = socketPath(v);
    const acked = [];
    const fmAcked = new Map();
    const worker = async (k) => {
      const c = await ctlConnect(sock);
      for (let n = 0; n < 200; n++) {
        const t = `T${(k + n) % 3}`;
        if (n % 2 === 0) {
          if (n % 4 === 0) {
            const line = `c${k}-${n}`;
            const r = await c.call('tools/call', { name: 'append_note', arguments: { name: t, text: line } });
            if (!r.isError) acked.push([t, line]);
          } else {
            const r = await c.call('tools/call', { name: 'set_frontmatter', arguments: { name: t, key: `c${k}`, value: String(n) } });
            if (!r.isError) fmAcked.set(`${t}/c${k}`, n);
          }
        } else {
          const reads = [
            ['read_note', { name: t }],
            ['search_notes', { query: 'note', mode: 'name_partial' }],
            ['get_links', { name: `n${n % 30}` }],
            ['get_backlinks', { name: t }],
            ['search_notes', { query: 't0', mode: 'tag' }],
          ];
          const [name, args] = reads[n % reads.length];
          const r = await c.call('tools/call', { name, arguments: args });
          assert.equal(r.isError, false, r.text);
        }
      }
      c.close();
    };
    await Promise.all([...Array(8).keys()].map(worker));
    assert.equal(acked.length, 8 * 50);
    for (let t = 0; t < 3; t++) {
      const text = readNote(v.vault, `T${t}.md`);
      for (const [note, line] of acked)
        if (note === `T${t}`) assert.ok(text.includes(line + '\n') || text.endsWith('\n' + line), `${line} lost`);
      for (const [key, n] of fmAcked) if (key.startsWith(`T${t}/`)) assert.match(text, new RegExp(`^${key.split('/')[1]}: ${n}$`, 'm'));
    }
    // The live graph equals a fresh index of the same files.
    const c = await ctlConnect(sock);
    const live = await c.call('graph');
    c.close();
    // One vaultd per vault folder: the first one goes before the fresh one.
    const firstGone = new Promise((r) => (first.exitCode !== null ? r() : first.once('exit', r)));
    first.kill('SIGTERM');
    await firstGone;
    const fresh = makeVault({});
    vaults.push(fresh);
    const other = spawn(process.env.VAULTD_BIN, ['--no-mount', '-f', '--vault', v.vault, '--socket', path.join(fresh.runtime, 'x.sock')], { env: fresh.env, stdio: 'ignore' });
    let c2;
    for (let i = 0; i < 200 && !c2; i++) {
      try {
        c2 = await ctlConnect(path.join(fresh.runtime, 'x.sock'));
      } catch {
        await sleep(20);
      }
    }
    const rebuilt = await c2.call('graph');
    c2.close();
    other.kill('SIGTERM');
    assert.deepEqual(live, rebuilt);
  });
});

describe('vaultctl', () => {
  test('status, tags, call, violations, tools, check; exit codes', async () => {
    const v = await daemon({
      'Home.md': '---\ntags: [moc]\n---\n[[Plan]] #idea\n',
      'Plan.md': 'plan',
    });
    let r = vaultctl(v, ['status']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /notes: +2/);
    assert.match(r.out, /index: +ready/);
    r = vaultctl(v, ['--json', 'status']);
    assert.equal(JSON.parse(r.out).notes, 2);
    r = vaultctl(v, ['tags']);
    assert.match(r.out, /1 {2}idea/);
    r = vaultctl(v, ['call', 'read_note', 'name=Plan']);
    assert.equal(r.out, 'plan\n');
    r = vaultctl(v, ['call', 'list_notes', 'limit=1']);
    assert.deepEqual(JSON.parse(r.out), { names: ['Home'], total: 2, limit: 1, offset: 0 });
    r = vaultctl(v, ['call', 'update_frontmatter', 'name=Plan', 'updates:={"rating": 5}']);
    assert.equal(r.code, 0, r.err);
    assert.match(readNote(v.vault, 'Plan.md'), /^---\nrating: 5\n---\nplan$/);
    fs.writeFileSync(path.join(v.root, 'body.txt'), 'from a file');
    r = vaultctl(v, ['call', 'update_note', 'name=Home', `content@=${path.join(v.root, 'body.txt')}`]);
    assert.match(readNote(v.vault, 'Home.md'), /from a file$/);
    r = vaultctl(v, ['call', 'add_tag', 'name=Plan', 'tag=brand-new']);
    assert.equal(r.code, 1);
    assert.match(r.err, /Tags not in allowed list/);
    r = vaultctl(v, ['violations']);
    assert.match(r.out, /refused +Plan\.md +vaultctl/);
    r = vaultctl(v, ['--json', 'call', 'read_note', 'name=Nope']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.out).code, -32003);
    r = vaultctl(v, ['call', 'list_notes', 'limit=many']);
    assert.equal(r.code, 2);
    r = vaultctl(v, ['tools']);
    assert.match(r.out, /^read_note\(name: string, offset\?: integer, length\?: integer\)/m);
    // A tool's full help: what get_help says of it, a line a parameter.
    r = vaultctl(v, ['tools', 'list_notes']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^list_notes\(limit: integer = 100, offset\?: integer, folder\?: string\)\n/);
    assert.match(r.out, /^- limit \(integer, 0 to 1000, default 100\): how many names to give; 0: only the total$/m);
    assert.match(r.out, /^- folder \(string\): only notes under this folder$/m);
    r = vaultctl(v, ['--json', 'tools', 'list_notes', 'append_note']);
    const helps = JSON.parse(JSON.parse(vaultctl(v, ['--json', 'call', 'get_help']).out).text);
    assert.deepEqual(JSON.parse(r.out), ['list_notes', 'append_note'].map((n) => helps.find((h) => h.name === n)));
    assert.equal(vaultctl(v, ['tools', 'read_note', 'nope']).code, 2);
    r = vaultctl(v, ['check']);
    assert.equal(r.code, 0);
    assert.match(r.out, /notes: +2/);
    r = vaultctl(v, ['frobnicate']);
    assert.equal(r.code, 2);
    // No daemon: exit 3 (check still works, reading the vault itself).
    const lone = makeVault({ 'x.md': 'x' });
    vaults.push(lone);
    assert.equal(vaultctl(lone, ['status']).code, 3);
    assert.equal(vaultctl(lone, ['call', 'read_note', 'name=x']).code, 3);
    r = vaultctl(lone, ['check']);
    assert.equal(r.code, 0);
    assert.match(r.out, /notes: +1/);
  });
});
