import { mcpClient } from './lib.mjs';
const v = { vault: process.argv[2], env: { PATH: process.env.PATH, HOME: process.env.HOME, XDG_RUNTIME_DIR: '/tmp/p13rt', XDG_CACHE_HOME: '/tmp/p13cache', VAULT_DIR: process.argv[2] } };
const c = await mcpClient(v, { args: ['--vault', process.argv[2]] });
const now = () => Number(process.hrtime.bigint()) / 1e6;
await c.callTool({ name: 'search_notes', arguments: { query: 'warm', mode: 'fulltext' } });
for (const q of process.argv.slice(3)) {
  const t = [];
  let r;
  for (let i = 0; i < 7; i++) {
    const s = now();
    r = await c.callTool({ name: 'search_notes', arguments: { query: q, mode: 'fulltext' } });
    t.push(now() - s);
  }
  t.sort((a, b) => a - b);
  console.log(`${q}: median ${t[3].toFixed(2)} ms, total ${r.structuredContent?.total}, ${r.isError ? r.content[0].text : ''}`);
}
await c.close();
process.exit(0);
