// A long-lived child that conch talks to over its stdin/stdout (an MCP server), as opposed to a
// command whose output is collected (spawn.ts). Same discipline: its own session and process group,
// only the environment it is given, a group kill proven at the end, and the group known to the exit
// hook, so a second Ctrl-C or an abandoned exit takes it down too.
import { constants } from 'node:os';
import { killGroup } from './group.ts';
import { trackGroup } from './spawn.ts';

export interface PipedOptions {
  argv: string[];
  cwd: string;
  /** The complete environment of the child (nothing is inherited). */
  env: Record<string, string>;
  /** File descriptors handed to the child as fd 3, 4, … (bwrap --seccomp). */
  extraFds?: number[];
  /** Bytes of stderr kept for diagnostics (the last ones). */
  stderrTailBytes?: number;
}

export interface PipedProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  write(bytes: string): void;
  /** Exit code, or null when killed by a signal. */
  readonly exited: Promise<number | null>;
  /** The last lines the child wrote to stderr. */
  stderrTail(): string;
  /**
   * Close its stdin and give it `graceMs` to exit by itself, then kill the group (SIGTERM, SIGKILL).
   * Resolves with a message when members are still alive afterwards, null when all are gone.
   */
  stop(graceMs: number): Promise<string | null>;
}

export function spawnPiped(options: PipedOptions): PipedProcess {
  const proc = Bun.spawn({
    cmd: options.argv,
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', ...(options.extraFds ?? [])],
  });
  const pgid = proc.pid;
  const untrack = trackGroup(pgid);
  const unguard = guardSignals();
  const forget = () => {
    untrack();
    unguard();
  };
  const maxTail = options.stderrTailBytes ?? 4096;
  let tail = '';
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for await (const chunk of proc.stderr) {
        tail = (tail + decoder.decode(chunk, { stream: true })).slice(-maxTail);
      }
    } catch {
      // the pipe broke: what we have is the tail
    }
  })();
  const exited = proc.exited.then(() => proc.exitCode);
  let stopping: Promise<string | null> | null = null;
  return {
    pid: pgid,
    stdout: proc.stdout,
    exited,
    write(bytes) {
      proc.stdin.write(bytes);
      proc.stdin.flush();
    },
    stderrTail: () => tail,
    stop(graceMs) {
      stopping ??= (async () => {
        try {
          await proc.stdin.end();
        } catch {
          // already closed: the child is gone or going
        }
        await settledWithin(exited, graceMs);
        // Whatever it left in its group goes too, and a child that ignored stdin closing is killed.
        const failure = await killGroup(pgid, Math.min(graceMs, 1000));
        forget();
        return failure;
      })();
      return stopping;
    },
  };
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let guarded = 0;
const onSignal = (name: (typeof SIGNALS)[number]) => {
  // A host listening for this signal cancels the run and disposes the servers itself.
  if (process.listenerCount(name) > 1) return;
  // Nobody is (a server still starting, before the run's own listeners): without a listener Bun
  // would end conch at once, skipping the exit hook that kills every group, and leave the children.
  process.exit(128 + (constants.signals[name] ?? 0));
};

/** While a piped child lives, a signal nobody else handles still ends conch through its exit hook. */
function guardSignals(): () => void {
  if (guarded++ === 0) for (const name of SIGNALS) process.on(name, onSignal);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--guarded === 0) for (const name of SIGNALS) process.off(name, onSignal);
  };
}

// A cleared timer, not Bun.sleep: a pending sleep would hold conch open after the child is gone.
function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    void promise.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
