// Undoing a session: every change an MCP session made (edits, a rename
// that rewrote links, a delete, a create) is listed with its versions and
// reverted, except where Obsidian (a write through the mount) or another
// session changed the note afterwards: those are conflicts, untouched,
// with both diffs. vaultctl undo does the same from the shell.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, sleep, textOf, vaultctl } from './lib.mjs';

const HAVE_FUSE = fs.existsSync('/dev/fuse');
const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});

const mounted = (dir) => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir);
const versionOf = (text) =>
  crypto.createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${Buffer.byteLength(text)}\0`), Buffer.from(text)])).digest('hex').slice(0, 12);
const sessionOf = (client) => /This is session (\w+)/.exec(client.getInstructions())[1];

const NOTES = {
  'Home.md': 'See [[Plan]] and [[Old]].\n',
  'Plan.md': '# Plan\n\nstep one\n',
  'Old.md': 'old text\n',
  'Notes.md': 'notes\n',
  'Shared.md': 'shared\n',
  'Mine.md': 'mine\n',
};

describe('undo a session', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  test('every note a session touched comes back; a note Obsidian or another session changed since is a conflict', async () => {
    const v = makeVault(NOTES);
    const mnt = path.join(v.root, 'mnt');
    fs.mkdirSync(mnt);
    let log = '';
    const daemon = spawn(process.env.VAULTD_BIN, ['--vault', v.vault, '--mount', mnt, '-f', '--grace-ms', '300'], {
      env: v.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    daemon.stderr.on('data', (d) => (log += d));
    const exited = new Promise((r) => daemon.once('exit', r));
    cleanups.push(async () => {
      if (daemon.exitCode === null) {
        daemon.kill('SIGTERM');
        await exited;
      }
      if (mounted(mnt)) spawnSync('umount', ['-l', mnt]);
      await v.cleanup();
    });
    for (let i = 0; i < 400 && !mounted(mnt); i++) await sleep(25);
    assert.ok(mounted(mnt), 'mounted: ' + log);
    for (let i = 0; i < 400 && !/history: /.test(log); i++) await sleep(25);

    const a = await mcpClient(v);
    const b = await mcpClient(v);
    cleanups.push(() => a.close(), () => b.close());
    const call = async (client, name, args) => {
      const r = await client.callTool({ name, arguments: args });
      assert.ok(!r.isError, `${name}: ${textOf(r)}`);
      return r;
    };
    const read = (rel) => fs.readFileSync(path.join(v.vault, rel), 'utf8');
    const sa = sessionOf(a);
    assert.notEqual(sa, sessionOf(b), 'each session its own id');

    // Session A: an edit, a rename (Home's link follows), a delete, a
    // create, and edits of two notes others change afterwards.
    await call(a, 'append_note', { name: 'Mine', text: 'from A' });
    await call(a, 'rename_note', { old_name: 'Plan', new_name: 'Projects/Roadmap' });
    assert.equal(read('Home.md'), 'See [[Roadmap]] and [[Old]].\n');
    await call(a, 'delete_note', { name: 'Old' });
    await call(a, 'create_note', { name: 'New', content: 'brand new, see [[Roadmap]]\n' });
    await call(a, 'append_note', { name: 'Shared', text: 'from A' });
    await call(a, 'append_note', { name: 'Notes', text: 'from A' });
    const afterA = { notes: read('Notes.md') };
    // Then Obsidian writes Shared through the mount, session B writes Notes.
    fs.appendFileSync(path.join(mnt, 'Shared.md'), '\nfrom Obsidian\n');
    await call(b, 'append_note', { name: 'Notes', text: 'from B' });
    const later = { shared: read('Shared.md'), notes: read('Notes.md') };
    assert.match(later.shared, /from Obsidian/);

    // list_changes: this session's by default, newest first, with the
    // versions of the text before and after each change.
    const list = (await call(a, 'list_changes', {})).structuredContent;
    assert.equal(list.session, sa);
    const ch = list.changes;
    assert.deepEqual(ch.map((c) => [c.tool, c.change, c.note]), [
      ['append_note', 'changed', 'Notes.md'],
      ['append_note', 'changed', 'Shared.md'],
      ['create_note', 'created', 'New.md'],
      ['delete_note', 'changed', 'Home.md'],
      ['delete_note', 'deleted', 'Old.md'],
      ['rename_note', 'changed', 'Home.md'],
      ['rename_note', 'renamed', 'Projects/Roadmap.md'],
      ['append_note', 'changed', 'Mine.md'],
    ]);
    assert.ok(ch.every((c) => c.session === sa && /^\d{4}-\d\d-\d\dT/.test(c.time)));
    assert.equal(ch[6].from, 'Plan.md');
    assert.deepEqual([ch[0].before, ch[0].after], [versionOf(NOTES['Notes.md']), versionOf(afterA.notes)]);
    assert.deepEqual([ch[2].before, ch[4].after], ['', '']);
    // Paged: two at a time, the same list.
    const paged = [];
    let cursor;
    do {
      const p = (await call(a, 'list_changes', { limit: 2, ...(cursor ? { cursor } : {}) })).structuredContent;
      paged.push(...p.changes);
      cursor = p.next_cursor;
    } while (cursor);
    assert.deepEqual(paged, ch);
    // B's own list has its one change; a list since a time has both.
    assert.deepEqual((await call(b, 'list_changes', {})).structuredContent.changes.map((c) => c.note), ['Notes.md']);
    const since = (await call(b, 'list_changes', { since: '2000-01-01T00:00:00Z', limit: 500 })).structuredContent.changes;
    assert.deepEqual(since.slice(0, 2).map((c) => c.session), [sessionOf(b), sa]);

    // A dry run: what would be undone, with diffs, and the conflicts.
    const files = () => fs.readdirSync(v.vault, { recursive: true }).filter((f) => f.endsWith('.md')).sort().map((f) => [f, read(f)]);
    const before = files();
    const dry = (await call(a, 'undo_changes', { session: sa, dry_run: true })).structuredContent;
    assert.deepEqual(files(), before, 'a dry run writes nothing');
    assert.equal(dry.dry_run, true);
    assert.deepEqual(dry.undone.map((u) => [u.action, u.from, u.note]).sort(), [
      ['moved to .trash', undefined, 'New.md'],
      ['recreated', undefined, 'Old.md'],
      ['renamed back', 'Projects/Roadmap.md', 'Plan.md'],
      ['restored', undefined, 'Home.md'],
      ['restored', undefined, 'Mine.md'],
    ]);
    assert.equal(dry.diff, dry.undone.map((u) => u.diff).join(''));
    const home = dry.undone.find((u) => u.note === 'Home.md').diff;
    assert.match(home, /^-See \[\[Roadmap\]\] and \[\[Old \(deleted\)\]\]\.\n\+See \[\[Plan\]\] and \[\[Old\]\]\.$/m);
    assert.deepEqual(dry.conflicts.map((c) => c.note).sort(), ['Notes.md', 'Shared.md']);
    const shared = dry.conflicts.find((c) => c.note === 'Shared.md');
    assert.match(shared.why, /another writer changed it after/);
    assert.match(shared.changes_diff, /^\+from A$/m);
    assert.match(shared.later_diff, /^\+from Obsidian$/m);
    assert.match(dry.conflicts.find((c) => c.note === 'Notes.md').later_diff, /^\+from B$/m);

    // The undo itself, from the shell: conflicts make it exit 1.
    const u = vaultctl(v, ['--vault', v.vault, 'undo', '--session', sa]);
    assert.equal(u.code, 1, u.err);
    assert.match(u.out, /^renamed back: Projects\/Roadmap\.md -> Plan\.md$/m);
    assert.match(u.out, /^conflict, left alone: Shared\.md: another writer changed it after/m);
    for (const [rel, text] of Object.entries(NOTES)) {
      if (rel === 'Shared.md' || rel === 'Notes.md') continue;
      assert.equal(read(rel), text, rel);
    }
    assert.equal(read('Shared.md'), later.shared, "Obsidian's change is kept");
    assert.equal(read('Notes.md'), later.notes, "session B's change is kept");
    assert.ok(!fs.existsSync(path.join(v.vault, 'Projects/Roadmap.md')));
    assert.ok(!fs.existsSync(path.join(v.vault, 'New.md')));
    assert.equal(read('.trash/New.md'), 'brand new, see [[Roadmap]]\n');
    // Each undo is a new version, by its writer.
    let h = '';
    for (let i = 0; i < 200 && !/by vaultctl/.test(h); i++) {
      h = textOf(await b.callTool({ name: 'get_note_history', arguments: { name: 'Mine' } }));
      if (!/by vaultctl/.test(h)) await sleep(25);
    }
    assert.match(h, /^- [0-9a-f]{7} \(\S+\) by vaultctl$/m);

    // Again: nothing left to undo; the conflicts stay conflicts.
    const again = vaultctl(v, ['--vault', v.vault, '--json', 'undo', '--session', sa]);
    const r = JSON.parse(again.out);
    assert.deepEqual(r.undone, []);
    assert.deepEqual(r.unchanged.sort(), ['Home.md', 'Mine.md', 'New.md', 'Old.md', 'Plan.md']);
    assert.deepEqual(r.conflicts.map((c) => c.note).sort(), ['Notes.md', 'Shared.md']);

    // Bad input: a clear error, nothing done.
    const bad = await a.callTool({ name: 'undo_changes', arguments: { session: '../x' } });
    assert.equal(bad.isError, true);
    assert.match(textOf(bad), /Invalid session/);
    const none = await a.callTool({ name: 'undo_changes', arguments: {} });
    assert.match(textOf(none), new RegExp(`this session is ${sa}`));
    assert.equal(vaultctl(v, ['--vault', v.vault, 'undo']).code, 2);
    assert.equal(vaultctl(v, ['--vault', v.vault, 'undo', '--since', 'yesterday']).code, 1);
  });

  test("an undo in the session itself is the session's own: undone again, it stays undone", async () => {
    const v = makeVault({ 'A.md': 'a\n' });
    cleanups.push(() => v.cleanup());
    const c = await mcpClient(v);
    cleanups.push(() => c.close());
    const s = sessionOf(c);
    const call = async (name, args) => {
      const r = await c.callTool({ name, arguments: args });
      assert.ok(!r.isError, `${name}: ${textOf(r)}`);
      return r.structuredContent;
    };
    await call('append_note', { name: 'A', text: 'one' });
    await call('create_note', { name: 'B', content: 'b\n' });
    assert.equal((await call('undo_changes', { session: s })).undone.length, 2);
    assert.equal(fs.readFileSync(path.join(v.vault, 'A.md'), 'utf8'), 'a\n');
    assert.ok(!fs.existsSync(path.join(v.vault, 'B.md')));
    // The undo is listed as this session's change too.
    assert.equal((await call('list_changes', {})).changes[0].tool, 'undo_changes');
    const again = await call('undo_changes', { session: s });
    assert.deepEqual([again.undone, again.conflicts], [[], []]);
    // A change after the undo is undone on its own.
    await call('append_note', { name: 'A', text: 'two' });
    assert.deepEqual((await call('undo_changes', { session: s })).undone.map((u) => u.note), ['A.md']);
    assert.equal(fs.readFileSync(path.join(v.vault, 'A.md'), 'utf8'), 'a\n');
  });
});
