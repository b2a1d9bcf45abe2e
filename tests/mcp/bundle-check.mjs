// The Claude Desktop extension bundle, unpacked, run as a host runs it:
// manifest.json's mcp_config with ${__dirname} and ${user_config.*}
// substituted, under the official MCP SDK client.
//   node bundle-check.mjs UNPACKED_DIR VERSION TOOLS_JSON EXAMPLE_VAULT
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { png } from './png.mjs';

const [dir, version, toolsJson, example] = process.argv.slice(2);
const m = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
assert.equal(m.version, version, 'the version is meson\'s');
assert.equal(m.server.type, 'binary');
assert.deepEqual(m.compatibility.platforms, ['linux']);
const dirs = Object.entries(m.user_config).filter(([, c]) => c.type === 'directory');
assert.equal(dirs.length, 1, 'one directory field for the vault');
assert.equal(dirs[0][1].required, true);
const entry = path.join(dir, m.server.entry_point);
assert.ok(fs.statSync(entry).mode & 0o100, `${entry} is executable`);
assert.ok(fs.statSync(path.join(dir, 'server/vaultd')).mode & 0o100, 'vaultd is bundled, executable');
assert.ok(fs.statSync(path.join(dir, 'server/vaultd-image')).mode & 0o100, 'the image decoder is bundled next to vaultd');
const table = JSON.parse(fs.readFileSync(toolsJson, 'utf8')).map((t) => t.name).sort();
assert.deepEqual(m.tools.map((t) => t.name).sort(), table, 'the manifest lists the tool table');

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vaultd-mcpb-'));
const vault = path.join(root, 'vault');
fs.cpSync(example, vault, { recursive: true });
// An image: the bundled vaultd finds its decoder next to itself.
const dot = png(2, 1, { color: 0, row: (y, b) => b.fill(255) });
fs.writeFileSync(path.join(vault, 'dot.png'), dot);
const base = {
  PATH: process.env.PATH,
  HOME: root,
  XDG_RUNTIME_DIR: path.join(root, 'run'),
  XDG_CACHE_HOME: path.join(root, 'cache'),
};
fs.mkdirSync(base.XDG_RUNTIME_DIR, { mode: 0o700 });

// What the host does with mcp_config for these settings.
function substitute(value, settings) {
  return value
    .replaceAll('${__dirname}', dir)
    .replace(/\$\{user_config\.([a-z_]+)\}/g, (_, k) => String(settings[k] ?? m.user_config[k].default ?? ''));
}
function launch(settings) {
  const c = m.server.mcp_config;
  const env = { ...base };
  for (const [k, v] of Object.entries(c.env)) env[k] = substitute(v, settings);
  return { command: substitute(c.command, settings), args: c.args.map((a) => substitute(a, settings)), env };
}

async function session(settings) {
  const client = new Client({ name: 'mcpb-host', version: '1' });
  const transport = new StdioClientTransport({ ...launch(settings), stderr: 'pipe' });
  await client.connect(transport);
  return client;
}

try {
  const c = await session({ vault });
  assert.equal(c.getServerVersion().version, version);
  const { tools } = await c.listTools();
  assert.equal(tools.length, table.length);
  const r = await c.callTool({ name: 'read_note', arguments: { name: 'Home' } });
  assert.ok(!r.isError && r.content[0].text.length > 0, 'read_note answers');
  const img = await c.callTool({ name: 'read_attachment', arguments: { path: 'dot.png' } });
  assert.ok(!img.isError, `read_attachment: ${img.content[0]?.text}`);
  assert.deepEqual(Buffer.from(img.content.find((b) => b.type === 'image').data, 'base64'), dot);
  await c.close();

  const ro = await session({ vault, read_only: true });
  const roTools = (await ro.listTools()).tools;
  assert.ok(roTools.length < table.length && roTools.every((t) => t.annotations?.readOnlyHint),
    'read_only offers the reading tools only');
  await ro.close();

  // A folder that is not a vault: refused at once, with the reason.
  const plain = path.join(root, 'plain');
  fs.mkdirSync(plain);
  const l = launch({ vault: plain });
  const p = spawnSync(l.command, l.args, { env: l.env, input: '', encoding: 'utf8', timeout: 10000 });
  assert.notEqual(p.status, 0);
  assert.match(p.stderr, /not an Obsidian vault/);
  const made = await session({ vault: plain, create: true });
  assert.ok(fs.existsSync(path.join(plain, '.obsidian')), 'create makes the folder a vault');
  await made.close();
  console.log(`bundle ${m.name} ${m.version}: ${tools.length} tools, read only: ${roTools.length}; runs as a host runs it`);
} finally {
  // Stop the vaultd each session started (it would wait 10 minutes).
  const run = path.join(base.XDG_RUNTIME_DIR, 'vaultd');
  const pids = fs.existsSync(run)
    ? fs.readdirSync(run).filter((f) => f.endsWith('.sock.lock'))
        .map((f) => parseInt(fs.readFileSync(path.join(run, f), 'utf8'), 10)).filter((p) => p > 0)
    : [];
  for (const pid of pids) try { process.kill(pid, 'SIGTERM'); } catch {}
  for (let i = 0; i < 100 && pids.some((pid) => { try { process.kill(pid, 0); return true; } catch { return false; } }); i++)
    await new Promise((r) => setTimeout(r, 50));
  fs.rmSync(root, { recursive: true, force: true });
}
