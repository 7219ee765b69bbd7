// Piped stdin is part of the task (`git diff | conch "review this"`): read to its end, bounded by
// the stdin_bytes limit, and said out loud on a terminal when the end is slow to come
// (`sleep 8 | conch …` would otherwise look like a hang).
import { SetupError } from '../core/errors.ts';
import { startTimer } from '../core/duration.ts';
import { stderr, stdinIsTTY } from '../core/stdio.ts';
import { emptyUsage, SignalStop, type Outcome, type StopSignal } from '../agent/outcome.ts';

/** How long stdin may stay open before conch says it is waiting for it. */
const QUIET_MS = 1000;

export type StdinInput =
  | { text: string }
  | { tooLarge: true; maxBytes: number }
  | { binary: true; bytes: number }
  | { stopped: 'deadline' | StopSignal };

/**
 * '' when stdin is a terminal or unreadable; 0 = unlimited, as for the other count limits. The wait
 * is bounded like the run (deadlineMs, 0 = none) and ends when `cancel` aborts (the run's signal
 * listeners, cancelOnSignals, installed before the read): a parent that never closes the pipe (Node's
 * spawn, Popen(stdin=PIPE)) would otherwise hold conch forever, deaf to --timeout. Listeners of its
 * own, removed once the input ended, lost the Ctrl-C that ended it (`sleep 9 | conch …`: the pipe
 * closes as the signal comes) and the task ran on what had arrived.
 */
export async function readPipedStdin(maxBytes: number, deadlineMs: number, cancel: AbortSignal): Promise<StdinInput> {
  if (stdinIsTTY()) return { text: '' };
  const notice = stderr.isTTY
    ? setTimeout(() => stderr.write('conch: reading stdin as part of the task, until it ends (run with </dev/null to leave it out)\n'), QUIET_MS)
    : undefined;
  let stop: (why: 'deadline' | StopSignal) => void = () => {};
  const stopped = new Promise<StdinInput>((resolve) => (stop = (why) => resolve({ stopped: why })));
  const deadline = deadlineMs > 0 ? startTimer(deadlineMs, () => stop('deadline')) : undefined;
  const onAbort = () => stop(cancel.reason instanceof SignalStop ? cancel.reason.signal : 'SIGINT');
  if (cancel.aborted) onAbort();
  else cancel.addEventListener('abort', onAbort, { once: true });
  // Made on the first read, inside readAll's try: for a stdin that is a directory it throws (EISDIR).
  let reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> } | undefined;
  const next = () => (reader ??= (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader()).read();
  try {
    const input = await Promise.race([readAll(next, maxBytes), stopped]);
    if ('tooLarge' in input || 'stopped' in input) void reader?.cancel().catch(() => {});
    return input;
  } finally {
    clearTimeout(notice);
    deadline?.clear();
    cancel.removeEventListener('abort', onAbort);
  }
}

async function readAll(next: () => Promise<{ done: boolean; value?: Uint8Array }>, maxBytes: number): Promise<StdinInput> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await next();
      if (done || value === undefined) break;
      total += value.length;
      if (maxBytes > 0 && total > maxBytes) return { tooLarge: true, maxBytes };
      chunks.push(value);
    }
  } catch {
    // An unreadable stdin (closed, a directory) adds nothing to the task.
    return { text: '' };
  }
  const bytes = Buffer.concat(chunks);
  // A NUL byte is what git takes for binary too: decoded as text it reaches the model as noise.
  if (bytes.includes(0)) return { binary: true, bytes: bytes.length };
  return { text: bytes.toString('utf8') };
}

/** Waiting for stdin ended the run before it started: the deadline passed, or a signal came. */
export function stdinStoppedOutcome(why: 'deadline' | StopSignal, deadlineMs: number): Outcome {
  const base = { output: '', stopReason: null, usage: emptyUsage(), counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 }, durationMs: 0 };
  if (why !== 'deadline') return { ...base, status: 'cancelled', signal: why, message: `${new SignalStop(why).message}, while conch waited for stdin to end` };
  return {
    ...base,
    status: 'timed_out',
    message: `stdin did not end within the run deadline of ${deadlineMs} ms (limit deadline_ms; flag --timeout): piped input is read to its end before the run starts. Close it, or run with </dev/null to leave it out`,
  };
}

/** `cat image.png | conch "describe"`: said before any model call, with what to do instead. */
export function binaryStdinError(bytes: number): SetupError {
  return new SetupError(
    `stdin is binary (${bytes} bytes with NUL bytes), and piped input is added to the task as text. Save it to a file in the workspace and name the file in the task instead (the read tool shows images and describes other binary files), or run with </dev/null to leave stdin out.`,
  );
}

/** The task: the arguments, with piped input appended in a marked block. */
export function composeTask(taskArg: string, piped: string): string {
  if (!piped.trim()) return taskArg.trim();
  if (!taskArg.trim()) return piped;
  return `${taskArg.trim()}\n\n<stdin>\n${piped.replace(/\n$/, '')}\n</stdin>`;
}
