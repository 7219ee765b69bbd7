// Per-command cost of the network allowlist: `true` through conch's sandbox with the network on (the
// default), with --no-network (a private network namespace), and with the allowlist (a private
// namespace plus the perl relay and the channel to the run's proxy), interleaved in the same run so
// that load from other processes hits all three alike. Target: allowlist <= default + 5 ms.
// Usage: bun bench/network.ts [calls]
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlaceholderScope, prepareSandboxed, probeSandbox, type SandboxRequest } from '../src/sandbox/index.ts';
import { parseAllowList } from '../src/sandbox/net-rules.ts';
import { startProxy } from '../src/sandbox/proxy.ts';

const calls = Number(process.argv[2] ?? 100);
const status = await probeSandbox();
if (!status.ok) {
  console.log(`sandbox unavailable, nothing to measure: ${status.detail}`);
  process.exit(1);
}
const root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-bench-net-')));
const ws = join(root, 'ws');
const tmp = join(root, 'tmp');
mkdirSync(join(ws, '.git'), { recursive: true });
mkdirSync(tmp);
const scope = new PlaceholderScope();
const proxy = await startProxy({ allow: parseAllowList(['127.0.0.1:9'], String), dir: root, source: 'bench' });
const base: SandboxRequest = { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], command: 'true', cwd: ws, workspace: ws, tmpDir: tmp, placeholders: scope };

async function once(request: SandboxRequest): Promise<void> {
  const prepared = await prepareSandboxed(request);
  try {
    const child = Bun.spawn(prepared.argv, { stdio: ['ignore', 'ignore', 'ignore', ...prepared.extraFds, ...(prepared.channel ? ['pipe' as const] : [])] });
    prepared.channel?.((child.stdio as unknown[])[3 + prepared.extraFds.length] as number);
    const code = await child.exited;
    if (code !== 0) throw new Error(`exited ${code}`);
  } finally {
    await prepared.release();
  }
}

const variants: Record<string, SandboxRequest> = {
  'network on (default)': base,
  '--no-network': { ...base, network: false },
  'allowlist (proxy + relay)': { ...base, netAllow: ['127.0.0.1:9'], proxy },
};
try {
  const total: Record<string, number> = {};
  for (const [name, request] of Object.entries(variants)) {
    total[name] = 0;
    for (let i = 0; i < 5; i++) await once(request);
  }
  for (let i = 0; i < calls; i++) {
    for (const [name, request] of Object.entries(variants)) {
      const started = performance.now();
      await once(request);
      total[name]! += performance.now() - started;
    }
  }
  const ms = Object.fromEntries(Object.entries(total).map(([k, v]) => [k, v / calls]));
  for (const [name, value] of Object.entries(ms)) console.log(`${name}: ${value.toFixed(2)} ms/command (${calls} calls)`);
  const on = ms['network on (default)']!;
  const off = ms['--no-network']!;
  const allow = ms['allowlist (proxy + relay)']!;
  console.log(`allowlist - default: ${(allow - on).toFixed(2)} ms/command (target <= 5)`);
  console.log(`allowlist - --no-network: ${(allow - off).toFixed(2)} ms/command`);
} finally {
  await proxy.close();
  scope.close();
  rmSync(root, { recursive: true, force: true });
}
