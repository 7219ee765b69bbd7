// Per-command cost of the network allowlist: `true` through conch's sandbox with the network on (the
// default), with --no-network (a private network namespace), and with the allowlist (a private
// namespace plus the perl relay and the channel to the run's proxy), interleaved in the same run so
// that load from other processes hits all three alike. Each figure is a median over the calls, as
// wall time and as CPU time (the sandbox's whole process tree, which bwrap reaps, plus this
// process's own work for the command): on a loaded machine the wall time of a command grows with
// every process it starts, the CPU time does not. Target: allowlist <= default + 5 ms.
// Then the same two through conch's executor, as the bash tool runs a command (output captured to
// its end, the sandbox settled): what a command costs in a run, where waiting for the sandbox to be
// over shows (a relay that outlived the command cost a 5 ms poll in every command).
// On this loaded 2-core machine, run it under `chrt -f 10` (as root) for near-quiet figures.
// Usage: bun bench/network.ts [calls]
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlaceholderScope, prepareSandboxed, probeSandbox, type SandboxRequest } from '../src/sandbox/index.ts';
import { parseAllowList } from '../src/sandbox/net-rules.ts';
import { startProxy } from '../src/sandbox/proxy.ts';
import { DEFAULT_LIMITS } from '../src/core/limits.ts';
import { createExecutor } from '../src/shell/exec.ts';
import { Workspace } from '../src/workspace/paths.ts';

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

const cpuMs = (usage: { user: number; system: number }) => (usage.user + usage.system) / 1000;

/** One command: its wall time and CPU time in ms. */
async function once(request: SandboxRequest): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  const own = process.cpuUsage();
  const prepared = await prepareSandboxed(request);
  let tree = 0;
  try {
    const child = Bun.spawn(prepared.argv, { stdio: ['ignore', 'ignore', 'ignore', ...prepared.extraFds, ...(prepared.channel ? ['pipe' as const] : [])] });
    prepared.channel?.((child.stdio as unknown[])[3 + prepared.extraFds.length] as number);
    const code = await child.exited;
    if (code !== 0) throw new Error(`exited ${code}`);
    const usage = child.resourceUsage()!.cpuTime;
    tree = (Number(usage.user) + Number(usage.system)) / 1000;
  } finally {
    await prepared.release();
  }
  return { wall: performance.now() - started, cpu: tree + cpuMs(process.cpuUsage(own)) };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const variants: Record<string, SandboxRequest> = {
  'network on (default)': base,
  '--no-network': { ...base, network: false },
  'allowlist (proxy + relay)': { ...base, netAllow: ['127.0.0.1:9'], proxy },
};
try {
  const wall: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  for (const [name, request] of Object.entries(variants)) {
    wall[name] = [];
    cpu[name] = [];
    for (let i = 0; i < 5; i++) await once(request);
  }
  for (let i = 0; i < calls; i++) {
    for (const [name, request] of Object.entries(variants)) {
      const figures = await once(request);
      wall[name]!.push(figures.wall);
      cpu[name]!.push(figures.cpu);
    }
  }
  const ms = Object.fromEntries(Object.keys(variants).map((k) => [k, { wall: median(wall[k]!), cpu: median(cpu[k]!) }]));
  for (const [name, value] of Object.entries(ms)) console.log(`${name}: ${value.wall.toFixed(2)} ms/command wall, ${value.cpu.toFixed(2)} ms CPU (medians of ${calls})`);
  const on = ms['network on (default)']!;
  const off = ms['--no-network']!;
  const allow = ms['allowlist (proxy + relay)']!;
  console.log(`allowlist - default: ${(allow.wall - on.wall).toFixed(2)} ms/command wall (target <= 5), ${(allow.cpu - on.cpu).toFixed(2)} ms CPU`);
  console.log(`allowlist - --no-network: ${(allow.wall - off.wall).toFixed(2)} ms/command wall, ${(allow.cpu - off.cpu).toFixed(2)} ms CPU`);

  const executor = async (allowlist: boolean) => createExecutor({
    workspace: await Workspace.open({ root: ws, unrestricted: false }),
    unrestricted: false,
    sandbox: { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [], ...(allowlist ? { netAllow: ['127.0.0.1:9'] } : {}) },
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: tmp,
    logDir: join(root, 'logs'),
    placeholders: scope,
    ...(allowlist ? { proxy } : {}),
  });
  const executors = { 'executor, network on': await executor(false), 'executor, allowlist': await executor(true) };
  const signal = new AbortController().signal;
  const times: Record<string, number[]> = {};
  for (const name of Object.keys(executors)) times[name] = [];
  for (let i = 0; i < calls + 5; i++) {
    for (const [name, run] of Object.entries(executors)) {
      const started = performance.now();
      const result = await run('true', { signal });
      if (result.exitCode !== 0 || result.cleanupError) throw new Error(`true failed: ${JSON.stringify(result)}`);
      if (i >= 5) times[name]!.push(performance.now() - started);
    }
  }
  const [onExec, allowExec] = Object.values(times).map(median) as [number, number];
  console.log(`through the executor: network on ${onExec.toFixed(2)} ms/command, allowlist ${allowExec.toFixed(2)} ms (${(allowExec - onExec).toFixed(2)} more; target <= 5), wall, medians of ${calls}`);
} finally {
  await proxy.close();
  scope.close();
  rmSync(root, { recursive: true, force: true });
}
