// Several vaults from one vault-mcp: three configured vaults (one
// read-only), list_vaults, load_vault under --allow-root only, calls with
// and without `vault`, resources per vault, copy/move between vaults
// through both guards, a killed vaultd restarted, a stopped one not
// holding up the others, hostile names and paths.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { jsonOf, makeVault, mcpClient, sleep, textOf } from './lib.mjs';

const base = makeVault({});

function vaultDir(rel, files) {
  const dir = path.join(base.root, rel);
  fs.mkdirSync(path.join(dir, '.obsidian'), { recursive: true });
  for (const [f, t] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), t);
  }
  return dir;
}

const work = vaultDir('vaults/work', {
  'Me.md': '---\ntags: [claude]\ndescription: how I work\n---\nwork notes\n',
  'Plan.md': 'the plan #project links [[Me]]\n',
  'Secret.md': 'only for work #project\n',
  'Free.md': 'a note without tags\n',
  'Keep.md': 'kept in work\n',
});
const home = vaultDir('vaults/home', {
  'Family.md': '---\ntags: [claude]\ndescription: family matters\n---\nhome #fam\n',
  'Plan.md': 'the home plan #fam\n',
});
const archive = vaultDir('vaults/archive', { 'Old.md': 'old times #past\n' });
const extra = vaultDir('allowed/extra', { 'E1.md': 'extra one\n', 'sub/E2.md': 'extra two\n' });
const ro2 = vaultDir('allowed/locked', { 'L.md': 'locked\n' });
fs.chmodSync(ro2, 0o555);
const outside = vaultDir('outside/other', { 'O.md': 'not yours\n' });
fs.mkdirSync(path.join(base.root, 'allowed/notavault'), { recursive: true });
fs.symlinkSync(outside, path.join(base.root, 'allowed/link'));
after(() => {
  fs.chmodSync(ro2, 0o755);
  return base.cleanup();
});

const ARGS = ['--vault', work, '--vault', home, '--read-only-vault', archive, '--allow-root', path.join(base.root, 'allowed')];

// The pid of the vaultd serving the vault folder named name.
function pidOf(name) {
  const dir = path.join(base.runtime, 'vaultd');
  const lock = fs.readdirSync(dir).find((f) => f.startsWith(name + '-') && f.endsWith('.sock.lock'));
  return lock ? parseInt(fs.readFileSync(path.join(dir, lock), 'utf8'), 10) : null;
}

const call = (c, name, args = {}) => c.callTool({ name, arguments: args });

async function allRunning(c, n) {
  for (let i = 0; i < 200; i++) {
    const r = jsonOf(await call(c, 'list_vaults'));
    if (r.vaults.length === n && r.vaults.every((v) => v.running && !v.indexing)) return r;
    await sleep(50);
  }
  throw new Error("the vaults did not all start: " + textOf(await call(c, "list_vaults")).slice(0, 600));
}

describe('several vaults', () => {
  let c;
  let first;
  before(async () => {
    c = await mcpClient(base, { args: ARGS });
    first = await call(c, 'read_note', { name: 'Plan' });
  });
  after(() => c.close());

  test('the first result names the vaults and carries each one\'s personal notes and tags', () => {
    const t = textOf(first);
    assert.match(t, /^the plan #project/);
    assert.match(t, /## Vaults/);
    assert.match(t, /- work \(default\): /);
    assert.match(t, /- archive \(read-only\): /);
    assert.match(t, /# Vault "work"[\s\S]*"Me" — how I work[\s\S]*claude, project/);
    assert.match(t, /# Vault "home"[\s\S]*"Family" — family matters[\s\S]*claude, fam/);
    assert.match(t, /# Vault "archive"[\s\S]*past/);
    assert.ok(t.length < 30000);
  });

  test('tools/list: every tool takes vault; the vaults\' own tools are there', async () => {
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['list_vaults', 'load_vault', 'copy_note', 'move_note']) assert.ok(names.includes(n), n);
    for (const t of tools) {
      if (t.name === 'list_vaults' || t.name === 'load_vault') continue;
      assert.equal(t.inputSchema.properties.vault?.type, 'string', t.name);
    }
    const help = jsonOf(await call(c, 'get_help'));
    assert.ok(help.some((h) => h.name === 'move_note' && /to_vault/.test(h.params)));
  });

  // The vaults' own tools are described as vaultd's are: get_help has a
  // line a parameter of the input schema, with its type and meaning;
  // tools/list has no descriptions or defaults inside the schema.
  test('get_help: the vaults\' tools have a line a parameter with its doc', async () => {
    const { tools } = await c.listTools();
    const help = jsonOf(await call(c, 'get_help'));
    for (const n of ['list_vaults', 'load_vault', 'copy_note', 'move_note']) {
      const schema = tools.find((t) => t.name === n).inputSchema;
      const h = help.find((e) => e.name === n);
      assert.ok(h, n);
      const lines = h.description.split('\n').slice(1);
      assert.deepEqual(lines.map((l) => l.match(/^- (\w+) \(/)?.[1]), Object.keys(schema.properties), n);
      for (const l of lines) assert.match(l, /^- \w+ \([^)]+\): \S.{10,}$/, n);
      for (const p of Object.values(schema.properties)) {
        assert.equal(p.description, undefined, n);
        assert.equal(p.default, undefined, n);
      }
    }
    const load = help.find((e) => e.name === 'load_vault');
    assert.equal(load.params, 'vault_path: string, name?: string');
    assert.match(load.description, /\n- vault_path \(string, required\): absolute path of the vault's folder/);
    assert.match(load.description, /\n- name \(string\): its short name .*default: the folder's name/);
    const copy = help.find((e) => e.name === 'copy_note');
    assert.match(copy.description, /\n- to_vault \(string, required\): the vault to copy it to \(a name from list_vaults\)/);
    assert.match(copy.description, /\n- overwrite \(boolean\): true replaces a note of that name there$/);
    assert.match(help.find((e) => e.name === 'move_note').description, /\n- to_vault \(string, required\): the vault to move it to/);
  });

  test('list_vaults: names, folders, notes, running, read-only', async () => {
    const r = await allRunning(c, 3);
    assert.deepEqual(
      r.vaults.map((v) => [v.name, v.path, v.default, v.notes, v.read_only]),
      [
        ['work', fs.realpathSync(work), true, 5, false],
        ['home', fs.realpathSync(home), false, 2, false],
        ['archive', fs.realpathSync(archive), false, 1, true],
      ],
    );
  });

  test('calls with and without vault; results name the vault', async () => {
    const w = await call(c, 'read_note', { name: 'Plan' });
    assert.match(textOf(w), /^the plan #project/);
    assert.ok(w.content.some((b) => b.text === '[Vault: work]'));
    const h = await call(c, 'read_note', { name: 'Plan', vault: 'home' });
    assert.match(textOf(h), /^the home plan/);
    assert.ok(h.content.some((b) => b.text === '[Vault: home]'));
    const HOME = await call(c, 'read_note', { name: 'plan', vault: 'HOME' });
    assert.match(textOf(HOME), /^the home plan/);
    const tags = await call(c, 'list_tags', { vault: 'archive' });
    assert.equal(tags.structuredContent.vault, 'archive');
    assert.match(textOf(tags), /past/);
    // Links stay in their vault: Plan in home has no backlink from work's.
    const bl = jsonOf(await call(c, 'get_backlinks', { name: 'Me', vault: 'home' }));
    assert.equal(JSON.stringify(bl).includes('Plan'), false);
  });

  test('hostile vault arguments: clear errors, nothing routed', async () => {
    for (const v of ['nosuch', '../home', 'work/../home', 'x'.repeat(100000), '', 'home\u00e9']) {
      const r = await call(c, 'read_note', { name: 'Plan', vault: v });
      assert.equal(r.isError, true, v.slice(0, 20));
      assert.match(textOf(r), /Unknown vault .* The vaults: work, home, archive/);
      assert.ok(textOf(r).length < 400);
    }
    for (const v of [7, true, ['home'], { name: 'home' }]) {
      const r = await call(c, 'read_note', { name: 'Plan', vault: v });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /vault must be a vault's name/);
    }
  });

  test('a read-only vault: listed as such, writes refused clearly, reads work', async () => {
    const r = await call(c, 'append_note', { name: 'Old', text: 'more', vault: 'archive' });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /Vault 'archive' is read-only/);
    assert.equal(fs.readFileSync(path.join(archive, 'Old.md'), 'utf8'), 'old times #past\n');
    assert.match(textOf(await call(c, 'read_note', { name: 'Old', vault: 'archive' })), /old times/);
    const cp = await call(c, 'copy_note', { name: 'Free', to_vault: 'archive' });
    assert.equal(cp.isError, true);
    assert.match(textOf(cp), /archive is read-only/);
    const mv = await call(c, 'move_note', { name: 'Old', vault: 'archive', to_vault: 'home' });
    assert.equal(mv.isError, true);
    assert.match(textOf(mv), /cannot leave it/);
    assert.ok(fs.existsSync(path.join(archive, 'Old.md')));
  });

  test('resources carry the vault in their URI', async () => {
    let all = [];
    let cursor;
    do {
      const page = await c.listResources(cursor ? { cursor } : {});
      all = all.concat(page.resources);
      cursor = page.nextCursor;
    } while (cursor);
    const uris = all.map((r) => r.uri);
    assert.ok(uris.includes('vault://work/Plan.md'));
    assert.ok(uris.includes('vault://home/Plan.md'));
    assert.ok(uris.includes('vault://archive/Old.md'));
    const rd = await c.readResource({ uri: 'vault://home/Plan.md' });
    assert.match(rd.contents[0].text, /home plan/);
    const def = await c.readResource({ uri: 'vault:///Plan.md' });
    assert.match(def.contents[0].text, /the plan/);
    await assert.rejects(c.readResource({ uri: 'vault://nosuch/Plan.md' }), /Resource not found/);
    await assert.rejects(c.readResource({ uri: 'vault://home/../work/Plan.md' }));
    const t = await c.listResourceTemplates();
    assert.ok(t.resourceTemplates.some((x) => x.uriTemplate === 'vault://{vault}/{+path}'));
    const comp = await c.complete({ ref: { type: 'ref/resource', uri: 'vault://{vault}/{+path}' }, argument: { name: 'vault', value: 'h' } });
    assert.deepEqual(comp.completion.values, ['home']);
  });

  test('move between vaults: refused by the target\'s policy, then accepted', async () => {
    // home does not allow #project: refused, nothing changes anywhere.
    const no = await call(c, 'move_note', { name: 'Secret', to_vault: 'home' });
    assert.equal(no.isError, true);
    assert.match(textOf(no), /Vault home refused the note: Tags not in allowed list[\s\S]*Nothing changed: Secret.md stays in vault work/);
    assert.ok(fs.existsSync(path.join(work, 'Secret.md')));
    assert.equal(fs.existsSync(path.join(home, 'Secret.md')), false);
    // A note the target allows: written there, then deleted here.
    const ok = await call(c, 'move_note', { name: 'Free', to_vault: 'home', new_name: 'moved/Free' });
    assert.equal(ok.isError, undefined, textOf(ok));
    assert.deepEqual(ok.structuredContent, { status: 'ok', from_vault: 'work', to_vault: 'home', source: 'Free.md', target: 'moved/Free.md', moved: true });
    assert.equal(fs.readFileSync(path.join(home, 'moved/Free.md'), 'utf8'), 'a note without tags\n');
    assert.equal(fs.existsSync(path.join(work, 'Free.md')), false);
    assert.ok(fs.readdirSync(path.join(work, '.trash'), { recursive: true }).some((f) => f.endsWith('Free.md')));
    // copy keeps the source; a second copy is refused (exists), overwrite replaces.
    const cp = await call(c, 'copy_note', { name: 'Keep', to_vault: 'home' });
    assert.equal(cp.structuredContent.moved, false);
    assert.ok(fs.existsSync(path.join(work, 'Keep.md')));
    assert.equal(fs.readFileSync(path.join(home, 'Keep.md'), 'utf8'), 'kept in work\n');
    const again = await call(c, 'copy_note', { name: 'Keep', to_vault: 'home' });
    assert.equal(again.isError, true);
    assert.match(textOf(again), /already exists/);
    fs.writeFileSync(path.join(work, 'Keep.md'), 'kept, changed\n');
    await sleep(300);
    const ow = await call(c, 'copy_note', { name: 'Keep', to_vault: 'home', overwrite: true });
    assert.equal(ow.isError, undefined, textOf(ow));
    assert.equal(fs.readFileSync(path.join(home, 'Keep.md'), 'utf8'), 'kept, changed\n');
    // Within one vault, to an unknown vault, a missing note: clear errors.
    assert.match(textOf(await call(c, 'copy_note', { name: 'Keep', to_vault: 'work' })), /in vault work already/);
    assert.match(textOf(await call(c, 'copy_note', { name: 'Keep', to_vault: '../home' })), /Unknown vault/);
    assert.match(textOf(await call(c, 'copy_note', { name: 'Nope', to_vault: 'home' })), /Vault work: .*not found/i);
    // Arguments are checked against the parameters, as vaultd's tools' are.
    assert.match(textOf(await call(c, 'move_note', { name: 'Keep' })), /Missing required argument 'to_vault' for move_note/);
    assert.match(textOf(await call(c, 'copy_note', { name: 'Keep', to_vault: 'home', overwrite: 'yes' })), /Invalid argument 'overwrite' for copy_note: must be a boolean/);
    assert.match(textOf(await call(c, 'copy_note', { name: 'Keep', to_vault: 'home', force: true })), /Unknown argument 'force' for copy_note\. Valid: name, to_vault, vault, new_name, overwrite/);
    // A NUL anywhere in a request: refused as a whole.
    await assert.rejects(call(c, 'read_note', { name: 'Plan', vault: 'home\u0000' }), /NUL/);
  });

  test('load_vault: under the allowed root only, idempotent, then addressable', async () => {
    const r = await call(c, 'load_vault', { vault_path: extra });
    assert.equal(r.isError, undefined, textOf(r));
    assert.deepEqual(r.structuredContent, { status: 'ok', note_count: 2, vault_path: fs.realpathSync(extra), name: 'extra', read_only: false });
    assert.match(textOf(r), /# Vault "extra"/);
    const again = await call(c, 'load_vault', { vault_path: extra + '/', name: 'other' });
    assert.equal(again.structuredContent.name, 'extra');
    assert.equal(again.structuredContent.note_count, 2);
    assert.match(textOf(await call(c, 'read_note', { name: 'E2', vault: 'extra' })), /extra two/);
    const lk = await call(c, 'load_vault', { vault_path: ro2, name: 'locked' });
    assert.equal(lk.structuredContent.read_only, true);
    const w = await call(c, 'append_note', { name: 'L', text: 'x', vault: 'locked' });
    assert.match(textOf(w), /is read-only/);
    const names = jsonOf(await call(c, 'list_vaults')).vaults.map((v) => v.name);
    assert.deepEqual(names, ['work', 'home', 'archive', 'extra', 'locked']);
  });

  test('load_vault refuses paths outside the allowed roots and hostile input', async () => {
    const cases = [
      [outside, /outside the folders vaults may be loaded from/],
      [path.join(base.root, 'allowed/../outside/other'), /outside the folders/],
      [path.join(base.root, 'allowed/link'), /outside the folders/],
      ['/etc', /outside the folders/],
      ['/nonexistent/x', /No such file/],
      ['allowed/extra', /not absolute/],
      [path.join(base.root, 'allowed/notavault'), /not an Obsidian vault/],
      [path.join(base.root, 'allowed/extra/E1.md'), /not a folder/],
      ['/tmp/\u0001x', /control character/],
      ['/' + 'a'.repeat(20000), /vault_path/],
    ];
    for (const [p, re] of cases) {
      const r = await call(c, 'load_vault', { vault_path: p });
      assert.equal(r.isError, true, p);
      assert.match(textOf(r), re, p.slice(0, 60));
      assert.ok(textOf(r).length < 1000);
    }
    for (const name of ['../evil', 'a b', '.hidden', 'x'.repeat(33), 'home', 'a/b']) {
      const r = await call(c, 'load_vault', { vault_path: path.join(base.root, 'allowed'), name });
      assert.equal(r.isError, true, name);
    }
    assert.match(textOf(await call(c, 'load_vault', {})), /Missing required argument 'vault_path' for load_vault/);
    assert.match(textOf(await call(c, 'load_vault', { vault_path: 5 })), /Invalid argument 'vault_path' for load_vault: must be a string/);
    const names = jsonOf(await call(c, 'list_vaults')).vaults.map((v) => v.name);
    assert.equal(names.includes('other'), false);
    assert.equal(pidOf('other'), null);
  });

  test('a vault whose vaultd is killed is restarted on the next call', async () => {
    const pid = pidOf('home');
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    await sleep(200);
    const r = await call(c, 'read_note', { name: 'Plan', vault: 'home' });
    assert.match(textOf(r), /^the home plan/, textOf(r));
    const npid = pidOf('home');
    assert.ok(npid && npid !== pid);
    // The others did not notice.
    assert.match(textOf(await call(c, 'read_note', { name: 'Plan' })), /^the plan/);
  });

  test('a stopped vaultd holds up only its own vault', async () => {
    const pid = pidOf('home');
    process.kill(pid, 'SIGSTOP');
    try {
      const slow = call(c, 'read_note', { name: 'Plan', vault: 'home' });
      let done = false;
      slow.then(() => (done = true));
      const t0 = Date.now();
      const w = await call(c, 'read_note', { name: 'Plan', vault: 'work' });
      assert.match(textOf(w), /^the plan/);
      assert.ok(Date.now() - t0 < 1000);
      assert.equal(done, false);
      // list_vaults answers too, without home's note count.
      const t1 = Date.now();
      const lv = jsonOf(await call(c, 'list_vaults'));
      assert.ok(Date.now() - t1 < 2500);
      assert.equal(lv.vaults.find((v) => v.name === 'home').notes, null);
      assert.equal(lv.vaults.find((v) => v.name === 'work').notes, 4);
      process.kill(pid, 'SIGCONT');
      assert.match(textOf(await slow), /home plan/);
    } finally {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {}
    }
  });
});

describe('configuring several vaults', () => {
  test('one vault: no vault argument and no vault tools (no change)', async () => {
    const c = await mcpClient(base, { args: ['--vault', work] });
    const { tools } = await c.listTools();
    assert.equal(tools.some((t) => t.inputSchema.properties?.vault), false);
    assert.equal(tools.some((t) => t.name === 'list_vaults'), false);
    const r = await call(c, 'read_note', { name: 'Plan' });
    assert.equal(r.content.some((b) => /^\[Vault/.test(b.text)), false);
    await c.close();
  });

  test('OBSIDIAN_VAULT_PATH with several folders; names made unique', async () => {
    const twin = vaultDir('twin/work', { 'T.md': 'twin\n' });
    const c = await mcpClient(base, { env: { OBSIDIAN_VAULT_PATH: `${work}:${twin}:${home}` } });
    const r = await allRunning(c, 3);
    assert.deepEqual(r.vaults.map((v) => v.name), ['work', 'work-2', 'home']);
    assert.match(textOf(await call(c, 'read_note', { name: 'T', vault: 'work-2' })), /^twin/);
    const lv = await call(c, 'load_vault', { vault_path: extra });
    assert.match(textOf(lv), /outside the folders .*none: only the configured vaults/);
    await c.close();
  });

  test('--vaults-from-obsidian reads Obsidian\'s registry', async () => {
    const cfg = path.join(base.root, '.config/obsidian');
    fs.mkdirSync(cfg, { recursive: true });
    fs.writeFileSync(
      path.join(cfg, 'obsidian.json'),
      JSON.stringify({ vaults: { a: { path: home, ts: 2, open: true }, b: { path: archive, ts: 1 }, c: { path: '/gone/vault', ts: 3 } } }),
    );
    const c = await mcpClient(base, { args: ['--vaults-from-obsidian'], env: { OBSIDIAN_VAULT_PATH: '' } });
    const r = await allRunning(c, 2);
    assert.deepEqual(r.vaults.map((v) => v.name), ['home', 'archive']);
    await c.close();
  });

  test('--socket with several vaults is refused', async () => {
    await assert.rejects(mcpClient(base, { args: ['--vault', work, '--vault', home, '--socket', '/tmp/x.sock'] }));
  });
});
