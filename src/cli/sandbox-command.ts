// `conch sandbox check` and `conch sandbox run`: how people see and debug the sandbox policy.
// `run` uses prepareSandboxed with the same profile, network setting, temp dir layout and clean
// environment as the bash tool, so what works (or is refused) here is what a command gets in a run.
import { parseAllowList } from '../sandbox/net-rules.ts';
import { startProxy, type NetworkProxy } from '../sandbox/proxy.ts';
import { constants } from 'node:os';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_CODES } from '../agent/outcome.ts';
import { processAlive } from '../process/group.ts';
import { sweepOrphans } from '../process/orphans.ts';
import { cleanEnv, guardExit } from '../process/spawn.ts';
import { runDirPrefix } from '../host/run-dir.ts';
import {
  prepareSandboxed,
  rememberDirectory,
  probeSandbox,
  SandboxRequestError,
  SandboxUnavailableError,
  type ProbeOptions,
} from '../sandbox/index.ts';
import { loadProtectedDefaults } from '../sandbox/profiles.ts';
import { DEFAULT_PROFILE, listProfiles } from '../sandbox/profile-names.ts';
import { stderr } from '../core/stdio.ts';
import { terminalSafe } from './render.ts';

interface Out {
  write(text: string): unknown;
}

export async function sandboxCheck(out: Out, probeOptions: ProbeOptions = {}): Promise<number> {
  const status = await probeSandbox({ ...probeOptions, fresh: true });
  const lines = [
    `backend: ${status.backend}`,
    `status: ${status.ok ? 'works' : 'NOT usable: shell commands will be refused in restricted mode'}`,
    `detail: ${status.detail}`,
  ];
  if (status.fix) lines.push(`fix: ${status.fix}`);
  lines.push(`profiles: ${listProfiles().join(', ')} (default ${DEFAULT_PROFILE})`);
  if (status.backend === 'bwrap') lines.push(`note: ${loadProtectedDefaults().limitation}`);
  out.write(`${lines.join('\n')}\n`);
  return status.ok ? 0 : 1;
}

export interface SandboxRunOptions {
  network: boolean;
  profile: string;
  cwd: string;
  /** The config's writable roots (workspace.writableRoots / --allow-write), as the bash tool gets them. */
  writableRoots?: string[];
  /** The config's extra protected globs (added to the defaults). */
  protectedGlobs?: string[];
  /** Each writable root's own protected globs, as the bash tool gets them. */
  rootProtectedGlobs?: Record<string, string[]>;
  /** Read-denied paths to hide from the command (absolute), as the bash tool gets them. */
  hidden?: string[];
  /** CONCH_TASK_* variables, as the bash tool passes them. */
  taskEnv?: Record<string, string>;
  /** The network allowlist (config, --allow-net), as the bash tool gets it: a proxy runs for the command. */
  netAllow?: string[];
  /** The per-user toolchain cache, as the bash tool gets it. */
  cacheDir?: string;
  /** Diagnostics (default: stderr). */
  err?: Out;
}

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Run argv in the sandbox with inherited stdio; the result is its exit status (128+n for signal n). */
export async function sandboxRun(argv: string[], opts: SandboxRunOptions): Promise<number> {
  const err = opts.err ?? stderr;
  if (argv.length === 0) {
    err.write('conch: sandbox run needs a command: conch sandbox run [--no-network] [--profile NAME] -- CMD ARGS…\n');
    return EXIT_CODES.setup_error;
  }
  let workspace: string;
  try {
    workspace = await realpath(opts.cwd);
  } catch {
    err.write(`conch: the working directory ${opts.cwd} does not exist; run from an existing directory.\n`);
    return EXIT_CODES.setup_error;
  }
  // From before the placeholders exist until they are gone, a closed terminal (SIGHUP) or a polite
  // kill (SIGTERM) must not end conch on the spot: it passes the signal on to the command and
  // cleans up. A signal before the command starts means it is not started at all.
  let child: Bun.Subprocess | null = null;
  let received: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    child?.kill(signal);
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);
  const signalled = () => 128 + (received ? (constants.signals[received] ?? 0) : 0);
  const tmpDir = await mkdtemp(runDirPrefix());
  rememberDirectory(tmpDir);
  // The proxy's socket goes in a directory of its own: tmpDir is the sandbox's /tmp.
  const proxyDir = opts.network && opts.netAllow ? await mkdtemp(join(tmpdir(), 'conch-net-')) : null;
  let proxy: NetworkProxy | null = null;
  try {
    if (proxyDir) proxy = await startProxy({ allow: parseAllowList(opts.netAllow!, () => '--allow-net'), dir: proxyDir, source: '--allow-net / sandbox.network.allow' });
    let prepared;
    try {
      prepared = await prepareSandboxed({
        profile: opts.profile,
        network: opts.network,
        writableRoots: opts.writableRoots ?? [],
        protectedGlobs: opts.protectedGlobs ?? [],
        ...(opts.rootProtectedGlobs ? { rootProtectedGlobs: opts.rootProtectedGlobs } : {}),
        ...(opts.hidden ? { hidden: opts.hidden } : {}),
        ...(opts.cacheDir ? { cacheDir: opts.cacheDir } : {}),
        ...(opts.netAllow ? { netAllow: opts.netAllow } : {}),
        ...(proxy ? { proxy } : {}),
        command: argv.join(' '),
        argv,
        cwd: workspace,
        workspace,
        tmpDir,
      });
    } catch (error) {
      if (error instanceof SandboxUnavailableError) {
        err.write(`conch: sandbox unavailable, command not run: ${error.status.detail}\n${error.status.fix ? `fix: ${error.status.fix}\n` : ''}`);
        return EXIT_CODES.setup_error;
      }
      if (error instanceof SandboxRequestError) {
        err.write(`conch: command not run: ${error.message}\n`);
        return EXIT_CODES.setup_error;
      }
      throw error;
    }
    try {
      if (received) return signalled();
      for (const note of prepared.notes ?? []) err.write(`conch: note: ${note}\n`);
      guardExit();
      const running = Bun.spawn(prepared.argv, {
        cwd: workspace,
        env: cleanEnv(process.env, opts.taskEnv ?? {}, { tmpDir }),
        stdio: ['inherit', 'inherit', 'inherit', ...prepared.extraFds, ...(prepared.channel ? ['pipe' as const] : [])],
      });
      prepared.channel?.((running.stdio as unknown[])[3 + prepared.extraFds.length] as number);
      child = running;
      const code = await running.exited;
      if (running.signalCode) return 128 + (constants.signals[running.signalCode as NodeJS.Signals] ?? 0);
      return code;
    } finally {
      // bwrap killed while it set up leaves its sandbox running without it (orphans.ts): it goes
      // before the placeholders that protect it.
      const orphans = sweepOrphans();
      for (let i = 0; i < 100 && orphans.some(processAlive); i++) await Bun.sleep(5);
      await prepared.release();
      // A note quotes what the command sent (a CONNECT target): no control sequence of it passes.
      for (const note of proxy?.notesSince(0) ?? []) err.write(`conch: ${terminalSafe(note)}\n`);
    }
  } finally {
    await proxy?.close();
    if (proxyDir) await rm(proxyDir, { recursive: true, force: true });
    await rm(tmpDir, { recursive: true, force: true });
    for (const signal of FORWARDED) process.off(signal, onSignal);
  }
}
