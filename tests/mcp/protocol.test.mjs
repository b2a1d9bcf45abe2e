// vault-mcp spoken to line by line: malformed input, batches, calls before
// initialize, version negotiation, the 2026-07-28 (stateless) era,
// resources, prompts, completion, logging, progress, cancellation, exit.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN, RawMcp, makeVault, mcpClient, modernMeta, sleep, stopDaemon, textOf, writeNote } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});
function vault(files = { 'a.md': 'alpha [[b]]', 'b.md': 'beta #tag' }) {
  const v = makeVault(files);
  vaults.push(v);
  return v;
}

describe('malformed input', () => {
  test('bad JSON, invalid UTF-8, wrong shapes: JSON-RPC errors; the session goes on', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    m.send('{not json');
    const pe = await m.next((x) => x.error?.code === -32700);
    assert.equal(pe.id, null); // JSON-RPC: "id": null when it could not be read
    m.sendRaw(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d, 0x0a])); // {"\xff\xfe"}
    assert.match((await m.next((x) => x.error?.code === -32700)).error.message, /UTF-8/);
    m.send('[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
    const batch = await m.next((x) => x.error?.code === -32600);
    assert.match(batch.error.message, /batches are taken only in a session of protocol version 2025-03-26/);
    assert.equal(batch.id, null);
    m.send('"just a string"');
    await m.next((x) => x.error?.code === -32600 && /object/.test(x.error.message));
    m.send({ jsonrpc: '1.0', id: 5, method: 'ping' });
    assert.equal((await m.byId(5)).error.code, -32600);
    m.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: [1, 2] });
    assert.equal((await m.byId(6)).error.code, -32602);
    m.send({ jsonrpc: '2.0', id: 7, method: 'no/such/method' });
    assert.equal((await m.byId(7)).error.code, -32601);
    m.send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'read_note', arguments: { name: 'a\u0000b' } } });
    assert.equal((await m.byId(8)).error.code, -32602);
    m.send({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'read_note', arguments: 'x' } });
    assert.equal((await m.byId(9)).error.code, -32602);
    // Still serving.
    const r = await m.request(10, 'tools/call', { name: 'read_note', arguments: { name: 'a' } });
    assert.match(r.result.content[0].text, /^alpha \[\[b\]\]/);
    await m.close();
  });

  test('a message over the size limit is refused; the next one is served', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    const big = Buffer.alloc(33 * 1024 * 1024, 0x61); // 33 MiB, one line
    m.sendRaw(big);
    const e = await m.next((x) => x.error?.code === -32600, 30000);
    assert.match(e.error.message, /too long/);
    m.sendRaw(Buffer.from('bbbb\n'));
    assert.deepEqual((await m.request(1, 'ping')).result, {});
    await m.close();
  });

  test('JSON nested deeper than 1000 levels: "too deeply nested"; the session goes on', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    m.send('['.repeat(1002) + ']'.repeat(1002));
    const e = await m.next((x) => x.error && x.id === null);
    assert.equal(e.error.code, -32600);
    assert.match(e.error.message, /too deeply nested/);
    // Deep arguments inside a real request: answered under its id.
    let deep = 'x';
    for (let i = 0; i < 1002; i++) deep = { k: deep };
    m.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_note', arguments: { name: 'a', deep } } });
    const r3 = await m.byId(3);
    assert.equal(r3.error.code, -32600);
    assert.match(r3.error.message, /too deeply nested/);
    const r = await m.request(4, 'tools/call', { name: 'read_note', arguments: { name: 'a' } });
    assert.match(r.result.content[0].text, /^alpha \[\[b\]\]/);
    await m.close();
  });

  test('calls before initialize are refused; ping works', async () => {
    const m = new RawMcp(vault());
    assert.deepEqual((await m.request(1, 'ping')).result, {});
    const r = await m.request(2, 'tools/list', {});
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /not initialized/);
    await m.initialize();
    assert.ok((await m.request(3, 'tools/list', {})).result.tools.length > 0);
    await m.close();
  });

  test('an invalid cursor is -32602', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    assert.equal((await m.request(1, 'resources/list', { cursor: 'bogus' })).error.code, -32602);
    assert.equal((await m.request(2, 'tools/list', { cursor: 'bogus' })).error.code, -32602);
    const r = await m.request(3, 'tools/call', { name: 'search_notes', arguments: { query: 'a', cursor: 'forged' } });
    assert.equal(r.result.isError, true);
    assert.match(r.result.content[0].text, /Invalid cursor/);
    await m.close();
  });
});

describe('batches, a second initialize, unknown refs', () => {
  test('2025-03-26: a batch is answered with one array; notifications get nothing', async () => {
    const m = new RawMcp(vault());
    await m.initialize('2025-03-26');
    m.send([
      { jsonrpc: '2.0', id: 'p', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'r', method: 'tools/call', params: { name: 'read_note', arguments: { name: 'a' } } },
      { jsonrpc: '2.0', id: 'x', method: 'no/such/method' },
      42,
      { jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'r', version: '1' } } },
    ]);
    const arr = await m.next((x) => Array.isArray(x));
    assert.equal(arr.length, 5);
    const by = (id) => arr.find((x) => x.id === id);
    assert.deepEqual(by('p').result, {});
    assert.match(by('r').result.content[0].text, /^alpha \[\[b\]\]/);
    assert.equal(by('x').error.code, -32601);
    assert.equal(by('i').error.code, -32600);
    assert.match(by('i').error.message, /initialize cannot be part of a batch/);
    assert.equal(by(null).error.code, -32600);
    // Only notifications: no answer at all; an empty batch is invalid.
    m.send([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    m.send([]);
    const empty = await m.next((x) => x.error?.code === -32600);
    assert.match(empty.error.message, /empty batch/);
    assert.deepEqual((await m.request(9, 'ping')).result, {});
    assert.equal(m.lines.length, 0, m.lines.join('\n'));
    await m.close();
  });

  test('other versions refuse batches; initialize twice is refused', async () => {
    for (const ver of ['2024-11-05', '2025-06-18', '2025-11-25']) {
      const m = new RawMcp(vault());
      await m.initialize(ver);
      m.send([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
      const e = await m.next((x) => x.error?.code === -32600);
      assert.equal(e.id, null);
      const again = await m.request(2, 'initialize', { protocolVersion: ver, capabilities: {}, clientInfo: { name: 'r', version: '1' } });
      assert.equal(again.error.code, -32600);
      assert.match(again.error.message, /initialized already/);
      await m.close();
    }
  });

  test('completion for an unknown prompt or template, subscribe to an unknown note: errors', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    const p = await m.request(1, 'completion/complete', { ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'name', value: 'a' } });
    assert.equal(p.error.code, -32602);
    const t = await m.request(2, 'completion/complete', { ref: { type: 'ref/resource', uri: 'other:///{x}' }, argument: { name: 'path', value: 'a' } });
    assert.equal(t.error.code, -32602);
    const ok = await m.request(3, 'completion/complete', { ref: { type: 'ref/prompt', name: 'summarize_note' }, argument: { name: 'name', value: 'a' } });
    assert.ok(ok.result.completion.values.includes('a'));
    const sub = await m.request(4, 'resources/subscribe', { uri: 'vault:///missing.md' });
    assert.equal(sub.error.code, -32002);
    const bad = await m.request(5, 'resources/subscribe', { uri: 'https://example.com/' });
    assert.equal(bad.error.code, -32002);
    assert.deepEqual((await m.request(6, 'resources/subscribe', { uri: 'vault:///a.md' })).result, {});
    await m.close();
  });
});

describe('version negotiation', () => {
  for (const ver of ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']) {
    test(`initialize ${ver} is echoed`, async () => {
      const m = new RawMcp(vault());
      const r = await m.initialize(ver);
      assert.equal(r.result.protocolVersion, ver);
      const caps = r.result.capabilities;
      assert.equal('completions' in caps, ver !== '2024-11-05');
      const t = await m.request(1, 'tools/call', { name: 'list_notes', arguments: {} });
      const structured = ver >= '2025-06-18';
      assert.equal('structuredContent' in t.result, structured);
      await m.close();
    });
  }
  test('an unknown version gets the latest', async () => {
    const m = new RawMcp(vault());
    assert.equal((await m.initialize('2099-01-01')).result.protocolVersion, '2025-11-25');
    await m.close();
  });
});

describe('2026-07-28 (stateless)', () => {
  test('server/discover, per-request _meta, resultType, -32022', async () => {
    const m = new RawMcp(vault());
    const d = await m.request(1, 'server/discover', { _meta: modernMeta() });
    assert.equal(d.result.resultType, 'complete');
    const ALL = ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
    assert.deepEqual(d.result.supportedVersions, ALL);
    assert.ok(d.result.capabilities.tools);
    assert.ok(d.result.ttlMs >= 0 && d.result.cacheScope);
    assert.equal(d.result._meta['io.modelcontextprotocol/serverInfo'].name, 'vault-mcp');
    // No initialize needed.
    const tl = await m.request(2, 'tools/list', { _meta: modernMeta() });
    assert.equal(tl.result.resultType, 'complete');
    assert.ok(tl.result.tools.find((t) => t.name === 'read_note'));
    const c = await m.request(3, 'tools/call', { _meta: modernMeta(), name: 'read_note', arguments: { name: 'b' } });
    assert.equal(c.result.resultType, 'complete');
    assert.match(c.result.content[0].text, /^beta #tag/);
    const old = await m.request(4, 'tools/list', { _meta: modernMeta('2023-01-01') });
    assert.equal(old.error.code, -32022);
    assert.equal(old.error.data.requested, '2023-01-01');
    // The same list as server/discover; each of them is accepted: this
    // one per request, the others in a session opened with initialize.
    assert.deepEqual(old.error.data.supported, ALL);
    const legacy = await m.request(41, 'tools/list', { _meta: modernMeta('2025-06-18') });
    assert.equal(legacy.error.code, -32600);
    assert.match(legacy.error.message, /2025-06-18 is spoken in a session opened with initialize/);
    for (const ver of ALL.slice(1)) {
      const m2 = new RawMcp(vault());
      assert.equal((await m2.initialize(ver)).result.protocolVersion, ver);
      await m2.close();
    }
    const noCaps = await m.request(5, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
    assert.equal(noCaps.error.code, -32602);
    const noMeta = await m.request(6, 'server/discover', {});
    assert.equal(noMeta.error.code, -32602);
    const gone = await m.request(7, 'logging/setLevel', { _meta: modernMeta(), level: 'info' });
    assert.equal(gone.error.code, -32601);
    const rd = await m.request(8, 'resources/read', { _meta: modernMeta(), uri: 'vault:///nope.md' });
    assert.equal(rd.error.code, -32602);
    await m.close();
  });

  test('subscriptions/listen: acknowledged, then updates for the resource', async () => {
    const v = vault();
    const m = new RawMcp(v);
    m.send({
      jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen',
      params: { _meta: modernMeta(), notifications: { resourcesListChanged: true, resourceSubscriptions: ['vault:///a.md'] } },
    });
    const ack = await m.next((x) => x.method === 'notifications/subscriptions/acknowledged');
    assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], 'L');
    await m.request(1, 'tools/call', { _meta: modernMeta(), name: 'append_note', arguments: { name: 'a', text: 'more' } });
    const up = await m.next((x) => x.method === 'notifications/resources/updated');
    assert.equal(up.params.uri, 'vault:///a.md');
    assert.equal(up.params._meta['io.modelcontextprotocol/subscriptionId'], 'L');
    await m.request(2, 'tools/call', { _meta: modernMeta(), name: 'create_note', arguments: { name: 'c' } });
    await m.next((x) => x.method === 'notifications/resources/list_changed');
    m.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'L' } });
    const end = await m.byId('L');
    assert.equal(end.result.resultType, 'complete');
    await m.close();
  });
});

describe('resources, prompts, completion, logging', () => {
  test('notes as resources: paginated list, templates, read, subscribe', async () => {
    const files = {};
    for (let i = 0; i < 150; i++) files[`n${String(i).padStart(3, '0')}.md`] = `note ${i}`;
    files['Sub Dir/Café.md'] = 'accent';
    const v = vault(files);
    const client = await mcpClient(v);
    let all = [];
    let cursor;
    do {
      const r = await client.listResources(cursor ? { cursor } : {});
      all = all.concat(r.resources);
      cursor = r.nextCursor;
    } while (cursor);
    assert.equal(all.length, 151);
    assert.equal(new Set(all.map((r) => r.uri)).size, 151);
    const cafe = all.find((r) => r.name === 'Café');
    assert.equal(cafe.uri, 'vault:///Sub%20Dir/Café.md');
    assert.equal(cafe.mimeType, 'text/markdown');
    const read = await client.readResource({ uri: cafe.uri });
    assert.equal(read.contents[0].text, 'accent');
    const t = await client.listResourceTemplates();
    assert.equal(t.resourceTemplates[0].uriTemplate, 'vault:///{+path}');
    await assert.rejects(client.readResource({ uri: 'vault:///missing.md' }), (e) => e.code === -32002);
    // Subscribe, then change the note from another client: updated arrives.
    const updated = new Promise((resolve) =>
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
    await client.subscribeResource({ uri: 'vault:///n001.md' });
    const other = await mcpClient(v);
    await other.callTool({ name: 'append_note', arguments: { name: 'n001', text: 'changed elsewhere' } });
    assert.equal(await updated, 'vault:///n001.md');
    await client.unsubscribeResource({ uri: 'vault:///n001.md' });
    await other.close();
    await client.close();
  });

  test('prompts and completion of note names', async () => {
    const v = vault({ 'Meeting 2024.md': 'm', 'Meetup.md': 'x', 'Other.md': 'o', 'dir/Meeting notes.md': 'n' });
    const client = await mcpClient(v);
    const { prompts } = await client.listPrompts();
    assert.deepEqual(prompts.map((p) => p.name).sort(), ['suggest_links', 'summarize_note', 'vault_overview']);
    const p = await client.getPrompt({ name: 'summarize_note', arguments: { name: 'Meetup' } });
    assert.match(p.messages[0].content.text, /'Meetup'/);
    await assert.rejects(client.getPrompt({ name: 'summarize_note', arguments: {} }), (e) => e.code === -32602);
    const c = await client.complete({ ref: { type: 'ref/prompt', name: 'summarize_note' }, argument: { name: 'name', value: 'meet' } });
    assert.deepEqual(c.completion.values, ['Meeting 2024', 'Meeting notes', 'Meetup']);
    const cr = await client.complete({ ref: { type: 'ref/resource', uri: 'vault:///{+path}' }, argument: { name: 'path', value: 'dir/' } });
    assert.deepEqual(cr.completion.values, ['dir/Meeting notes.md']);
    await client.close();
  });

  test('logging/setLevel: changes arrive as notifications/message', async () => {
    const v = vault();
    const m = new RawMcp(v);
    await m.initialize();
    assert.equal((await m.request(1, 'logging/setLevel', { level: 'nonsense' })).error.code, -32602);
    assert.deepEqual((await m.request(2, 'logging/setLevel', { level: 'info' })).result, {});
    await m.request(3, 'tools/call', { name: 'append_note', arguments: { name: 'a', text: 'x' } });
    const log = await m.next((x) => x.method === 'notifications/message');
    assert.equal(log.params.level, 'info');
    assert.equal(log.params.data.path, 'a.md');
    assert.equal(log.params.data.source, 'mcp:append_note');
    await m.close();
  });
});

describe('long calls: progress and cancellation', () => {
  test('progress notifications while a call on a big vault is running', async () => {
    const v = vault({});
    const gen = spawnSync(process.env.GEN_VAULT_BIN, [v.vault, '30000', '7'], { encoding: 'utf8' });
    assert.equal(gen.status, 0, gen.stderr);
    const m = new RawMcp(v);
    await m.initialize();
    m.send({
      jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { _meta: { progressToken: 'tok' }, name: 'search_notes', arguments: { query: 'zephyr river', mode: 'content' } },
    });
    const p = await m.next((x) => x.method === 'notifications/progress', 60000);
    assert.equal(p.params.progressToken, 'tok');
    assert.ok(p.params.progress > 0);
    const r = await m.byId(1, 120000);
    assert.ok(r.result.structuredContent.total >= 0);
    await m.close();
  });

  test('a cancelled request gets no response; the session goes on', async () => {
    const v = vault({});
    spawnSync(process.env.GEN_VAULT_BIN, [v.vault, '20000', '3']);
    const m = new RawMcp(v);
    await m.initialize();
    m.send({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'search_notes', arguments: { query: 'nebula', mode: 'content' } } });
    m.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 41, reason: 'test' } });
    const pong = await m.request(42, 'ping');
    assert.deepEqual(pong.result, {});
    await sleep(3000);
    assert.ok(!m.lines.some((l) => JSON.parse(l).id === 41), 'no response for a cancelled request');
    await m.close();
  });
});

describe('process life', () => {
  test('EOF on stdin: answers what is pending, then exits 0', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    m.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_notes', arguments: {} } });
    m.proc.stdin.end();
    const r = await m.byId(1);
    assert.ok(r.result);
    assert.equal((await m.exited).code, 0);
  });

  test('the exit notification ends it cleanly', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    m.send({ jsonrpc: '2.0', method: 'exit' });
    assert.equal((await m.exited).code, 0);
  });

  test('OBSIDIAN_VAULT_PATH not set', () => {
    const r = spawnSync(BIN.mcp, [], { env: { PATH: process.env.PATH }, encoding: 'utf8', input: '' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /OBSIDIAN_VAULT_PATH not set/);
  });

  test('stdout carries only JSON-RPC messages', async () => {
    const m = new RawMcp(vault());
    await m.initialize();
    await m.request(1, 'tools/call', { name: 'get_help', arguments: {} });
    await m.close();
    for (const l of m.lines) JSON.parse(l);
    assert.match(m.stderr, /starting .*vaultd/); // logs went to stderr
  });

  test('vault-mcp starts vaultd once and a second session reuses it', async () => {
    const v = vault();
    const a = await mcpClient(v);
    const b = await mcpClient(v);
    const sock = fs.readdirSync(path.join(v.runtime, 'vaultd')).filter((f) => f.endsWith('.sock'));
    assert.equal(sock.length, 1);
    await a.callTool({ name: 'create_note', arguments: { name: 'shared' } });
    assert.ok(!(await b.callTool({ name: 'read_note', arguments: { name: 'shared' } })).isError);
    await a.close();
    await b.close();
  });

  test('a daemon that dies is restarted; the next call works', async () => {
    const v = vault();
    const client = await mcpClient(v);
    await client.callTool({ name: 'list_notes', arguments: {} });
    await stopDaemon(v);
    await sleep(300);
    let r;
    for (let i = 0; i < 20; i++) {
      try {
        r = await client.callTool({ name: 'read_note', arguments: { name: 'a' } });
        if (!r.isError) break;
      } catch {}
      await sleep(100);
    }
    assert.match(textOf(r), /^alpha/);
    writeNote(v.vault, 'z.md', 'z');
    await client.close();
  });
});
