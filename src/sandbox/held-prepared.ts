// The next command's process in a held sandbox (held.ts), started while the sandbox is idle: nsenter
// and the light bwrap's whole setup, held at bwrap's --block-fd until a command comes. held.ts's top
// comment says why this is safe; this module starts it, gives it its command or lets it go, and ends
// it with its sandbox.
import { closeSync, writeSync } from 'node:fs';
import { stoppedTree } from './held-state.ts';
import { loadLibc } from '../process/libc.ts';
import { discardProcess, startProcess, type SpawnOptions, type StartedProcess } from '../process/spawn.ts';
import { openSeccompFd } from './seccomp-fd.ts';

/** The longest script a prepared process is given (the command quoted, and its exec); longer ones start as usual. */
const MAX_SCRIPT_BYTES = 16 * 1024;
/** The gate pipe's capacity: the script goes in one write that must never wait for the reader. */
const GATE_BYTES = 64 * 1024;

/** Commands entered into a held sandbox, prepared processes started and given a command (tests read it). */
export const preparedCounts = { entered: 0, started: 0, used: 0 };
if (process.env.CONCH_DEBUG_HELD) process.on('exit', () => console.error('held sandbox:', JSON.stringify(preparedCounts)));

/** The next command's process, started while the sandbox is idle and held at bwrap's --block-fd. */
interface Prepared {
  started: StartedProcess;
  /** The command's cwd inside (bwrap's --chdir) and conch's for the spawn; its environment. */
  cwd: string;
  hostCwd: string;
  env: Record<string, string>;
  /** conch's end of the pipe the process waits on (its --block-fd) and then reads its script from. */
  gate: number;
}

function quote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

function sameEnv(a: Record<string, string>, b: Record<string, string>): boolean {
  if (a === b) return true;
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => Object.hasOwn(b, name) && a[name] === b[name]);
}

/** One held sandbox's next command: at most one prepared process, and those let go until they are gone. */
export class PreparedCommands {
  private next: Prepared | null = null;
  /**
   * Prepared processes let go with no script, until they are gone. One usually ends at once, but a
   * command running beside it can stop it (SIGSTOP: the same user) before it does, and then it
   * stays in the sandbox, not the holder's child, and its nsenter outside stops with it.
   */
  private readonly lettingGo = new Set<StartedProcess>();
  /** The last command's cwds and environment: the next one most likely has the same. */
  private last: Omit<Prepared, 'started' | 'gate'> | null = null;

  /**
   * Start the next command's process now, while the sandbox is idle: nsenter and the light bwrap's
   * whole setup, up to its --block-fd, where it waits for claim. It then reads its script from the
   * same pipe: `exec` of the command's own /bin/sh -c argv, as a command started as usual runs.
   */
  prepare(prefix: string[], nsFds: number[]): void {
    if (this.next !== null || this.last === null) return;
    const libc = loadLibc()!;
    const gate = libc.pipe();
    if (!gate) return;
    const [waitEnd, gateEnd] = gate;
    let seccomp: ReturnType<typeof openSeccompFd> | null = null;
    try {
      // A pipe the user's pipe limits left small would make the write of a long script wait.
      if (libc.setPipeSize(gateEnd, GATE_BYTES) <= MAX_SCRIPT_BYTES) return;
      seccomp = openSeccompFd();
      const { cwd, hostCwd, env } = this.last;
      // The fds of a command entered as usual (index.ts closes them), then the gate twice: bwrap
      // closes its --block-fd once it reads a byte there; the shell reads its script from the other.
      const outputFd = 4 + nsFds.length;
      const started = startProcess({
        argv: [...prefix, '--block-fd', String(outputFd + 1), '--chdir', cwd, '--', '/bin/sh', `/proc/self/fd/${outputFd + 2}`],
        cwd: hostCwd,
        env,
        extraFds: [seccomp.fd, ...nsFds],
        outputFd,
        afterFds: [waitEnd, waitEnd],
      });
      if (typeof started === 'string') return;
      // Never what keeps conch running; claim makes it count again.
      started.proc.unref();
      this.next = { started, cwd, hostCwd, env, gate: gateEnd };
      preparedCounts.started++;
    } catch (error) {
      if (process.env.CONCH_DEBUG_HELD) console.error('held sandbox: no prepared process:', error);
    } finally {
      seccomp?.close();
      closeSync(waitEnd);
      if (this.next?.gate !== gateEnd) closeSync(gateEnd);
    }
  }

  /**
   * The prepared process for this command (entered: every check passed), or null. `stopSandbox`:
   * for a script not written whole, which must never run.
   */
  claim(cwd: string, command: string[], options: SpawnOptions, nsFds: number[], stopSandbox: () => void): StartedProcess | null {
    this.last = { cwd, hostCwd: options.cwd, env: options.env };
    const next = this.next;
    this.next = null;
    if (next === null) return null;
    const { proc } = next.started;
    // A newline for bwrap's --block-fd (the byte it waits for), then the script; fd 8 is its own.
    const script = Buffer.from(`\nexec ${command.map(quote).join(' ')} ${4 + nsFds.length + 2}>&-\n`);
    const fits =
      proc.exitCode === null && proc.signalCode === null && next.cwd === cwd && next.hostCwd === options.cwd && sameEnv(next.env, options.env) && script.length <= MAX_SCRIPT_BYTES;
    if (!fits) {
      // With no script it runs nothing: the shell reads an empty one and exits.
      closeSync(next.gate);
      this.lettingGo.add(next.started);
      void proc.exited.then(() => this.lettingGo.delete(next.started));
      discardProcess(next.started);
      return null;
    }
    let written = -1;
    try {
      // The pipe holds all of it (prepareNext made sure), so this one write never waits for the reader.
      written = writeSync(next.gate, script);
    } catch {
      // EPIPE: it is gone, and nothing ran.
    }
    if (written !== script.length) {
      // Part of a script must never run: the sandbox goes, and the gate closes only after the process.
      this.next = next;
      stopSandbox();
      return null;
    }
    closeSync(next.gate);
    proc.ref();
    preparedCounts.used++;
    return next.started;
  }

  /** Whether a process let go was stopped (by a command beside it): it would stay, so the sandbox must go. */
  oneLetGoStopped(): boolean {
    for (const { proc } of this.lettingGo) if (proc.exitCode === null && proc.signalCode === null && stoppedTree(proc.pid)) return true;
    return false;
  }

  /** With the sandbox (`holderKilled`: its pid 1 was signalled, which takes these processes with it). */
  stop(holderKilled: boolean): void {
    const next = this.next;
    this.next = null;
    if (next) {
      // Its processes in the sandbox go with the holder, each reaped by its parent, and nsenter then
      // ends. Killed from here as well, nsenter could go before its child bwrap, which would stay a
      // zombie of conch's (a subreaper), so only if the holder was not. The gate closes after: it
      // never runs past its --block-fd.
      if (!holderKilled) {
        try {
          process.kill(-next.started.proc.pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      void next.started.proc.exited.then(() => closeSync(next.gate));
      discardProcess(next.started);
    }
    // A stopped nsenter (its child was stopped) would never reap its child and end: let it go on.
    for (const { proc } of [...this.lettingGo, ...(next ? [next.started] : [])]) {
      try {
        process.kill(-proc.pid, 'SIGCONT');
      } catch {
        // gone already
      }
    }
    this.lettingGo.clear();
  }
}
