// Watchers on the mount see every change, whoever made it: MCP tools,
// vaultctl, link rewrites after a rename, the trash, a restore, and
// changes made in the vault folder outside vaultd. Node's fs.watch (what
// editors use) and inotifywait (when installed) on the mount get the
// matching event for the right name within a second; an editor that
// reloads a note on its change event never drops a concurrent MCP append.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeVault, mcpClient, sleep, textOf, vaultctl } from './lib.mjs';

const HAVE_FUSE = fs.existsSync('/dev/fuse') && process.getuid() === 0;
const HAVE_INOTIFYWAIT = spawnSync('sh', ['-c', 'command -v inotifywait']).status === 0;
const mounted = (dir) => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir);

describe('watchers on the mount', { skip: !HAVE_FUSE && 'needs root and /dev/fuse' }, () => {
  let v, mnt, daemon, client, watchers, iw;
  const events = []; // {src, dir, type, name, t}
  const iwLines = [];

  before(async () => {
    v = makeVault({
      'A.md': 'A links to [[B]].\n',
      'B.md': 'b\n',
      'Keep.md': 'keep\n',
      'sub/S.md': 's\n',
    });
    mnt = path.join(v.root, 'mnt');
    fs.mkdirSync(mnt);
    daemon = spawn(process.env.VAULTD_BIN, ['--vault', v.vault, '--mount', mnt, '-f'], {
      env: v.env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (let i = 0; i < 400 && !mounted(mnt); i++) await sleep(25);
    assert.ok(mounted(mnt));
    // An editor has read the vault: the kernel knows every name.
    for (const f of ['A.md', 'B.md', 'Keep.md', 'sub/S.md']) fs.readFileSync(path.join(mnt, f));
    watchers = ['', 'sub'].map((d) =>
      fs.watch(path.join(mnt, d), (type, name) => events.push({ src: 'fs.watch', dir: d, type, name, t: Date.now() })),
    );
    if (HAVE_INOTIFYWAIT) {
      iw = spawn('inotifywait', ['-m', '-r', '--format', '%e %w%f', mnt], { stdio: ['ignore', 'pipe', 'pipe'] });
      let buf = '';
      iw.stdout.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          iwLines.push(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
      await new Promise((r) => iw.stderr.on('data', (d) => String(d).includes('established') && r()));
    }
    client = await mcpClient(v);
  });

  after(async () => {
    watchers?.forEach((w) => w.close());
    iw?.kill();
    await client?.close();
    if (daemon && daemon.exitCode === null) {
      daemon.kill('SIGTERM');
      await new Promise((r) => daemon.once('exit', r));
    }
    if (mounted(mnt)) spawnSync('umount', ['-l', mnt]);
    await v.cleanup();
  });

  // Wait (at most 1 s) for fs.watch events on each of the names, and for
  // inotifywait lines matching each regexp.
  // Only events after the last mark() count.
  let since = 0;
  const mark = () => {
    since = events.length;
    iwLines.splice(0);
  };
  async function expect(what, names, iwWant = []) {
    const t0 = Date.now();
    for (;;) {
      const fresh = events.slice(since);
      const missing = names.filter(([dir, name]) => !fresh.some((e) => e.dir === dir && e.name === name));
      const iwMissing = HAVE_INOTIFYWAIT ? iwWant.filter((re) => !iwLines.some((l) => re.test(l))) : [];
      if (!missing.length && !iwMissing.length) return;
      if (Date.now() - t0 > 1000)
        assert.fail(
          `${what}: no event within 1 s for ${JSON.stringify(missing)} ${iwMissing.join(' ')}\n` +
            `fs.watch saw ${JSON.stringify(events.slice(-8))}\ninotifywait saw ${iwLines.slice(-8).join(' | ')}`,
        );
      await sleep(10);
    }
  }
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args });
    assert.ok(!r.isError, textOf(r));
    return r;
  };

  test('MCP writes: append, update, create, rename with referrers, delete', async () => {
    mark();
    await call('append_note', { name: 'A', text: 'appended' });
    await expect('append', [['', 'A.md']], [/^(MODIFY|ATTRIB) .*\/A\.md$/]);
    mark();
    await call('update_note', { name: 'Keep', content: 'kept, new\n' });
    await expect('update', [['', 'Keep.md']], [/^(MODIFY|ATTRIB) .*\/Keep\.md$/]);
    assert.equal(fs.readFileSync(path.join(mnt, 'Keep.md'), 'utf8'), 'kept, new\n');
    mark();
    await call('create_note', { name: 'New', content: 'new note\n' });
    await expect('create', [['', 'New.md']], [/^CREATE .*\/New\.md$/]);
    mark();
    await call('rename_note', { old_name: 'B', new_name: 'C' });
    await expect(
      'rename',
      [
        ['', 'B.md'],
        ['', 'C.md'],
        ['', 'A.md'],
      ],
      [/^MOVED_FROM .*\/B\.md$/, /^MOVED_TO .*\/C\.md$/, /^(MODIFY|ATTRIB) .*\/A\.md$/],
    );
    assert.match(fs.readFileSync(path.join(mnt, 'A.md'), 'utf8'), /\[\[C\]\]/);
    fs.readFileSync(path.join(mnt, 'New.md'));
    mark();
    await call('delete_note', { name: 'New' });
    await expect('delete', [['', 'New.md']], [/^DELETE .*\/New\.md$/]);
    assert.ok(!fs.existsSync(path.join(mnt, 'New.md')));
  });

  test('a deleted note the kernel had forgotten still gets its delete event', async () => {
    mark();
    await call('create_note', { name: 'Unread', content: 'never opened\n' });
    await expect('create', [['', 'Unread.md']]);
    mark();
    await call('delete_note', { name: 'Unread' });
    await expect('delete', [['', 'Unread.md']], [/^DELETE .*\/Unread\.md$/]);
  });

  test('restores: a deleted note comes back, an existing note goes back', async () => {
    const versions = async (name) => {
      const h = textOf(await call('get_note_history', { name }));
      return [...h.matchAll(/^- ([0-9a-f]{7}) /gm)].map((m) => m[1]);
    };
    // New was deleted above: restoring its last version recreates it.
    const gone = await versions('New');
    assert.ok(gone.length >= 1, 'history of the deleted note');
    mark();
    await call('restore_note_version', { name: 'New', version: gone.at(-1) });
    await expect('restore of a deleted note', [['', 'New.md']], [/^CREATE .*\/New\.md$/]);
    assert.equal(fs.readFileSync(path.join(mnt, 'New.md'), 'utf8'), 'new note\n');
    // Keep was updated above: its oldest version is the original text.
    const kept = await versions('Keep');
    mark();
    await call('restore_note_version', { name: 'Keep', version: kept.at(-1) });
    await expect('restore of an existing note', [['', 'Keep.md']], [/^(MODIFY|ATTRIB) .*\/Keep\.md$/]);
    assert.equal(fs.readFileSync(path.join(mnt, 'Keep.md'), 'utf8'), 'keep\n');
  });

  test('vaultctl writes', async () => {
    mark();
    const r = vaultctl(v, ['call', 'append_note', 'name=Keep', 'text=from vaultctl']);
    assert.equal(r.code, 0, r.err);
    await expect('vaultctl append', [['', 'Keep.md']], [/^(MODIFY|ATTRIB) .*\/Keep\.md$/]);
  });

  test('changes in the vault folder outside vaultd', async () => {
    mark();
    fs.writeFileSync(path.join(v.vault, 'sub/Out.md'), 'made outside\n');
    await expect('outside create', [['sub', 'Out.md']], [/^CREATE .*\/sub\/Out\.md$/]);
    mark();
    fs.appendFileSync(path.join(v.vault, 'sub/S.md'), 'more\n');
    await expect('outside modify', [['sub', 'S.md']], [/^(MODIFY|ATTRIB) .*\/sub\/S\.md$/]);
    assert.equal(fs.readFileSync(path.join(mnt, 'sub/S.md'), 'utf8'), 's\nmore\n');
    mark();
    fs.renameSync(path.join(v.vault, 'sub/S.md'), path.join(v.vault, 'sub/S2.md'));
    await expect(
      'outside rename',
      [
        ['sub', 'S.md'],
        ['sub', 'S2.md'],
      ],
      // A move outside is seen in the folder as one name going and
      // another coming.
      [/^(MOVED_FROM|DELETE) .*\/sub\/S\.md$/, /^(MOVED_TO|CREATE) .*\/sub\/S2\.md$/],
    );
    fs.readFileSync(path.join(mnt, 'sub/Out.md'));
    mark();
    fs.unlinkSync(path.join(v.vault, 'sub/Out.md'));
    await expect('outside delete', [['sub', 'Out.md']], [/^DELETE .*\/sub\/Out\.md$/]);
  });

  test('an editor that reloads on change never drops a concurrent MCP append', async () => {
    const file = path.join(mnt, 'Keep.md');
    let buffer = fs.readFileSync(file, 'utf8');
    let saved = buffer;
    let typing = 0;
    // The editor: on a change it did not make, reload; then type a line
    // and save the whole buffer, as editors do.
    const w = fs.watch(mnt, (type, name) => {
      if (name !== 'Keep.md') return;
      const now = fs.readFileSync(file, 'utf8');
      if (now === saved) return;
      buffer = now;
      setTimeout(() => {
        buffer += `typed ${++typing}\n`;
        saved = buffer;
        fs.writeFileSync(file, buffer);
      }, 100);
    });
    try {
      for (let i = 1; i <= 5; i++) {
        await call('append_note', { name: 'Keep', text: `mcp ${i}` });
        await sleep(350);
      }
      await sleep(300);
    } finally {
      w.close();
    }
    const text = fs.readFileSync(path.join(v.vault, 'Keep.md'), 'utf8');
    for (let i = 1; i <= 5; i++) assert.match(text, new RegExp(`mcp ${i}`), text);
    assert.ok(typing >= 5, `the editor typed ${typing} times`);
  });
});
