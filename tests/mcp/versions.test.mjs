// The safe edit contract: every read gives the note's version, every
// write can be made conditional on it, and an anchor that is not there
// gets an error that shows what is.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { DAILY_N, WRITE_NOTE, makeVault, mcpClient, sleep, textOf, writeCases } from './lib.mjs';

const vaults = [];
after(async () => {
  for (const v of vaults) await v.cleanup();
});
async function session(files) {
  const v = makeVault(files);
  vaults.push(v);
  const client = await mcpClient(v);
  await client.callTool({ name: 'get_help', arguments: {} }); // the context block
  return { v, client };
}
const call = (client, name, args) => client.callTool({ name, arguments: args });
// The version: the first 12 hex digits of the text's git blob id.
const versionOf = (buf) =>
  crypto.createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${buf.length}\0`), buf])).digest('hex').slice(0, 12);
const versionIn = (r) => /^\[Version ([0-9a-f]{12})[ .]/.exec(r.content[1]?.text ?? '')?.[1];

describe('versions and conditional writes', () => {
  test('read_note, read_section and get_note_metadata give the same version, the hash of the bytes', async () => {
    const { v, client } = await session({ 'N.md': '---\ntags: [t]\n---\n# A\n\nbody\n\n## B\n\nmore\n' });
    const bytes = fs.readFileSync(path.join(v.vault, 'N.md'));
    const want = versionOf(bytes);
    assert.equal(versionIn(await call(client, 'read_note', { name: 'N' })), want);
    assert.equal(versionIn(await call(client, 'read_section', { name: 'N', section: 'B' })), want);
    assert.equal((await call(client, 'get_note_metadata', { name: 'N' })).structuredContent.version, want);
    // A part of a long note carries the whole note's version too.
    assert.equal(versionIn(await call(client, 'read_note', { name: 'N', offset: 0, length: 5 })), want);
  });

  test('two clients racing on one note with expected_version: exactly one wins, nothing is lost', async () => {
    const { v, client: a } = await session({ 'Race.md': 'start\n' });
    const b = await mcpClient(v);
    const ver = versionIn(await call(a, 'read_note', { name: 'Race' }));
    assert.equal(versionIn(await call(b, 'read_note', { name: 'Race' })), ver);
    const [ra, rb] = await Promise.all([
      call(a, 'append_note', { name: 'Race', text: 'from A', expected_version: ver }),
      call(b, 'append_note', { name: 'Race', text: 'from B', expected_version: ver }),
    ]);
    const wins = [ra, rb].filter((r) => !r.isError);
    const loses = [ra, rb].filter((r) => r.isError);
    assert.equal(wins.length, 1);
    assert.equal(loses.length, 1);
    const text = fs.readFileSync(path.join(v.vault, 'Race.md'), 'utf8');
    const winner = ra.isError ? 'from B' : 'from A';
    const loser = ra.isError ? 'from A' : 'from B';
    assert.equal(text, `start\n\n${winner}`);
    // The loser is told both versions and what changed.
    const msg = textOf(loses[0]);
    const now = versionOf(Buffer.from(text));
    assert.match(msg, new RegExp(`changed since version '${ver}': it is now version ${now}`));
    assert.match(msg, /Nothing was written/);
    assert.match(msg, new RegExp(`\\+${winner}`));
    // Retrying with the new version works: nothing lost.
    const retry = await call(ra.isError ? a : b, 'append_note', { name: 'Race', text: loser, expected_version: now });
    assert.ok(!retry.isError, textOf(retry));
    assert.equal(fs.readFileSync(path.join(v.vault, 'Race.md'), 'utf8'), `start\n\n${winner}\n\n${loser}`);
    await b.close();
  });

  test('every write tool refuses a stale expected_version and writes nothing', async () => {
    const { v, client } = await session({ 'Tags.md': '---\ntags: [alpha, beta]\n---\nx\n', 'N.md': '---\ntags: [alpha]\n---\n# Top\n\nline one\n\n## Part\n\ntext\n' });
    // A version in the history to restore (the first recording may still
    // be under way).
    let some;
    for (let i = 0; i < 100 && !some; i++) {
      some = /^- ([0-9a-f]{7}) /m.exec(textOf(await call(client, 'get_note_history', { name: 'N' })))?.[1];
      if (!some) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(some, 'a recorded version');
    const stale = versionOf(Buffer.from('another text\n'));
    // The periodic notes' tools name a date, not a note: no version.
    const { undo_changes: _u, periodic_note: _p, append_periodic_note: _a, ...cases } = writeCases();
    const CASES = { ...cases, restore_note_version: { name: 'N', version: some } };
    const { tools } = await client.listTools();
    // Every write to a named note takes one; undo_changes names none.
    for (const t of tools.filter((x) => !x.annotations?.readOnlyHint)) {
      const named = 'name' in t.inputSchema.properties || 'old_name' in t.inputSchema.properties;
      assert.equal(named, !['undo_changes', 'rename_folder', 'periodic_note', 'append_periodic_note'].includes(t.name), t.name);
      if (named) assert.ok(CASES[t.name], t.name);
      assert.equal(t.inputSchema.properties.expected_version?.type, named ? 'string' : undefined, t.name);
    }
    const before = fs.readFileSync(path.join(v.vault, 'N.md'), 'utf8');
    for (const [name, args] of Object.entries(CASES)) {
      const r = await call(client, name, { ...args, expected_version: stale });
      assert.equal(r.isError, true, `${name}: ${textOf(r)}`);
      assert.match(textOf(r), /changed since version/, name);
      assert.equal(fs.readFileSync(path.join(v.vault, 'N.md'), 'utf8'), before, name);
    }
    // A folder has no version: rename_folder takes none and moves nothing.
    fs.mkdirSync(path.join(v.vault, 'F'));
    const rf = await call(client, 'rename_folder', { old_path: 'F', new_path: 'G', expected_version: stale });
    assert.equal(rf.isError, true);
    assert.match(textOf(rf), /Unknown argument 'expected_version' for rename_folder/);
    assert.ok(fs.existsSync(path.join(v.vault, 'F')));
    // A malformed one says what a version is.
    const bad = await call(client, 'append_note', { name: 'N', text: 'x', expected_version: 'v1' });
    assert.match(textOf(bad), /12 hex digits/);
    // The right one (or a prefix of 7 or more digits) lets it through.
    const ver = versionOf(Buffer.from(before));
    const ok = await call(client, 'append_note', { name: 'N', text: 'y', expected_version: ver.slice(0, 8) });
    assert.ok(!ok.isError, textOf(ok));
  });

  test('an anchor that is not there: the error shows the nearest lines or the headings', async () => {
    const { client } = await session({ 'N.md': '# Title\n\nThe Quick brown fox\njumps over\n\n## Part\n\nthe lazy dog sleeps\n' });
    const r1 = await call(client, 'replace_text', { name: 'N', old_text: 'quick brown fox', new_text: 'x' });
    assert.match(textOf(r1), /not found.*\n {2}line 3: The Quick brown fox/);
    const r2 = await call(client, 'insert_text', { name: 'N', text: 'x', after: 'lazy cat' });
    assert.match(textOf(r2), /not found.*\n {2}line 8: the lazy dog sleeps/);
    const r3 = await call(client, 'update_section', { name: 'N', section: 'Parts', content: 'x' });
    assert.match(textOf(r3), /Its headings:\n {2}line 1: # Title\n {2}line 6: ## Part/);
    const r4 = await call(client, 'replace_text', { name: 'N', old_text: 'zzzz qqqq', new_text: 'x' });
    assert.match(textOf(r4), /No line of the note looks like it/);
  });
});

describe('dry runs', () => {
  test('every write tool with dry_run: true writes nothing and shows the diff the write then makes', async () => {
    const NOTE = WRITE_NOTE;
    // Rename and delete touch other files too: tested apart, below.
    // periodic_note changes no note that is there.
    const { rename_note: _r, delete_note: _d, undo_changes: _u, periodic_note: _p, ...CASES } = writeCases();
    const { v, client } = await session({ 'Tags.md': '---\ntags: [alpha, beta]\n---\nx\n', ...DAILY_N });
    const file = path.join(v.vault, 'N.md');
    const historyIds = async () =>
      [...textOf(await call(client, 'get_note_history', { name: 'N' })).matchAll(/^- ([0-9a-f]{7}) /gm)].map((m) => m[1]);
    // Each change is its own version: wait until the history has it.
    const recorded = async (prev) => {
      let now = await historyIds();
      for (let i = 0; i < 200 && now[0] === prev; i++) {
        await new Promise((r) => setTimeout(r, 25));
        now = await historyIds();
      }
      return now;
    };
    for (const [name, args0] of Object.entries(CASES)) {
      const top = (await historyIds())[0];
      const w = await call(client, 'create_note', { name: 'N', content: NOTE, overwrite: true });
      assert.ok(!w.isError, textOf(w));
      await recorded(top);
      let args = args0;
      if (name === 'restore_note_version') {
        const prev = (await historyIds())[0];
        assert.ok(!(await call(client, 'append_note', { name: 'N', text: 'later' })).isError);
        const ids = await recorded(prev);
        args = { name: 'N', version: ids[1] };
      }
      const before = fs.readFileSync(file, 'utf8');
      const dry = await call(client, name, { ...args, dry_run: true });
      assert.ok(!dry.isError, `${name}: ${textOf(dry)}`);
      assert.equal(fs.readFileSync(file, 'utf8'), before, `${name} wrote on a dry run`);
      const diff = dry.structuredContent?.diff ?? textOf(dry).replace(/^Dry run: nothing was written\. The change would be:\n/, '');
      if (dry.structuredContent) assert.equal(dry.structuredContent.dry_run, true, name);
      assert.match(diff, /^--- a\/N\.md\n\+\+\+ b\/N\.md\n@@ /, name);
      // The real write, then the history's own diff of it: the same.
      const ids = await historyIds();
      const real = await call(client, name, args);
      assert.ok(!real.isError, `${name}: ${textOf(real)}`);
      const now = await recorded(ids[0]);
      const d = textOf(await call(client, 'diff_note_versions', { name: 'N', from_version: now[1], to_version: now[0] }));
      assert.ok(d.endsWith(diff), `${name}:\n${d}\n--- dry run:\n${diff}`);
    }
  });

  test('rename_note and delete_note with dry_run: every file they would touch, each with the diff the history then shows', async () => {
    const { v, client } = await session({
      'N.md': '# N\n\nSee [[N#N]] and [[Other]].\n',
      'A.md': 'Links to [[N]] and [[N|the note]].\n',
      'B.md': 'Also [[N#N]] here.\n',
      'Other.md': 'x\n',
    });
    const ids = async (name) => [...textOf(await call(client, 'get_note_history', { name })).matchAll(/^- ([0-9a-f]{7}) /gm)].map((m) => m[1]);
    const versions = async (name, n) => {
      let x = await ids(name);
      for (let i = 0; i < 200 && x.length < n; i++) {
        await sleep(25);
        x = await ids(name);
      }
      assert.ok(x.length >= n, `${name}: ${x.length} versions`);
      return x;
    };
    const files = () => Object.fromEntries(['N.md', 'A.md', 'B.md'].map((f) => [f, fs.readFileSync(path.join(v.vault, f), 'utf8')]));
    // The history then has a diff to compare: each file's last two versions.
    const sameAsHistory = async (f) => {
      const name = (f.to ?? f.path).replace(/\.md$/, '');
      const h = await versions(name, 2);
      const d = textOf(await call(client, 'diff_note_versions', { name, from_version: h[1], to_version: h[0] }));
      assert.ok(d.endsWith(`\n\n${f.diff}`) || (d.includes('the same text') && !f.diff.includes('@@')), `${f.path}:\n${d}\n--- dry run:\n${f.diff}`);
    };
    await versions('A', 1);
    const before = files();
    const dry = await call(client, 'rename_note', { old_name: 'N', new_name: 'Sub/N2', dry_run: true });
    assert.ok(!dry.isError, textOf(dry));
    const plan = dry.structuredContent.files;
    assert.deepEqual(plan.map((f) => [f.path, f.to]), [['N.md', 'Sub/N2.md'], ['A.md', undefined], ['B.md', undefined]]);
    assert.equal(dry.structuredContent.diff, plan.map((f) => f.diff).join(''));
    assert.match(plan[0].diff, /^--- a\/N\.md\n\+\+\+ b\/Sub\/N2\.md\n@@ .*\n(.*\n)*-See \[\[N#N\]\]/);
    assert.match(plan[1].diff, /^\+Links to \[\[N2\]\] and \[\[N2\|the note\]\]\.$/m);
    assert.deepEqual(files(), before, 'a dry run writes nothing');
    const real = await call(client, 'rename_note', { old_name: 'N', new_name: 'Sub/N2' });
    assert.ok(!real.isError, textOf(real));
    for (const f of plan) await sameAsHistory(f);

    // Delete: the note goes to .trash as it is; its linking notes are
    // rewritten (the policy marks links to a deleted note).
    const text = fs.readFileSync(path.join(v.vault, 'Sub/N2.md'), 'utf8');
    const dd = await call(client, 'delete_note', { name: 'Sub/N2', dry_run: true });
    assert.ok(!dd.isError, textOf(dd));
    const gone = dd.structuredContent.files;
    assert.deepEqual(gone.map((f) => [f.path, f.to]), [['Sub/N2.md', '.trash/Sub/N2.md'], ['A.md', undefined], ['B.md', undefined]]);
    assert.equal(gone[0].diff, '--- a/Sub/N2.md\n+++ b/.trash/Sub/N2.md\n');
    assert.equal(dd.structuredContent.diff, gone.map((f) => f.diff).join(''));
    assert.ok(fs.existsSync(path.join(v.vault, 'Sub/N2.md')), 'a dry run deletes nothing');
    const del = await call(client, 'delete_note', { name: 'Sub/N2' });
    assert.ok(!del.isError, textOf(del));
    assert.equal(fs.readFileSync(path.join(v.vault, '.trash/Sub/N2.md'), 'utf8'), text);
    for (const f of gone.slice(1)) {
      const h = await versions(f.path.replace(/\.md$/, ''), 3);
      const d = textOf(await call(client, 'diff_note_versions', { name: f.path, from_version: h[1], to_version: h[0] }));
      assert.ok(d.endsWith(`\n\n${f.diff}`), `${f.path}:\n${d}\n--- dry run:\n${f.diff}`);
    }
  });
});
