// The guarded mount end to end: editors' save patterns (Node in place,
// temp + rename; real vim, neovim and emacs), the refusal they see and the
// note that stays, renames and deletes that keep links, gio trash, changes
// made in the vault folder itself, and kill -9 during writes.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ctlConnect, makeVault, sleep, socketPath } from './lib.mjs';

const HAVE_FUSE = fs.existsSync('/dev/fuse');
const GRACE = 400;
const mounts = [];
after(async () => {
  for (const m of mounts) await m.stop();
});

// Retry an assertion until it holds (timing differs under sanitizers).
async function eventually(fn, ms = 8000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > end) throw e;
      await sleep(100);
    }
  }
}

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const mounted = (dir) => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir);

// A vault served by vaultd with its mount; m.mnt is the mount point.
async function mountVault(files, extra = []) {
  const v = makeVault(files);
  const mnt = path.join(v.root, 'mnt');
  fs.mkdirSync(mnt);
  const m = { ...v, mnt, daemon: null };
  m.start = async () => {
    m.daemon = spawn(process.env.VAULTD_BIN, ['--vault', v.vault, '--mount', mnt, '-f', '--grace-ms', String(GRACE), ...extra], {
      env: v.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    m.log = '';
    m.exited = new Promise((r) => m.daemon.once('exit', r));
    m.daemon.stderr.on('data', (d) => {
      m.log += d;
      if (process.env.SHOW_VAULTD_LOG) process.stderr.write(d);
    });
    // Mounted and answering (a dead mount left by a crash is mounted too).
    const live = () => {
      try {
        return mounted(mnt) && fs.readdirSync(mnt) && true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 400 && !live(); i++) {
      if (m.daemon.exitCode !== null) throw new Error('vaultd exited: ' + m.log);
      await sleep(25);
    }
    assert.ok(live(), 'mounted');
  };
  m.stop = async () => {
    if (m.daemon && m.daemon.exitCode === null && m.daemon.signalCode === null) {
      m.daemon.kill('SIGTERM');
      await m.exited;
    }
    if (mounted(mnt)) spawnSync('umount', ['-l', mnt]);
    await v.cleanup();
  };
  m.ctl = async (method, params) => {
    const c = await ctlConnect(socketPath(v));
    try {
      return await c.call(method, params);
    } finally {
      c.close();
    }
  };
  m.tool = async (name, args = {}) => m.ctl('tools/call', { name, arguments: args });
  m.back = (rel) => fs.readFileSync(path.join(v.vault, rel), 'utf8');
  m.inMnt = (rel) => path.join(mnt, rel);
  mounts.push(m);
  await m.start();
  return m;
}

const NOTES = {
  'Target.md': '---\ntags: [idea]\n---\n# Target\n\nOld text.\n',
  'Linker.md': 'See [[Target]] and [[Target|alias]] and [[Target#Target]].\n',
};

async function refusedAndKept(m, rel, before, token) {
  assert.equal(m.back(rel), before, 'the note keeps its old text');
  assert.equal(fs.readFileSync(m.inMnt(rel), 'utf8'), before, 'and the mount shows it');
  const rej = fs.readdirSync(path.join(m.vault, '.vaultd/rejected'));
  assert.ok(rej.some((f) => fs.readFileSync(path.join(m.vault, '.vaultd/rejected', f), 'utf8').includes(token)), 'refused text saved');
  const v = await m.tool('list_violations', { limit: 5 });
  assert.ok(v.structured.violations.some((x) => x.message.includes(`['${token}']`) && x.action === 'refused'));
}

async function linksIntact(m) {
  // No spurious rewrite: the linking note is untouched, backlinks stand.
  assert.equal(m.back('Linker.md'), NOTES['Linker.md']);
  const bl = await m.tool('get_backlinks', { name: 'Target' });
  assert.equal(bl.structured.exists, true);
  assert.deepEqual(bl.structured.backlinks.map((b) => b.name), ['Linker']);
}

describe('editors and scripts writing through the mount', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  test('in place (O_TRUNC write, as VS Code, neovim and shell redirection do)', async () => {
    const m = await mountVault(NOTES);
    const p = m.inMnt('Target.md');
    fs.writeFileSync(p, '---\ntags: [idea]\n---\n# Target\n\nNew text.\n');
    assert.match(m.back('Target.md'), /New text/);
    assert.match(fs.readFileSync(p, 'utf8'), /New text/);
    // The search index took the write before close() returned.
    const found = await m.tool('search_notes', { query: '"new text"', mode: 'fulltext' });
    assert.deepEqual(found.structured.results.map((r) => r.path), ['Target.md']);
    const gone = await m.tool('search_notes', { query: '"old text"', mode: 'fulltext' });
    assert.equal(gone.structured.total, 0);
    const before = m.back('Target.md');
    assert.throws(() => fs.writeFileSync(p, before + 'bad #nodebrandnew\n'), (e) => e.code === 'EPERM');
    await refusedAndKept(m, 'Target.md', before, 'nodebrandnew');
    const v = await m.tool('list_violations', { limit: 1 });
    assert.match(v.structured.violations[0].source, /^mount:/);
    await linksIntact(m);
    // Appends (O_APPEND) are judged the same way.
    assert.throws(() => fs.appendFileSync(p, '#anotherbrandnew\n'), (e) => e.code === 'EPERM');
    fs.appendFileSync(p, 'appended #idea\n');
    assert.ok(m.back('Target.md').endsWith('New text.\nappended #idea\n'));
  });

  test('temp file + rename over the note (VS Code, vim backupcopy=no)', async () => {
    const m = await mountVault(NOTES);
    const tmp = m.inMnt('.Target.md.tmp');
    fs.writeFileSync(tmp, '---\ntags: [idea]\n---\nReplaced.\n');
    fs.renameSync(tmp, m.inMnt('Target.md'));
    assert.equal(m.back('Target.md'), '---\ntags: [idea]\n---\nReplaced.\n');
    assert.equal(fs.readFileSync(m.inMnt('Target.md'), 'utf8'), '---\ntags: [idea]\n---\nReplaced.\n');
    const before = m.back('Target.md');
    fs.writeFileSync(tmp, 'bad #renamebrandnew\n');
    assert.throws(() => fs.renameSync(tmp, m.inMnt('Target.md')), (e) => e.code === 'EPERM');
    await refusedAndKept(m, 'Target.md', before, 'renamebrandnew');
    assert.ok(fs.existsSync(tmp), "the editor's temp file is still there");
    // Its descriptor still open (write-only, as writeFileSync's is until
    // the kernel's release of it arrives, which may come after the
    // rename): refused the same way.
    const fd = fs.openSync(tmp, 'w');
    fs.writeSync(fd, 'bad #openrenamebrandnew\n');
    assert.throws(() => fs.renameSync(tmp, m.inMnt('Target.md')), (e) => e.code === 'EPERM');
    fs.closeSync(fd);
    await refusedAndKept(m, 'Target.md', before, 'openrenamebrandnew');
    await linksIntact(m);
  });

  // Backups are skipped for files under /tmp by default (vim's
  // 'backupskip', emacs' backup-enable-predicate): turned on here, so the
  // editors really rename the note away and write a new one.
  // Each editor gets keys on stdin that quit it with an error status when
  // a save failed (an editor that cannot save waits for the user).
  const editors = [
    ['vim, in place (backupskip matches /tmp)', 'vim', '\n:cq\n',
      (file, line) => ['vim', ['-Nu', 'NONE', '-i', 'NONE', '-n', '-c', `$put ='${line}'`, '-c', 'wq', file]]],
    ['vim backupcopy=auto (4913 probe, x.md -> x.md~, new x.md, fsync)', 'vim', '\n:cq\n',
      (file, line) => ['vim', ['-Nu', 'NONE', '-i', 'NONE', '-n', '-c', 'set backupskip= backupcopy=auto writebackup',
        '-c', `$put ='${line}'`, '-c', 'wq', file]]],
    ['neovim', 'nvim', 'cq\n',
      (file, line) => ['nvim', ['-es', '-u', 'NONE', '-i', 'NONE', '-c', 'set backupskip=', '-c', `$put ='${line}'`, '-c', 'wq', file]]],
    ['emacs (lock symlink .#x.md, x.md -> x.md~ on the first save)', 'emacs', '',
      (file, line) => ['emacs', ['--batch', '-Q', '--eval',
        `(progn (setq backup-enable-predicate (lambda (_f) t)) (find-file "${file}") (goto-char (point-max)) (insert "${line}\\n") (save-buffer))`]]],
  ];
  for (const [label, cmd, keys, argv] of editors) {
    test(label, { skip: !has(cmd) && `${cmd} not installed` }, async () => {
      const m = await mountVault(NOTES);
      const run = (line) => {
        const [c, a] = argv(m.inMnt('Target.md'), line);
        return spawnSync(c, a, {
          cwd: m.mnt,
          encoding: 'utf8',
          timeout: 30000,
          input: keys,
          env: { ...process.env, HOME: m.root, TERM: 'dumb' },
        });
      };
      const ok = run('added by an editor #idea');
      assert.equal(ok.status, 0, ok.stderr);
      assert.match(m.back('Target.md'), /added by an editor #idea/);
      await sleep(GRACE + 300); // a save is not a delete, even after the grace period
      assert.match(m.back('Target.md'), /^---\ntags: \[idea\]/);
      await linksIntact(m);
      const before = m.back('Target.md');
      const bad = run(`refused ${cmd} #${cmd}brandnew`);
      assert.equal(bad.signal, null, `${cmd} finished`);
      assert.notEqual(bad.status, 0, `${cmd} must report the refusal`);
      await sleep(GRACE + 300);
      await refusedAndKept(m, 'Target.md', before, `${cmd}brandnew`);
      await linksIntact(m);
      const st = await m.tool('read_note', { name: 'Target' });
      assert.equal(st.text, before);
    });
  }
});

describe('renames and deletes through the mount', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  const files = {
    'B.md': '# B\n\nSee [c](C.md).\n',
    'C.md': 'c',
    'A.md': [
      '[[B]] [[B|alias]] [[B#B]] ![[B]] [[B.md]] [md](B.md) [md2](<B.md>)',
      '```', '[[B]] in code stays', '```', '',
    ].join('\n'),
    'dir/D.md': '[[../B]] and [up](../B.md)\n',
  };

  test('mv rewrites every link form in the other notes', async () => {
    const m = await mountVault(files);
    fs.mkdirSync(m.inMnt('archive'));
    fs.renameSync(m.inMnt('B.md'), m.inMnt('archive/B 2.md'));
    assert.equal(m.back('A.md'), [
      '[[B 2]] [[B 2|alias]] [[B 2#B]] ![[B 2]] [[B 2.md]] [md](archive/B%202.md) [md2](<archive/B 2.md>)',
      '```', '[[B]] in code stays', '```', '',
    ].join('\n'));
    // The shortest form that leads there: the name, unique.
    assert.equal(m.back('dir/D.md'), '[[B 2]] and [up](../archive/B%202.md)\n');
    // The moved note's own relative link still reaches C.md.
    assert.match(m.back('archive/B 2.md'), /\[c\]\(\.\.\/C\.md\)/);
    const bl = await m.tool('get_backlinks', { name: 'B 2' });
    assert.deepEqual(bl.structured.backlinks.map((b) => b.name).sort(), ['A', 'D']);
    // The mount shows the rewritten text at once.
    assert.match(fs.readFileSync(m.inMnt('A.md'), 'utf8'), /^\[\[B 2\]\]/);
  });

  test('mv among same-name notes: every other link keeps its note', async () => {
    const m = await mountVault({
      'A/Dup.md': 'a\n',
      'B/Sub/Dup.md': 'b [[Spec]]\n',
      'B/Sub/Spec.md': 'spec b\n',
      'C/Spec.md': 'spec c\n',
      'C/From C.md': '[[Dup]] and [[Sub/Dup|moved]]\n',
    });
    fs.renameSync(m.inMnt('B/Sub/Dup.md'), m.inMnt('C/Dup.md'));
    // C's [[Dup]] meant A/Dup; the moved note's [[Spec]] meant B/Sub's.
    assert.equal(m.back('C/From C.md'), '[[A/Dup]] and [[C/Dup|moved]]\n');
    assert.equal(m.back('C/Dup.md'), 'b [[Sub/Spec]]\n');
    assert.equal(fs.readFileSync(m.inMnt('C/From C.md'), 'utf8'), '[[A/Dup]] and [[C/Dup|moved]]\n');
    assert.equal(fs.readFileSync(m.inMnt('C/Dup.md'), 'utf8'), 'b [[Sub/Spec]]\n');
    const out = await m.tool('get_links', { name: 'From C', direction: 'out' });
    assert.deepEqual(out.structured.outgoing, ['A/Dup', 'C/Dup']);
  });

  test('mv of a folder rewrites the path links to what it holds, nested folders and attachments too', async () => {
    const m = await mountVault({
      'Proj/Plan.md': '# Plan\n[r](../Root.md) ![[diagram.png]] [[Sub/Spec]]\n',
      'Proj/Sub/Spec.md': '[[Plan]] [up](../Plan.md)\n',
      'Proj/diagram.png': 'PNG',
      'Spec.md': 'a namesake outside\n',
      'Root.md': '[[Proj/Plan]] [[Proj/Sub/Spec]] ![[Proj/diagram.png]] [s](Proj/Sub/Spec.md)\n',
    });
    // Read once: the kernel holds the old texts.
    assert.match(fs.readFileSync(m.inMnt('Proj/Plan.md'), 'utf8'), /\.\.\/Root/);
    fs.mkdirSync(m.inMnt('Archive'));
    fs.renameSync(m.inMnt('Proj'), m.inMnt('Archive/Project'));
    // Spec has a namesake: the shortest end of its path only it has.
    const root = '[[Plan]] [[Sub/Spec]] ![[diagram.png]] [s](Archive/Project/Sub/Spec.md)\n';
    const plan = '# Plan\n[r](../../Root.md) ![[diagram.png]] [[Sub/Spec]]\n';
    assert.equal(m.back('Root.md'), root);
    assert.equal(m.back('Archive/Project/Plan.md'), plan);
    assert.equal(fs.readFileSync(m.inMnt('Root.md'), 'utf8'), root);
    assert.equal(fs.readFileSync(m.inMnt('Archive/Project/Plan.md'), 'utf8'), plan);
    assert.equal(fs.readFileSync(m.inMnt('Archive/Project/diagram.png'), 'utf8'), 'PNG');
    assert.ok(!fs.existsSync(m.inMnt('Proj')));
    assert.deepEqual((await m.tool('find_broken_links')).structured.result, []);
    // The shell's mv of a nested folder, back to the top.
    const mv = spawnSync('mv', [m.inMnt('Archive/Project/Sub'), m.inMnt('Sub2')], { encoding: 'utf8' });
    assert.equal(mv.status, 0, mv.stderr);
    assert.equal(m.back('Sub2/Spec.md'), '[[Plan]] [up](../Archive/Project/Plan.md)\n');
    assert.equal(m.back('Root.md'), '[[Plan]] [[Sub2/Spec]] ![[diagram.png]] [s](Sub2/Spec.md)\n');
    assert.equal(fs.readFileSync(m.inMnt('Sub2/Spec.md'), 'utf8'), '[[Plan]] [up](../Archive/Project/Plan.md)\n');
    assert.equal(fs.readFileSync(m.inMnt('Archive/Project/Plan.md'), 'utf8'), '# Plan\n[r](../../Root.md) ![[diagram.png]] [[Sub2/Spec]]\n');
    assert.deepEqual((await m.tool('find_broken_links')).structured.result, []);
    // Onto a folder that is there and not empty: refused, nothing moved.
    fs.mkdirSync(m.inMnt('Full'));
    fs.writeFileSync(m.inMnt('Full/x.md'), 'x\n');
    assert.throws(() => fs.renameSync(m.inMnt('Sub2'), m.inMnt('Full')), /ENOTEMPTY|EEXIST/);
    assert.ok(fs.existsSync(m.inMnt('Sub2/Spec.md')));
  });

  test('rm moves the note to .trash/ and, after the grace period, marks the links', async () => {
    const m = await mountVault(files);
    fs.unlinkSync(m.inMnt('B.md'));
    assert.ok(!fs.existsSync(m.inMnt('B.md')));
    assert.equal(m.back('.trash/B.md'), files['B.md']);
    await eventually(() => assert.match(m.back('A.md'), /^\[\[B \(deleted\)\]\] \[\[B \(deleted\)\|alias\]\]/));
    const bl = await m.tool('search_notes', { query: 'B', mode: 'name' });
    assert.equal(bl.structured.total, 0);
  });

  test('gio trash (a rename into .Trash-<uid>/) is a delete', async () => {
    const m = await mountVault(files);
    const trash = m.inMnt(`.Trash-${process.getuid()}/files`);
    fs.mkdirSync(trash, { recursive: true });
    fs.renameSync(m.inMnt('C.md'), path.join(trash, 'C.md'));
    await eventually(() => assert.match(m.back('B.md'), /\[c\]\(C%20(\(|%28)deleted(\)|%29)\.md\)/));
    assert.equal((await m.tool('search_notes', { query: 'C', mode: 'name' })).structured.total, 0);
  });

  test('deleted and written again within the grace period: an update, not a delete', async () => {
    const m = await mountVault(files);
    fs.unlinkSync(m.inMnt('B.md'));
    fs.writeFileSync(m.inMnt('B.md'), '# B\n\nrewritten\n');
    await sleep(GRACE + 400);
    assert.equal(m.back('B.md'), '# B\n\nrewritten\n');
    assert.equal(m.back('A.md'), files['A.md'], 'links were not marked');
    assert.ok(!fs.existsSync(path.join(m.vault, '.trash/B.md')), 'no trash copy of a save');
  });

  test('with delete_links: keep, links stay as they were', async () => {
    const m = await mountVault({ ...files, '.vaultd/policy.yaml': 'delete_links: keep\n' });
    fs.unlinkSync(m.inMnt('B.md'));
    await sleep(GRACE + 400);
    assert.equal(m.back('A.md'), files['A.md']);
  });
});

describe('changes made in the vault folder itself', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  test('are picked up: the index and the mount see them; violations are recorded', async () => {
    const m = await mountVault({ 'N.md': '---\ntags: [idea]\n---\none\n' });
    assert.equal(fs.readFileSync(m.inMnt('N.md'), 'utf8'), '---\ntags: [idea]\n---\none\n'); // cached now
    fs.writeFileSync(path.join(m.vault, 'N.md'), '---\ntags: [idea]\n---\ntwo [[New]]\n');
    fs.writeFileSync(path.join(m.vault, 'New.md'), 'outside #outsidetag\n');
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      await sleep(50);
      ok = fs.readFileSync(m.inMnt('N.md'), 'utf8').includes('two');
    }
    assert.ok(ok, 'the mount shows the new text');
    const links = await m.tool('get_links', { name: 'N' });
    assert.deepEqual(links.structured.outgoing, ['New']);
    assert.ok(fs.readdirSync(m.mnt).includes('New.md'));
    const v = await m.tool('list_violations', { limit: 5 });
    assert.ok(v.structured.violations.some((x) => x.source === 'external' && x.action === 'warned' && x.path === 'New.md'));
    const found = await m.tool('search_notes', { query: 'outside', mode: 'fulltext' });
    assert.deepEqual(found.structured.results.map((r) => r.path), ['New.md']);
    // Deleted outside: gone from the index too.
    fs.unlinkSync(path.join(m.vault, 'New.md'));
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) {
      await sleep(50);
      gone = (await m.tool('find_broken_links')).structured.result.length === 1;
    }
    assert.ok(gone);
  });

  test('policy.yaml edits are reloaded', async () => {
    const m = await mountVault({ 'N.md': 'x' });
    fs.mkdirSync(path.join(m.vault, '.vaultd'), { recursive: true });
    fs.writeFileSync(path.join(m.vault, '.vaultd/policy.yaml'), 'allowed_tags: [fresh]\n');
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      await sleep(50);
      ok = (await m.tool('get_policy')).structured.allowed_tags.includes('fresh');
    }
    assert.ok(ok);
    fs.writeFileSync(m.inMnt('N.md'), 'now #fresh\n');
    assert.equal(m.back('N.md'), 'now #fresh\n');
  });
});

describe('crashes', { skip: !HAVE_FUSE && 'no /dev/fuse' }, () => {
  test('kill -9 during 1000 writes: every note whole; vaultd restarts cleanly', async () => {
    const files = {};
    const body = (k, i) => `---\ntags: [v]\n---\n# n${i}\n\n` + `version ${k} of n${i}\n`.repeat(200);
    for (let i = 0; i < 10; i++) files[`n${i}.md`] = body(0, i);
    const m = await mountVault(files);
    const script = `
      const fs = require('fs');
      const body = ${body.toString()};
      for (let k = 1; k <= 1000; k++) {
        const i = k % 10;
        // O_TRUNC without O_CREAT: once the dead mount is gone, a write
        // must not create the note in the bare mount point.
        const flag = fs.constants.O_WRONLY | fs.constants.O_TRUNC;
        try { fs.writeFileSync(${JSON.stringify(m.mnt)} + '/n' + i + '.md', body(k, i), { flag }); }
        catch (e) { process.stdout.write('stopped at ' + k + ' ' + e.code + '\\n'); process.exit(0); }
      }
      process.stdout.write('done\\n');`;
    const writer = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const writerDone = new Promise((r) => writer.once('exit', r));
    let out = '';
    writer.stdout.on('data', (d) => (out += d));
    await sleep(400);
    assert.equal(m.daemon.exitCode, null, 'vaultd still running: ' + m.log);
    m.daemon.kill('SIGKILL');
    await m.exited;
    await writerDone;
    for (let i = 0; i < 10; i++) {
      const t = m.back(`n${i}.md`);
      const k = /version (\d+) of/.exec(t)[1];
      assert.equal(t, body(Number(k), i), `n${i}.md is one whole version`);
    }
    // The reaper takes the dead daemon's mount down: no hung mount point.
    for (let i = 0; i < 200 && mounted(m.mnt); i++) await sleep(25);
    assert.ok(!mounted(m.mnt), 'the killed daemon left its mount behind');
    await m.start();
    const t = fs.readFileSync(m.inMnt('n3.md'), 'utf8');
    assert.match(t, /^---\ntags: \[v\]/);
    fs.writeFileSync(m.inMnt('n3.md'), body(5000, 3));
    assert.equal(m.back('n3.md'), body(5000, 3));
    assert.match(out, /stopped at|done/);
  });
});
