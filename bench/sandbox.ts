// Per-call wall time of `true`, medians of interleaved calls (load from other processes hits all alike):
// - conch: a sandboxed command as the bash tool runs it in a run (the executor: prepare, spawn,
//   output capture, teardown, release; the placeholders held by the run's scope), which after the
//   first command joins the run's held sandbox (src/sandbox/held.ts);
// - conch in a run with a sandbox per command (CONCH_SANDBOX_PER_COMMAND=1: what it was before);
// - conch with a placeholder scope per call (what `conch sandbox run` does);
// - bare bwrap: the same namespaces, base mounts and seccomp filter, none of conch's protected-path
//   mounts, spawned directly and awaited (the floor a bwrap sandbox costs; the target is conch ≤ 1.3×);
// - bwrap with conch's exact argv (protected mounts included), spawned the same bare way;
// - conch unrestricted (the executor without a sandbox) and /bin/sh -c true spawned bare.
// The workspace is a git repo without .conch or .env.* files: the usual case, where conch makes
// placeholders for the absent protected names.
// Usage: bun bench/sandbox.ts [calls]
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_LIMITS } from '../src/core/limits.ts';
import { cleanEnv } from '../src/process/spawn.ts';
import { baseMounts, buildBwrapArgv } from '../src/sandbox/bwrap.ts';
import { PlaceholderScope, prepareSandboxed, type SandboxSettings } from '../src/sandbox/index.ts';
import { probe } from '../src/sandbox/probe.ts';
import { loadProfile } from '../src/sandbox/profiles.ts';
import { buildFilter, encodeFilter, hostSeccompArch } from '../src/sandbox/seccomp.ts';
import { createExecutor } from '../src/shell/exec.ts';
import { Workspace } from '../src/workspace/paths.ts';

const calls = Number(process.argv[2] ?? 200);
const probed = await probe();
if (!probed.status.ok || !probed.bwrap) {
  console.log(`bubblewrap unavailable, nothing to measure: ${probed.status.detail}`);
  process.exit(1);
}
const bwrap = probed.bwrap;

const root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-bench-')));
const settings: SandboxSettings = { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: [] };

/** A workspace with a .git and a .env, its temp dir, and an executor over it. */
async function workspace(name: string, options: { unrestricted?: boolean; scope?: PlaceholderScope } = {}) {
  const ws = join(root, name);
  const tmp = join(root, `${name}-tmp`);
  mkdirSync(join(ws, '.git'), { recursive: true });
  mkdirSync(tmp);
  writeFileSync(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(ws, '.env'), 'A=1\n');
  const executor = createExecutor({
    workspace: await Workspace.open({ root: ws, unrestricted: options.unrestricted ?? false }),
    unrestricted: options.unrestricted ?? false,
    sandbox: settings,
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: tmp,
    logDir: join(root, `${name}-logs`),
    ...(options.scope ? { placeholders: options.scope } : {}),
  });
  return { ws, tmp, executor };
}

const runScope = new PlaceholderScope();
const conch = await workspace('conch', { scope: runScope });
const oneShotScope = new PlaceholderScope();
const oneShot = await workspace('one-shot', { scope: oneShotScope });
const perCall = await workspace('per-call');
const unrestricted = await workspace('unrestricted', { unrestricted: true });
const bare = await workspace('bare');
const signal = new AbortController().signal;

// bwrap consumes the descriptor it reads the seccomp program from, so each bare call opens the
// program file again: a plain open(2), none of conch's work.
const filter = join(root, 'filter.bpf');
writeFileSync(filter, encodeFilter(buildFilter(hostSeccompArch()!)));
const bareArgv = buildBwrapArgv({
  bwrap,
  mounts: baseMounts(loadProfile('workspace-write'), { workspace: bare.ws, tmpDir: bare.tmp, writableRoots: [] }),
  network: true,
  disableUserns: probed.disableUserns,
  seccompFd: 3,
  cwd: bare.ws,
  command: ['/bin/sh', '-c', 'true'],
});
const env = cleanEnv(process.env, {}, { tmpDir: bare.tmp });

/** `after`: fds after the seccomp program's (conch's argv checks its workspace through one). */
async function spawn(argv: string[], seccomp: boolean, after: number[] = []): Promise<void> {
  const fd = seccomp ? openSync(filter, 'r') : null;
  try {
    const child = Bun.spawn(argv, { cwd: bare.ws, env, stdio: ['ignore', 'ignore', 'ignore', ...(fd === null ? [] : [fd]), ...after] });
    const code = await child.exited;
    if (code !== 0) throw new Error(`${argv[0]} exited ${code}`);
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

async function exec(executor: (typeof conch)['executor']): Promise<void> {
  const result = await executor('true', { signal });
  if (result.exitCode !== 0 || result.cleanupError) throw new Error(`true failed: ${JSON.stringify(result)}`);
}

function mountinfoLines(): number {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n').length;
  } catch {
    return 0;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/** Median per variant (what the ratios use) and mean (what a run of many commands pays). */
async function measure(variants: Record<string, () => Promise<void>>): Promise<Record<string, { median: number; mean: number }>> {
  const samples: Record<string, number[]> = {};
  for (const [name, once] of Object.entries(variants)) {
    samples[name] = [];
    for (let i = 0; i < 5; i++) await once(); // warm up caches, the probe, the placeholders
  }
  for (let i = 0; i < calls; i++) {
    for (const [name, once] of Object.entries(variants)) {
      const started = performance.now();
      await once();
      samples[name]!.push(performance.now() - started);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, { median: median(values), mean: mean(values) }]));
}

try {
  // conch's exact argv for the bare workspace, prepared once and held (its placeholders stay).
  const held = await prepareSandboxed({ ...settings, command: 'true', cwd: bare.ws, workspace: bare.ws, tmpDir: bare.tmp });
  let result: Awaited<ReturnType<typeof measure>>;
  try {
    result = await measure({
      conch: () => exec(conch.executor),
      oneShot: async () => {
        process.env.CONCH_SANDBOX_PER_COMMAND = '1';
        try {
          await exec(oneShot.executor);
        } finally {
          delete process.env.CONCH_SANDBOX_PER_COMMAND;
        }
      },
      perCall: () => exec(perCall.executor),
      bare: () => spawn(bareArgv, true),
      conchArgv: () => spawn(held.argv, true, held.extraFds.slice(1)),
      unrestricted: () => exec(unrestricted.executor),
      sh: () => spawn(['/bin/sh', '-c', 'true'], false),
    });
  } finally {
    await held.release();
    runScope.close();
    oneShotScope.close();
  }
  const ms = Object.fromEntries(Object.entries(result).map(([name, r]) => [name, r.median]));
  const line = (what: string, name: string) => console.log(`${what}: ${result[name]!.median.toFixed(2)} ms/call (mean ${result[name]!.mean.toFixed(2)})`);
  console.log(`medians (and means) of ${calls} interleaved calls of \`true\``);
  line('conch sandboxed command in a run (bash tool path: prepare, spawn, capture, teardown, release)', 'conch');
  line('conch sandboxed command in a run, a sandbox per command (CONCH_SANDBOX_PER_COMMAND=1)', 'oneShot');
  line('conch sandboxed command, placeholders per call (conch sandbox run)', 'perCall');
  line('bare bwrap, same namespaces, base mounts and seccomp, spawned directly', 'bare');
  line("bwrap with conch's argv (protected mounts too), spawned directly", 'conchArgv');
  line('conch unrestricted command (bash tool path)', 'unrestricted');
  line('/bin/sh -c true, spawned directly', 'sh');
  console.log(`ratio conch sandboxed / bare bwrap: ${(ms.conch! / ms.bare!).toFixed(2)}x (target ≤ 1.3)`);
  console.log(`ratio conch with a sandbox per command / bare bwrap: ${(ms.oneShot! / ms.bare!).toFixed(2)}x`);
  console.log(`ratio conch's argv / bare bwrap (the protected mounts): ${(ms.conchArgv! / ms.bare!).toFixed(2)}x`);
  // Where the gap to the target is: bwrap's work for the protected mounts (each bind re-reads
  // /proc/self/mountinfo, so its cost grows with the host's mounts), and conch's own work per command.
  const mounts = (argv: string[]) => argv.filter((arg) => /^--(ro-|dev-)?bind(-try)?$|^--tmpfs$/.test(arg)).length;
  const extra = mounts(held.argv) - mounts(bareArgv);
  const perMount = extra > 0 ? ((ms.conchArgv! - ms.bare!) / extra) * 1000 : 0;
  console.log(`protected mounts: ${extra} binds, ${(ms.conchArgv! - ms.bare!).toFixed(2)} ms over bare bwrap (${perMount.toFixed(0)} µs each; /proc/self/mountinfo has ${mountinfoLines()} entries here)`);
  console.log(`conch's own work per command, a sandbox per command (that − bwrap with its argv): ${(ms.oneShot! - ms.conchArgv!).toFixed(2)} ms`);
  console.log(`ratio conch sandboxed / conch unrestricted: ${(ms.conch! / ms.unrestricted!).toFixed(2)}x`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
