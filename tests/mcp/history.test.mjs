// Note history end to end: a note created and edited through MCP, edited
// through the mount by a shell, edited in the vault folder by another
// program, renamed with mv through the mount, then restored through MCP.
// Every step is a version with its author; diffs are exact; git reads the
// same log; a user's own .git in the vault is untouched.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeVault, mcpClient, sleep, textOf } from './lib.mjs';

const HAVE_FUSE = fs.existsSync('/dev/fuse');
const HAVE_GIT = spawnSync('sh', ['-c', 'command -v git']).status === 0;
const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});

const mounted = (dir) => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir);

// md5 of every file under dir, and the folder's own mtime.
function fingerprint(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(`${path.relative(dir, p)} ${fs.readFileSync(p).toString('base64')}`);
    }
  };
  walk(dir);
  return out.join('\n') + `\nmtime ${fs.statSync(dir).mtimeMs}`;
}

const authors = (hist) => [...hist.matchAll(/^- [0-9a-f]{7} \(\S+\) by (\S+)$/gm)].map((m) => m[1]);
const ids = (hist) => [...hist.matchAll(/^- ([0-9a-f]{7}) /gm)].map((m) => m[1]);

describe('note history', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  test('MCP, the mount, an outside program, mv and a restore: every step, with its author', async () => {
    const v = makeVault({ 'Home.md': '# Home\n\nSee [[Journal]].\n' });
    const mnt = path.join(v.root, 'mnt');
    fs.mkdirSync(mnt);
    // The user's own repository, which vaultd must never touch.
    fs.mkdirSync(path.join(v.vault, '.git/refs/heads'), { recursive: true });
    fs.writeFileSync(path.join(v.vault, '.git/HEAD'), 'ref: refs/heads/master\n');
    fs.writeFileSync(path.join(v.vault, '.git/config'), '[core]\n\tbare = false\n');
    const before = fingerprint(path.join(v.vault, '.git'));

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
    assert.match(log, /history: 1 note new or changed since the last run/);

    const client = await mcpClient(v);
    cleanups.push(() => client.close());
    const call = async (name, args) => {
      const r = await client.callTool({ name, arguments: args });
      assert.ok(!r.isError, `${name}: ${textOf(r)}`);
      return textOf(r).split('\n\n---\n## ')[0];
    };
    const history = () => call('get_note_history', { name: 'Journal' });

    await call('create_note', { name: 'Journal', content: 'day one\n' });
    await call('append_note', { name: 'Journal', text: 'day two' });
    // A shell writing through the mount (append_note left no newline).
    const sh = spawnSync('sh', ['-c', `printf 'day three\\n' >> "${path.join(mnt, 'Journal.md')}"`]);
    assert.equal(sh.status, 0, String(sh.stderr));
    // Another program writing in the vault folder itself.
    fs.writeFileSync(path.join(v.vault, 'Journal.md'), 'day one\n\nday two\nday three\nday four, outside\n');
    let h = '';
    for (let i = 0; i < 300 && !/by external/.test(h); i++) {
      await sleep(50);
      h = await history();
    }
    assert.match(h, /by external/);
    // mv through the mount: a rename (links rewritten in the same commit).
    const mv = spawnSync('mv', [path.join(mnt, 'Journal.md'), path.join(mnt, 'Diary.md')]);
    assert.equal(mv.status, 0, String(mv.stderr));
    assert.match(fs.readFileSync(path.join(v.vault, 'Home.md'), 'utf8'), /\[\[Diary\]\]/);

    h = await call('get_note_history', { name: 'Diary' });
    assert.deepEqual(authors(h), ['mount:mv', 'external', 'mount:sh', 'mcp:append_note', 'mcp:create_note']);
    assert.match(h, /by mount:mv\n {2}Update 2 notes: Diary, Home\n/);
    assert.match(h, /by mcp:create_note\n {2}Update note: Journal\n/);
    const [renamed, outside, shell, appended, created] = ids(h);

    // Exact versions and diffs.
    let t = await call('get_note_version', { name: 'Diary', version: created });
    assert.ok(t.startsWith(`# Journal (version ${created})\n\n**Path:** Journal\n**Tags:** (none)\n**Version:** ${created}\n`), t);
    assert.ok(t.endsWith('\n---\n\nday one\n'), t);
    t = await call('diff_note_versions', { name: 'Diary', from_version: appended, to_version: shell });
    assert.equal(
      t,
      `Diff for Diary (${appended} \u2192 ${shell}):\n\n+1 additions, -1 deletions\n\n` +
        '--- a/Journal.md\n+++ b/Journal.md\n@@ -1,3 +1,3 @@\n day one\n \n-day two\n\\ No newline at end of file\n+day twoday three\n',
    );
    t = await call('diff_note_versions', { name: 'Diary', from_version: outside, to_version: renamed });
    assert.match(t, /^\+0 additions, -0 deletions\n\n\(the two versions have the same text\)/m);

    // Restore: a new version, through the guard.
    assert.equal(await call('restore_note_version', { name: 'Diary', version: created }), `Restored note 'Diary' to version ${created}`);
    assert.equal(fs.readFileSync(path.join(v.vault, 'Diary.md'), 'utf8'), 'day one\n');
    assert.equal(fs.readFileSync(path.join(mnt, 'Diary.md'), 'utf8'), 'day one\n');
    h = await call('get_note_history', { name: 'Diary' });
    assert.equal(authors(h)[0], 'mcp:restore_note_version');
    assert.equal(ids(h).length, 6);

    // git agrees; the user's .git is as it was.
    if (HAVE_GIT) {
      const git = spawnSync('git', ['--git-dir', path.join(v.vault, '.vaultd/history.git'), 'log', '--format=%an|%s'], { encoding: 'utf8' });
      assert.equal(git.status, 0, git.stderr);
      assert.deepEqual(git.stdout.trim().split('\n'), [
        'mcp:restore_note_version|Update note: Diary',
        'mount:mv|Update 2 notes: Diary, Home',
        'external|Update note: Journal',
        'mount:sh|Update note: Journal',
        'mcp:append_note|Update note: Journal',
        'mcp:create_note|Update note: Journal',
        'vaultd|Initial state: 1 note',
      ]);
      const fsck = spawnSync('git', ['--git-dir', path.join(v.vault, '.vaultd/history.git'), 'fsck', '--strict'], { encoding: 'utf8' });
      assert.equal(fsck.status, 0, fsck.stderr + fsck.stdout);
    }
    assert.equal(fingerprint(path.join(v.vault, '.git')), before);

    // vaultctl prints the same.
    const ctl = spawnSync(process.env.VAULTCTL_BIN, ['history', 'Diary'], { env: v.env, encoding: 'utf8' });
    assert.equal(ctl.status, 0, ctl.stderr);
    assert.deepEqual(authors(ctl.stdout), authors(h));
    const show = spawnSync(process.env.VAULTCTL_BIN, ['show', `Diary@${created}`], { env: v.env, encoding: 'utf8' });
    assert.equal(show.status, 0, show.stderr);
    assert.ok(show.stdout.endsWith('\n---\n\nday one\n'), show.stdout);
    const bad = spawnSync(process.env.VAULTCTL_BIN, ['show', 'Diary@zzzz'], { env: v.env, encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr + bad.stdout, /Invalid version 'zzzz'/);
  });
});
