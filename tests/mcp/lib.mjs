// Helpers for the end-to-end tests: temporary vaults, private runtime
// folders (so tests never meet each other's daemons), the official SDK
// client, a raw line-based MCP client, and a raw control-socket client.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

export const BIN = {
  vaultd: process.env.VAULTD_BIN,
  mcp: process.env.VAULT_MCP_BIN,
  vaultctl: process.env.VAULTCTL_BIN,
};
for (const [k, v] of Object.entries(BIN)) {
  if (!v || !fs.existsSync(v)) throw new Error(`set ${k} binary path (env), got ${v}`);
}

// A sanitizer build (AddressSanitizer or ThreadSanitizer) reserves
// terabytes of address space (no ulimit -v, no peak memory to judge) and
// runs several times slower.
const vaultdBytes = fs.readFileSync(BIN.vaultd);
export const underTsan = vaultdBytes.includes('__tsan_init');
export const sanitized = underTsan || vaultdBytes.includes('__asan_init');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A vault folder with the given files and its own runtime/cache folders.
export function makeVault(files = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vaultd-e2e-'));
  const vault = path.join(root, 'vault');
  const runtime = path.join(root, 'run');
  // A real Obsidian vault: vaultd refuses a folder without .obsidian/.
  fs.mkdirSync(path.join(vault, '.obsidian'), { recursive: true });
  fs.mkdirSync(runtime, { mode: 0o700 });
  for (const [rel, text] of Object.entries(files)) writeNote(vault, rel, text);
  const env = {
    PATH: process.env.PATH,
    HOME: root,
    XDG_RUNTIME_DIR: runtime,
    XDG_CACHE_HOME: path.join(root, 'cache'),
    OBSIDIAN_VAULT_PATH: vault,
    VAULTD_BIN: BIN.vaultd,
  };
  // Sanitizer builds: every program the tests start reports (and stops)
  // the way the test command asked.
  for (const k of ['ASAN_OPTIONS', 'UBSAN_OPTIONS', 'TSAN_OPTIONS', 'LSAN_OPTIONS'])
    if (process.env[k]) env[k] = process.env[k];
  return { root, vault, runtime, env, cleanup: () => cleanup(root, runtime) };
}

export function writeNote(vault, rel, text) {
  const p = path.join(vault, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
}

export function readNote(vault, rel) {
  return fs.readFileSync(path.join(vault, rel), 'utf8');
}

// The daemon's socket for this runtime folder (there is one per vault).
export function socketPath(v) {
  const dir = path.join(v.runtime, 'vaultd');
  const s = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.endsWith('.sock')) : null;
  return s ? path.join(dir, s) : null;
}

// The pids of the daemons serving this runtime folder (one per vault:
// vault-mcp starts one for each of its vaults).
function daemonPids(v) {
  const dir = path.join(v.runtime, 'vaultd');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.sock.lock'))
    .map((f) => {
      try {
        return parseInt(fs.readFileSync(path.join(dir, f), 'utf8'), 10);
      } catch {
        return NaN;
      }
    })
    .filter((pid) => Number.isFinite(pid));
}

export function daemonPid(v) {
  return daemonPids(v)[0] ?? null;
}

// Running, and not a zombie waiting for its reaper (PID 1 may be slow).
function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

// Stop every daemon of this runtime folder (SIGTERM, then SIGKILL after
// 5 s): a test's folders are removed only once none writes in them.
export async function stopDaemon(v) {
  const pids = daemonPids(v).filter((pid) => {
    try {
      process.kill(pid, 'SIGTERM');
      return true;
    } catch {
      return false;
    }
  });
  for (let i = 0; i < 100 && pids.some(alive); i++) await sleep(50);
  const left = pids.filter(alive);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100 && left.some(alive); i++) await sleep(20);
}

async function cleanup(root, runtime) {
  await stopDaemon({ runtime });
  if (!process.env.KEEP_TEST_VAULTS) fs.rmSync(root, { recursive: true, force: true });
}

// Start vaultd (no mount) in the foreground of a child process; with
// vmLimitKB, under that much address space (ulimit -v).
export async function startDaemon(v, extraArgs = [], { vmLimitKB } = {}) {
  const args = ['--no-mount', '--vault', v.vault, ...extraArgs];
  const [cmd, argv] = vmLimitKB
    ? ['sh', ['-c', `ulimit -v ${vmLimitKB} && exec "$0" "$@"`, BIN.vaultd, ...args]]
    : [BIN.vaultd, args];
  const child = spawn(cmd, argv, {
    env: v.env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 200; i++) {
    const s = socketPath(v);
    if (s) {
      try {
        const c = await ctlConnect(s);
        // Tools wait for the index anyway; status and tests that count
        // notes want it finished.
        let st = await c.call('status');
        for (let j = 0; j < 400 && st.index?.state !== 'ready'; j++) {
          await sleep(25);
          st = await c.call('status');
        }
        c.close();
        return child;
      } catch {}
    }
    await sleep(25);
  }
  throw new Error('vaultd did not start');
}

// Clients a failed test left open are closed at the end (an open client
// keeps its vault-mcp, and so this process, alive).
const openClients = new Set();
after(async () => {
  for (const c of openClients) await c.close().catch(() => {});
});

// The official SDK client on vault-mcp.
export async function mcpClient(v, { args = [], env = {}, name = 'vaultd-e2e' } = {}) {
  const transport = new StdioClientTransport({
    command: BIN.mcp,
    args,
    env: { ...v.env, ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  openClients.add(client);
  const close = client.close.bind(client);
  client.close = async () => {
    openClients.delete(client);
    await close();
  };
  return client;
}

// Text of a tool result (the first content block).
export const textOf = (r) => r.content?.[0]?.text ?? '';
// The seed JSON part of a result text (without an auto-context block).
export const jsonOf = (r) => JSON.parse(textOf(r).split('\n\n---\n')[0]);

// A raw MCP session on vault-mcp: write lines, read lines.
export class RawMcp {
  constructor(v, { args = [], env = {} } = {}) {
    this.proc = spawn(BIN.mcp, args, { env: { ...v.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.lines = [];
    this.waiters = [];
    this.stderr = '';
    this.exited = new Promise((r) => this.proc.on('exit', (code, sig) => r({ code, sig })));
    let buf = '';
    this.proc.stdout.on('data', (d) => {
      buf += d.toString('utf8');
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        this.lines.push(line);
        this.waiters.splice(0).forEach((w) => w());
      }
    });
    this.proc.stderr.on('data', (d) => (this.stderr += d.toString()));
  }
  send(obj) {
    this.proc.stdin.write((typeof obj === 'string' ? obj : JSON.stringify(obj)) + '\n');
  }
  sendRaw(buf) {
    this.proc.stdin.write(buf);
  }
  // Next message matching pred (parsed), waiting up to ms.
  async next(pred = () => true, ms = 10000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.lines.findIndex((l) => {
        try {
          return pred(JSON.parse(l));
        } catch {
          return false;
        }
      });
      if (i >= 0) return JSON.parse(this.lines.splice(i, 1)[0]);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timeout waiting for a message; got: ' + this.lines.join('\n'));
      await new Promise((r) => {
        this.waiters.push(r);
        setTimeout(r, Math.min(left, 200));
      });
    }
  }
  byId(id, ms) {
    return this.next((m) => m.id === id, ms);
  }
  async request(id, method, params) {
    this.send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    return this.byId(id);
  }
  async initialize(version = '2025-11-25') {
    const r = await this.request(0, 'initialize', {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }
  close() {
    this.proc.stdin.end();
    return this.exited;
  }
}

// 2026-07-28 requests carry their version and capabilities in _meta.
export const modernMeta = (version = '2026-07-28') => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
});

// A raw client of vaultd's control socket.
export function ctlConnect(sockPath) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection(sockPath);
    const c = {
      sock,
      nextId: 0,
      pending: new Map(),
      events: [],
      buf: '',
      closed: false,
      call(method, params = {}) {
        const id = ++c.nextId;
        sock.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
        return new Promise((res, rej) => c.pending.set(id, { res, rej }));
      },
      close() {
        sock.end();
      },
    };
    sock.on('data', (d) => {
      c.buf += d.toString('utf8');
      let i;
      while ((i = c.buf.indexOf('\n')) >= 0) {
        const line = c.buf.slice(0, i);
        c.buf = c.buf.slice(i + 1);
        const m = JSON.parse(line);
        if (m.method) c.events.push(m);
        else if (c.pending.has(m.id)) {
          const p = c.pending.get(m.id);
          c.pending.delete(m.id);
          m.error ? p.rej(Object.assign(new Error(m.error.message), { code: m.error.code })) : p.res(m.result);
        } else c.events.push(m);
      }
    });
    sock.on('close', () => {
      c.closed = true;
      for (const p of c.pending.values()) p.rej(new Error('closed'));
      c.pending.clear();
    });
    sock.once('connect', () => resolve(c));
    sock.once('error', reject);
  });
}

// Run vaultctl synchronously.
export function vaultctl(v, args, input) {
  const r = spawnSync(BIN.vaultctl, args, { env: v.env, input, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// One call of each write tool on the note N of WRITE_NOTE (tags alpha and
// beta exist in the vault): what the tests of annotations, versions and
// dry runs run. restore_note_version needs a version, undo_changes the
// session: null here.
export const WRITE_NOTE = '---\ntags: [alpha]\nstatus: draft\n---\n# Top\n\nline one\n- [ ] a task\n\n## Part\n\npart text\n';
export const writeCases = () => ({
  create_note: { name: 'N', content: 'other\n', overwrite: true },
  append_note: { name: 'N', text: 'added' },
  prepend_note: { name: 'N', text: 'added' },
  update_note: { name: 'N', content: 'new body\n' },
  replace_text: { name: 'N', old_text: 'line one', new_text: 'line two' },
  insert_text: { name: 'N', text: 'added', after: 'line one' },
  append_section: { name: 'N', section: 'Part', text: 'added' },
  update_section: { name: 'N', section: 'Part', content: 'new part\n' },
  delete_section: { name: 'N', section: 'Part' },
  set_frontmatter: { name: 'N', key: 'status', value: 'done' },
  update_frontmatter: { name: 'N', updates: { status: 'done' } },
  add_tag: { name: 'N', tag: 'beta' },
  remove_tag: { name: 'N', tag: 'alpha' },
  rename_note: { old_name: 'N', new_name: 'N2' },
  delete_note: { name: 'N' },
  // line: the task's line in WRITE_NOTE as written (taskLine() finds it
  // when the note was made otherwise).
  set_task_status: { name: 'N', line: 8, status: 'done', expected_text: 'a task' },
  restore_note_version: null,
  undo_changes: null,
  // In a vault with DAILY_N: periodic_note makes N when it is missing,
  // append_periodic_note appends to it.
  periodic_note: { create: true },
  append_periodic_note: { text: 'added' },
});
// Settings that name every daily note N (a format of literal text).
export const DAILY_N = { '.obsidian/daily-notes.json': '{"format": "[N]"}' };
