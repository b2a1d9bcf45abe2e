// Every answer is bounded, errors included: a 20 MB argument gets a short
// error, a 5 MB resource is cut, a cut result names only the arguments
// its tool has, and paged lists and read_note in parts reach the end.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, textOf } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});

// A session whose first result (the one with the context block) is spent.
async function session(files, opts) {
  const v = makeVault(files);
  vaults.push(v);
  const client = await mcpClient(v, opts);
  const { tools } = await client.listTools();
  await client.callTool({ name: 'get_help', arguments: {} });
  const schema = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema.properties]));
  return { v, client, schema };
}

const call = (client, name, args = {}) => client.callTool({ name, arguments: args });
const HUGE = 'a'.repeat(20 << 20);

// The note a result appends after the text: "[Result cut: ...]".
const hintOf = (text) => {
  const i = text.lastIndexOf('\n\n[Result cut: ');
  return i < 0 ? null : text.slice(i + 2);
};

// Argument-like words of a hint (limit, offset=…, cursor, length) are
// arguments of the tool.
function namesOnlyRealArgs(hint, props, tool) {
  const words = new Set([...hint.matchAll(/\b(limit|offset|length|cursor|section)\b(?==|\))?/g)].map((m) => m[1]));
  // "read a smaller section" is prose, not an argument.
  if (!/\bsection=/.test(hint)) words.delete('section');
  for (const w of words) assert.ok(w in props, `${tool}: the hint names '${w}', which ${tool} does not take: ${hint}`);
}

describe('bounded errors', () => {
  test('a 20 MB argument gets an error under 1 KiB', async () => {
    const { client } = await session({ 'A.md': '# A\n\nbody\n' });
    const cases = [
      ['read_note', { name: HUGE }],
      ['create_note', { name: HUGE, content: 'x' }],
      ['replace_text', { name: 'A', old_text: HUGE, new_text: 'x' }],
      ['read_note', { name: 'A', [HUGE]: 1 }],
    ];
    for (const [tool, args] of cases) {
      const r = await call(client, tool, args);
      assert.equal(r.isError, true, tool);
      const t = textOf(r);
      assert.ok(Buffer.byteLength(t) < 1024, `${tool}: ${Buffer.byteLength(t)} bytes`);
      assert.match(t, /\(20971520 bytes/, tool);
    }
    assert.match(textOf(await call(client, 'read_note', { name: HUGE })), /name too long \(20971520 bytes; the limit is 4096\)/);
    await assert.rejects(call(client, HUGE), (e) => e.code === -32602 && Buffer.byteLength(e.message) < 1024 && /Unknown tool/.test(e.message));
    // Still serving.
    assert.equal(textOf(await call(client, 'read_note', { name: 'A' })), '# A\n\nbody\n');
    await client.close();
  });
});

describe('bounded results', () => {
  test('resources/read of a 5 MB note is cut and says how to read on', async () => {
    const big = ('0123456789abcdef'.repeat(4) + '\n').repeat(80000); // 5.2 MB
    const { client } = await session({ 'Big.md': big });
    const r = await client.readResource({ uri: 'vault:///Big.md' });
    const text = r.contents[0].text;
    assert.ok(text.length < 262144 + 1024, `${text.length} bytes`);
    assert.ok(big.startsWith(text.slice(0, text.indexOf('\n\n[Resource cut: '))));
    assert.match(text, /\[Resource cut: 262144 of 5200000 bytes shown .*read_note: name "Big\.md", offset=262144 and length\.\]$/);
    await client.close();
  });

  test('a cut result names only arguments its tool takes', async () => {
    const files = { 'Hub.md': '# Hub\n\n## Long\n\n' + 'hub text\n'.repeat(3000) };
    for (let i = 0; i < 300; i++) files[`n${i}.md`] = `[[Hub]] and [[missing target number ${i} with a long name to fill space]] word\n`;
    const { client, schema } = await session(files, { args: ['--max-result', '8192'] });
    const cases = [
      ['find_broken_links', {}, /The rest: call find_broken_links again with offset=(\d+) and limit=\1\./],
      ['get_orphans', { limit: 1000 }, null], // fits: not cut
      ['get_backlinks', { name: 'Hub' }, /get_backlinks has no paging: ask about less/],
      ['search_notes', { query: 'word', mode: 'content', limit: 100 }, /Ask again with limit=\d+ and page on with next_cursor/],
      ['read_note', { name: 'Hub' }, /Read on with read_note offset=8192 \(and length\)\. get_headings shows/],
      ['read_section', { name: 'Hub', section: 'Long' }, /Read a smaller section: get_headings lists/],
    ];
    for (const [tool, args, want] of cases) {
      const r = await call(client, tool, args);
      assert.ok(!r.isError, `${tool}: ${textOf(r)}`);
      const hint = hintOf(textOf(r));
      if (!want) {
        assert.equal(hint, null, tool);
        continue;
      }
      assert.ok(hint, `${tool} was not cut`);
      assert.match(hint, want, tool);
      namesOnlyRealArgs(hint, schema[tool], tool);
    }
    // The cut list says where the rest starts, and that is where it does.
    const first = await call(client, 'find_broken_links');
    const sc = first.structuredContent;
    assert.equal(sc.total, 300);
    assert.equal(sc.next_offset, sc.result.length);
    const rest = await call(client, 'find_broken_links', { offset: sc.next_offset - 1, limit: 2 });
    assert.deepEqual(rest.structuredContent.result[0], sc.result.at(-1));
    assert.ok(!sc.result.some((l) => l.target === rest.structuredContent.result[1].target));
    // A search cut here has no cursor that would skip what was cut.
    assert.equal((await call(client, 'search_notes', { query: 'word', mode: 'content', limit: 100 })).structuredContent.next_cursor, undefined);
    await client.close();
  });

  test('3000 broken links read page by page: each once, to the end', async () => {
    const files = {};
    for (let i = 0; i < 300; i++) {
      let t = '';
      for (let k = 0; k < 10; k++) t += `[[gone ${i}-${k}]]\n`;
      files[`n${String(i).padStart(3, '0')}.md`] = t;
    }
    const { client } = await session(files);
    const seen = new Set();
    let offset = 0;
    let pages = 0;
    while (offset !== undefined) {
      const r = await call(client, 'find_broken_links', { limit: 500, offset });
      assert.ok(!r.isError, textOf(r));
      const sc = r.structuredContent;
      assert.equal(sc.total, 3000);
      for (const l of sc.result) {
        const k = `${l.source}\u0000${l.target}`;
        assert.ok(!seen.has(k), `twice: ${k}`);
        seen.add(k);
      }
      offset = sc.next_offset;
      pages++;
    }
    assert.equal(seen.size, 3000);
    assert.equal(pages, 6);
    await client.close();
  });

  test('read_note in parts makes the note again, byte for byte', async () => {
    let big = '';
    for (let i = 0; big.length < 600000; i++) big += `line ${i}: café 日本 😀\n`;
    const { v, client } = await session({ 'Big.md': big });
    const want = fs.readFileSync(path.join(v.vault, 'Big.md'));
    // Parts that fit: the second block says where the next one starts.
    let got = [];
    let offset = 0;
    for (;;) {
      const r = await call(client, 'read_note', { name: 'Big', offset, length: 100001 });
      assert.ok(!r.isError, textOf(r));
      got.push(Buffer.from(textOf(r)));
      const info = r.content[1].text;
      assert.match(info, new RegExp(` of ${want.length}[;:]`));
      const next = info.match(/offset=(\d+)/);
      if (!next) {
        assert.match(info, /the end of the note/);
        break;
      }
      assert.equal(Number(next[1]), offset + got.at(-1).length);
      offset = Number(next[1]);
    }
    assert.ok(Buffer.concat(got).equals(want));
    // No length: vault-mcp cuts each answer and its note says where on.
    got = [];
    offset = 0;
    for (;;) {
      const r = await call(client, 'read_note', { name: 'Big', offset });
      const text = textOf(r);
      const hint = hintOf(text);
      if (!hint) {
        got.push(Buffer.from(text));
        break;
      }
      const part = Buffer.from(text.slice(0, text.length - hint.length - 2));
      got.push(part);
      const next = Number(hint.match(/offset=(\d+)/)[1]);
      assert.equal(next, offset + part.length);
      offset = next;
    }
    assert.ok(Buffer.concat(got).equals(want));
    await client.close();
  });
});
