// Process lifecycle for every command conch runs: its own session and process group, stdin closed,
// a clean environment, bounded output, a deadline, and a teardown that kills the whole group and
// proves it (or says it could not).
import { closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadLibc } from './libc.ts';
import { BoundedOutput } from './output.ts';
import { startTimer } from '../core/duration.ts';
import { groupAlive, killGroup, killPids, pipeHolders, processAlive } from './group.ts';
import { mergedOutput, type MergedOutput } from './merged-output.ts';
import { adoptOrphans, killEscapees, settleOrphans, settleSandbox, sweepOrphans } from './orphans.ts';

export interface SpawnOptions {
  /** Full argv; argv[0] absolute or found on env.PATH. */
  argv: string[];
  cwd: string;
  /** The complete environment of the child (nothing is inherited). */
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Bytes of output kept for the result (head + tail, middle elided with a marker). */
  maxShownBytes: number;
  /** Directory for the full-output log written when output is truncated. */
  logDir: string;
  /** Bytes that log keeps at most; past them it stops growing (absent or 0: no bound). */
  maxLogBytes?: number;
  /** File descriptors handed to the child as fd 3, 4, … (bwrap --seccomp). */
  extraFds?: number[];
  /** One more child fd after extraFds, a socketpair; called with conch's end (the network relay's channel). */
  channel?: (fd: number) => void;
  /**
   * The output pipe goes to the child as this fd, right after extraFds and the channel, instead of
   * as fds 1 and 2 (a sandboxed command that moves it there itself: merged-output.ts says why).
   */
  outputFd?: number;
  /** With outputFd: bwrap's --info-fd, right after it; the sandbox's first process is then settled alone. */
  infoFd?: number;
  /**
   * Once the process group is gone, before the output is read: settles what the command leaves in
   * a sandbox it shares (sandbox/held.ts), in place of the settling of a sandbox of its own.
   */
  settle?: () => Promise<void>;
  /** Fds for the child after all the above (a process started ahead: sandbox/held.ts). */
  afterFds?: number[];
  /**
   * A process started ahead for this command (sandbox/held.ts), adopted as its process when claim
   * gives it: from then on the same output, deadline, kill and reaping as one spawned here.
   */
  ready?: { claim(options: SpawnOptions): StartedProcess | null };
  /** Grace between SIGTERM and SIGKILL of the process group. */
  killGraceMs?: number;
  onOutput?: (chunk: string) => void;
}

export interface ProcessResult {
  /** null when killed by a signal or never started. */
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr interleaved as they came, bounded (head + tail, elided middle). */
  output: string;
  truncated: boolean;
  totalBytes: number;
  /** Full output log when the output was truncated. */
  logPath: string | null;
  /** Set when that log was cut at maxLogBytes: the bytes it holds, the first of the output. */
  logCutAt?: number;
  timedOut: boolean;
  cancelled: boolean;
  /** Set when conch could not prove the process group was gone. */
  cleanupError?: string;
  durationMs: number;
  /** Set when the process could not be started at all (exitCode and signal are then null). */
  startError?: string;
}

export const DEFAULT_KILL_GRACE_MS = 2000;
// Once the group is dead only bytes already in the pipe remain; reading them takes far less.
const DRAIN_MS = 250;
const ESCAPEE_WAIT_MS = 1000;
// A sandbox SIGKILLed by the sweep ends with its namespace; past this, the drain reports what is left.
const ORPHAN_WAIT_MS = 2000;


export async function runProcess(options: SpawnOptions): Promise<ProcessResult> {
  if (options.argv.length === 0) throw new Error('runProcess: empty argv');
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const notStarted = (message: string, cancelled = false): ProcessResult => ({
    exitCode: null,
    signal: null,
    output: message,
    truncated: false,
    totalBytes: 0,
    logPath: null,
    timedOut: false,
    cancelled,
    durationMs: elapsed(),
    ...(cancelled ? {} : { startError: message }),
  });
  if (options.signal?.aborted) return notStarted('cancelled before the command started', true);

  let child = options.ready?.claim(options) ?? null;
  if (child === null) {
    const spawned = startProcess(options);
    if (typeof spawned === 'string') return notStarted(spawned);
    child = spawned;
  }
  const { proc, output, info } = child;
  const pgid = proc.pid;
  const pipe = output.identity(pgid);
  const sink = new BoundedOutput(options.maxShownBytes, options.logDir, options.onOutput, options.maxLogBytes);
  const reader = output.stream(proc.stdout).getReader();
  let ended = false;
  const reading = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        sink.push(value);
      }
    } catch {
      // Cancelled by us after the drain window, or the pipe broke: what we have is the output.
    } finally {
      ended = true;
    }
  })();

  const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  // Mutated from callbacks; an object keeps TypeScript from narrowing it to its initial value.
  const state: { stopReason: 'timeout' | 'cancel' | null; killing: Promise<string | null> | null } = {
    stopReason: null,
    killing: null,
  };
  let leaderWait!: () => void;
  const leaderDone = new Promise<void>((resolve) => (leaderWait = resolve));
  void proc.exited.then(() => leaderWait());
  const stop = (why: 'timeout' | 'cancel') => {
    if (state.stopReason) return;
    state.stopReason = why;
    state.killing = killGroup(pgid, graceMs);
    // A leader that survives SIGKILL (uninterruptible sleep) must not hang the call.
    void state.killing.then((failure) => failure && leaderWait());
  };
  const timer = startTimer(options.timeoutMs, () => stop('timeout'));
  const onAbort = () => stop('cancel');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  await leaderDone;
  timer.clear();
  options.signal?.removeEventListener('abort', onAbort);

  // The command is over: whatever it left running in its group goes too.
  const problems: string[] = [];
  // Killed: the command did not end by itself (a stop, or its group outlived the leader).
  const killed = state.stopReason !== null || groupAlive(pgid);
  // Not even a promise when nothing is left to kill: every turn of the event loop shows here.
  const killing = state.killing ?? (killed ? killGroup(pgid, graceMs) : null);
  const groupFailure = killing ? await killing : null;
  if (groupFailure) problems.push(groupFailure);
  liveGroups.delete(pgid);
  groupsListener?.([...liveGroups]);
  // A sandbox whose bwrap was killed has no parent that can end it (orphans.ts); and until it is
  // gone its processes hold the output pipe, so wait for that before looking for escapees. A
  // command that ended by itself leaves at most a sandbox going down with nothing left in it:
  // that is reaped in the background (settleOrphans says why).
  // bwrap named the sandbox's first process: after a command that ended by itself, that one process
  // is all there is to settle (the full sweep reads every child of conch's).
  const init = info?.childPid() ?? null;
  info?.close();
  if (options.settle) await options.settle();
  else if (killed || init === null || settleSandbox(init) !== 'settled') {
    const settling = settleOrphans(ORPHAN_WAIT_MS, { untilIdle: !killed });
    if (settling) await settling;
  }
  // Usually the output ended with the command: then there is no window to wait in.
  const escape = ended ? null : await drain(reading, reader, pipe);
  const early = output.early();
  output.close();
  if (escape) problems.push(escape);
  if (early.length > 0) sink.push(early);

  const captured = sink.finish();
  const leaderExited = proc.exitCode !== null || proc.signalCode !== null;
  return {
    exitCode: proc.exitCode,
    signal: proc.signalCode === null ? null : String(proc.signalCode),
    output: captured.output,
    truncated: captured.truncated,
    totalBytes: captured.totalBytes,
    logPath: captured.logPath,
    ...(captured.logCutAt === undefined ? {} : { logCutAt: captured.logCutAt }),
    timedOut: state.stopReason === 'timeout',
    cancelled: state.stopReason === 'cancel',
    durationMs: elapsed(),
    ...(problems.length || !leaderExited
      ? { cleanupError: [...(leaderExited ? [] : [`process ${pgid} did not exit after SIGKILL`]), ...problems].join('; ') }
      : {}),
  };
}

/** What startProcess needs of SpawnOptions. */
export type StartOptions = Pick<SpawnOptions, 'argv' | 'cwd' | 'env' | 'extraFds' | 'channel' | 'outputFd' | 'infoFd' | 'afterFds'>;

/** A command's process as spawned, its output not yet read: runProcess's, or one started ahead (SpawnOptions.ready). */
export interface StartedProcess {
  proc: Bun.Subprocess;
  output: MergedOutput;
  info: SandboxInfo | null;
}

/**
 * Spawn the command with its output pipe and descriptors, its process group tracked (a second
 * Ctrl-C, conch's exit) from now on; or why it could not start.
 */
export function startProcess(options: StartOptions): StartedProcess | string {
  guardExit();
  const output = mergedOutput(options.argv, options.outputFd === undefined ? {} : { outputFd: options.outputFd });
  const stdio: ['ignore', ...Bun.Spawn.Readable[]] = ['ignore', output.stdout, output.stderr, ...(options.extraFds ?? []), ...(options.channel ? ['pipe' as const] : [])];
  if (output.atOutputFd !== undefined) {
    if (stdio.length !== options.outputFd) throw new Error(`startProcess: outputFd ${options.outputFd} is not the next fd (${stdio.length})`);
    stdio.push(output.atOutputFd);
  }
  const info = output.atOutputFd !== undefined && options.infoFd === stdio.length ? sandboxInfo() : null;
  if (info) stdio.push(info.writeEnd);
  stdio.push(...(options.afterFds ?? []));
  let proc: Bun.Subprocess;
  try {
    // detached: a session and process group of its own, led by the command itself.
    proc = Bun.spawn({
      cmd: output.cmd,
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: stdio as ['ignore', Bun.Spawn.Readable, Bun.Spawn.Readable, ...Bun.Spawn.Readable[]],
    });
    if (options.channel) options.channel((proc.stdio as unknown[])[3 + (options.extraFds?.length ?? 0)] as number);
  } catch (error) {
    info?.close();
    output.spawned();
    output.close();
    return `could not start ${options.argv[0]} in ${options.cwd}: ${(error as Error).message}`;
  }
  output.spawned();
  info?.spawned();
  liveGroups.add(proc.pid);
  groupsListener?.([...liveGroups]);
  return { proc, output, info };
}

/**
 * A process started ahead that no command was given: once it is gone (it ends by itself, or its
 * owner kills it), its pipes close and its group is forgotten.
 */
export function discardProcess(started: StartedProcess): void {
  void started.proc.exited.then(() => {
    started.info?.close();
    started.output.close();
    liveGroups.delete(started.proc.pid);
    groupsListener?.([...liveGroups]);
  });
}

/**
 * Wait for EOF on the output. With the group dead, a writer still holding the pipe has left the
 * group (setsid or setpgid): find it, kill it, and report it, because it escaped our teardown.
 */
async function drain(
  reading: Promise<void>,
  reader: { cancel(): Promise<void> },
  pipe: string | null,
): Promise<string | null> {
  if (await eofWithin(reading, DRAIN_MS)) return null;
  let holders = pipe ? pipeHolders(pipe) : [];
  // Nobody found holding it: EOF may only be slow in arriving (a loaded machine); give it longer.
  if (holders.length === 0 && (await eofWithin(reading, ESCAPEE_WAIT_MS))) return null;
  killPids(holders);
  if (holders.length) await Bun.sleep(50);
  const survivors = holders.filter(processAlive);
  await reader.cancel().catch(() => {});
  await reading;
  if (holders.length === 0) {
    return 'the output stayed open after the process group was killed: a process left the process group (setsid?) and may still be running';
  }
  const fate = survivors.length === 0 ? 'conch killed them' : `still alive after SIGKILL: ${survivors.join(', ')}`;
  return `processes ${holders.join(', ')} left the process group (setsid?) and kept the output open; ${fate}`;
}

// A cleared timer rather than Bun.sleep: a pending sleep would keep the process alive after a run.
function eofWithin(reading: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    void reading.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const PASSED_THROUGH = ['HOME', 'USER', 'LOGNAME'] as const;
export const TASK_ENV_PREFIX = 'CONCH_TASK_';

/**
 * The small clean environment for commands: PATH, HOME, USER, LOGNAME, LANG/LC_ALL, TERM=dumb,
 * TMPDIR, SHELL=/bin/sh, plus CONCH_TASK_* extras. Nothing else is inherited: credentials and
 * shell customisation in the parent's environment never reach a command.
 */
export function cleanEnv(
  parent: Record<string, string | undefined>,
  extra: Record<string, string>,
  options: { tmpDir?: string } = {},
): Record<string, string> {
  const env: Record<string, string> = { PATH: commandPath(parent.PATH) };
  for (const name of PASSED_THROUGH) {
    const value = parent[name];
    if (value) env[name] = value;
  }
  if (parent.LANG) env.LANG = parent.LANG;
  if (parent.LC_ALL) env.LC_ALL = parent.LC_ALL;
  if (!parent.LANG && !parent.LC_ALL) env.LANG = 'C.UTF-8';
  env.TERM = 'dumb';
  env.TMPDIR = options.tmpDir ?? (parent.TMPDIR || tmpdir());
  env.SHELL = '/bin/sh';
  for (const [name, value] of Object.entries(extra)) {
    // The config layer rejects other names with a message; reaching here with one is a bug.
    if (!name.startsWith(TASK_ENV_PREFIX)) throw new Error(`cleanEnv: ${name} is not a ${TASK_ENV_PREFIX}* variable`);
    env[name] = value;
  }
  return env;
}

/**
 * The PATH commands get: the user's, minus entries that are relative (they follow the command's
 * cwd) or under the temp directory (inside the sandbox /tmp is the run's own, so such an entry
 * names a directory the command itself can fill, shadowing real programs).
 */
export function commandPath(path: string | undefined): string {
  const temps = [...new Set(['/tmp', tmpdir()])].map((t) => t.replace(/\/+$/, ''));
  const kept = (path || DEFAULT_PATH)
    .split(':')
    .filter((dir) => dir.startsWith('/') && !temps.some((t) => dir === t || dir.startsWith(`${t}/`)));
  return kept.length > 0 ? kept.join(':') : DEFAULT_PATH;
}

/** Process groups started here and not yet torn down. */
const liveGroups = new Set<number>();
let groupsListener: ((groups: number[]) => void) | null = null;

/** Be told the live groups each time they change: the watchdog kills them when the main thread cannot. */
export function watchLiveGroups(watch: ((groups: number[]) => void) | null): void {
  groupsListener = watch;
  watch?.([...liveGroups]);
}

/**
 * For a long-lived process started elsewhere in process/ (an MCP server): its group is killed with
 * every other one on a second Ctrl-C or at exit. Returns the function that forgets it again.
 */
export function trackGroup(pgid: number): () => void {
  guardExit();
  liveGroups.add(pgid);
  return () => liveGroups.delete(pgid);
}

let exitGuarded = false;

/**
 * Before conch starts a command: orphaned sandboxes come back to conch (orphans.ts), and however
 * conch exits normally (process.exit with a call abandoned, a second Ctrl-C), what it started goes.
 */
export function guardExit(): void {
  if (exitGuarded) return;
  exitGuarded = true;
  adoptOrphans();
  process.on('exit', killAllNow);
}

const pause = new Int32Array(new SharedArrayBuffer(4));
const EXIT_WAIT_MS = 300;

/**
 * For an immediate exit (a second Ctrl-C, the exit hook): SIGKILL every group still running,
 * without the grace period, and every orphaned sandbox, so nothing conch started outlives it.
 * Synchronous (it runs in the exit hook): a sandbox whose bwrap dies only now may be orphaned by
 * that very kill, so it waits a moment for the groups to go and then looks for orphans again.
 */
export function killAllNow(): void {
  const groups = [...liveGroups];
  liveGroups.clear();
  groupsListener?.([]);
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  sweepOrphans();
  if (groups.length > 0) {
    const until = Date.now() + EXIT_WAIT_MS;
    while (groups.some(groupAlive) && Date.now() < until) Atomics.wait(pause, 0, 0, 5);
    sweepOrphans();
  }
  killEscapees();
}

// bwrap's info is one short JSON object; read synchronously, so one buffer serves every command.
const infoBuffer = Buffer.alloc(1024);

/** bwrap's --info-fd: a non-blocking pipe read once bwrap is gone (it writes and closes it early). */
interface SandboxInfo {
  writeEnd: number;
  spawned(): void;
  childPid(): number | null;
  close(): void;
}

function sandboxInfo(): SandboxInfo | null {
  const libc = loadLibc();
  const fds = libc?.pipe({ nonBlocking: true }) ?? null;
  if (!libc || !fds) return null;
  const [readEnd, writeEnd] = fds;
  let writeOpen = true;
  let readOpen = true;
  return {
    writeEnd,
    spawned() {
      if (writeOpen) closeSync(writeEnd);
      writeOpen = false;
    },
    childPid() {
      if (!readOpen) return null;
      // libc's read: -1 (EAGAIN) when bwrap wrote nothing, having failed before its child was made.
      const n = libc.read(readEnd, infoBuffer);
      if (n <= 0) return null;
      const pid = /"child-pid":\s*(\d+)/.exec(infoBuffer.toString('latin1', 0, n))?.[1];
      return pid ? Number(pid) : null;
    },
    close() {
      this.spawned();
      if (readOpen) closeSync(readEnd);
      readOpen = false;
    },
  };
}
