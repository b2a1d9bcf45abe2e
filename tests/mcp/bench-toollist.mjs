// tools/list size benchmark (issue 16, "a lean tool list"): the bytes a
// client pays in context for each profile before the user says a word,
// and what takes them. Sizes are the list as the official SDK client
// receives it, as compact JSON.
//   node bench-toollist.mjs
// Goals: --tools core <= 8 KB; --tools all <= 16 KB for the 40 tools of
// the lean list, and as dense (409.6 bytes a tool) with the tools added
// since. "vaults": two vaults (--vault twice): every tool takes vault and
// vault-mcp's own tools (list_vaults, load_vault, copy_note, move_note)
// join the list; their bytes are said apart.
import fs from 'node:fs';
import path from 'node:path';
import { makeVault, mcpClient, stopDaemon } from './lib.mjs';

const bytes = (x) => Buffer.byteLength(JSON.stringify(x));
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
const PROFILES = [
  ['all', [], (n) => Math.floor((16384 / 40) * n)],
  ['core', ['--tools', 'core'], 8192],
  ['read-only', ['--read-only'], null],
];

const v = makeVault({});
const second = path.join(v.root, 'second');
fs.mkdirSync(path.join(second, '.obsidian'), { recursive: true });
PROFILES.push(['vaults', ['--vault', v.vault, '--vault', second], null]);
const VAULT_TOOLS = ['list_vaults', 'load_vault', 'copy_note', 'move_note'];
for (const [profile, args, goal] of PROFILES) {
  const client = await mcpClient(v, { args });
  const { tools } = await client.listTools();
  await client.close();
  const total = bytes({ tools });
  const parts = {};
  for (const t of tools)
    for (const [k, val] of Object.entries(t)) parts[k] = (parts[k] ?? 0) + bytes({ [k]: val }) - 2;
  const split = Object.entries(parts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const limit = typeof goal === 'function' ? goal(tools.length) : goal;
  const g = limit ? `  (goal <= ${limit} bytes${typeof goal === 'function' ? ': 16 KB for 40 tools, as dense for more' : ''})` : '';
  console.log(`tools/list ${profile}: ${tools.length} tools, ${total} bytes (${kb(total)}), ${Math.round(total / tools.length)} a tool${g}`);
  console.log(`  by field: ${split}`);
  const own = tools.filter((t) => VAULT_TOOLS.includes(t.name));
  if (own.length) {
    const each = own.map((t) => `${t.name} ${bytes(t)}`).join(', ');
    console.log(`  vault-mcp's own tools: ${bytes(own)} bytes (${each})`);
  }
}
await stopDaemon(v);
await v.cleanup();
