// Figures for MCP start-up: each stdio server's own start (spawn, initialize, tools/list with a bare
// JSON-RPC client), alone and all three at once (on a small machine three servers booting together
// contend for the cores, so the slowest one takes longer than it does alone), and what the three
// add to conch's start: the time from spawning conch to the first model request, with and without
// them. conch starts them in parallel, so the target is: added ≤ the slowest server's own start
// (all three at once) + 30 ms.
// Run: ./node_modules/.bin/bun bench/mcp.ts
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer } from '../test/support/model-server.ts';

const REPO = resolve(import.meta.dir, '..');
const CONCH = join(REPO, 'bin/conch');
const BUN = process.execPath;
const SERVERS: Record<string, string[]> = {
  everything: [BUN, join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
  writer: [BUN, join(REPO, 'test/support/mcp-writer.ts')],
  everything2: [BUN, join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
};

const server = await startModelServer();
const base = await mkdtemp(join(tmpdir(), 'conch-bench-mcp-'));
const configDir = join(base, 'config', 'conch');
await mkdir(configDir, { recursive: true });
const workspace = join(base, 'ws');
await mkdir(workspace);
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: base,
  XDG_CONFIG_HOME: join(base, 'config'),
  ANTHROPIC_API_KEY: 'bench',
  ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** One server alone: spawn, initialize, initialized, tools/list answered. */
async function ownStart(argv: string[]): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn(argv, { stdin: 'pipe', stdout: 'pipe', stderr: 'ignore', env: { PATH: env.PATH, HOME: base } });
  const send = (m: object) => {
    child.stdin.write(`${JSON.stringify(m)}\n`);
    child.stdin.flush();
  };
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } } });
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of child.stdout) {
    buffer += decoder.decode(chunk);
    if (buffer.includes('"id":1') && !buffer.includes('"id":2')) {
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
    }
    if (buffer.includes('"id":2')) break;
  }
  const ms = performance.now() - started;
  child.kill();
  await child.exited;
  return ms;
}

/** ms from spawning conch to the model server receiving its first request. */
async function run(args: string[]): Promise<number> {
  let firstRequest = 0;
  server.script((_req) => {
    firstRequest ||= performance.now();
    return { text: 'done' };
  });
  const started = performance.now();
  const child = Bun.spawn([CONCH, '--model', 'anthropic/bench', ...args, 'bench'], { cwd: workspace, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const [, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  const code = await child.exited;
  if (code !== 0 || stderr.includes('MCP server')) throw new Error(`conch exited ${code}: ${stderr}`);
  return firstRequest - started;
}

const own: Record<string, number> = {};
for (const [name, argv] of Object.entries(SERVERS)) {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) samples.push(await ownStart(argv));
  own[name] = median(samples);
  console.log(`server ${name} own start (spawn → tools/list): ${own[name]!.toFixed(1)} ms`);
}
const together: number[] = [];
for (let i = 0; i < 5; i++) together.push(Math.max(...(await Promise.all(Object.values(SERVERS).map(ownStart)))));
const slowest = median(together);
console.log(`all three at once, bare client: slowest ready after ${slowest.toFixed(1)} ms (alone: ${Math.max(...Object.values(own)).toFixed(1)} ms)`);

for (const mode of [['--unrestricted'], []]) {
  const label = mode.length ? 'unrestricted' : 'sandboxed';
  await writeFile(join(configDir, 'config.json'), '{}');
  const without: number[] = [];
  for (let i = 0; i < 5; i++) without.push(await run(mode));
  const mcpServers = Object.fromEntries(Object.entries(SERVERS).map(([name, [command, ...args]]) => [name, { command, args }]));
  await writeFile(join(configDir, 'config.json'), JSON.stringify({ mcpServers }));
  const withServers: number[] = [];
  for (let i = 0; i < 5; i++) withServers.push(await run(mode));
  const added = median(withServers) - median(without);
  console.log(`${label}: first model request after ${median(without).toFixed(1)} ms without MCP, ${median(withServers).toFixed(1)} ms with 3 stdio servers`);
  console.log(`${label}: 3 servers add ${added.toFixed(1)} ms to the start (target ≤ slowest own start + 30 = ${(slowest + 30).toFixed(1)} ms)`);
}

await server.close();
await rm(base, { recursive: true, force: true });
