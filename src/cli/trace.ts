// --trace FILE: one JSON line per event. Arguments, paths and content are left out unless
// --trace-content, so a trace can be shared without leaking the user's code or machine layout.
//
// Whatever it includes, no secret value the run knows (config/secret-values.ts) is written: each is
// replaced by a marker, as in sessions, and streamed text holds back a possible start of one until
// the next piece shows whether it completes it.
import { constants, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { stderr, stdout } from '../core/stdio.ts';
import type { EventSink, RunEvent } from '../agent/events.ts';
import { SetupError } from '../core/errors.ts';
import { partialSecretTail, redactor, type SecretValue } from '../core/secret-scrub.ts';

export interface Trace extends EventSink {
  /** Values to hide from here on (a later run's model may bring another key); they add up. */
  hide(secrets: SecretValue[]): void;
}

/** The run's trace from its flags: none without --trace; --trace-content alone is a setup error. */
export function traceFromFlags(flags: { trace?: string; traceContent?: boolean; json?: boolean }, secrets: SecretValue[]): Trace | undefined {
  if (flags.traceContent && !flags.trace) throw new SetupError('--trace-content needs --trace FILE: it says what to include in the trace.');
  if (!flags.trace) return undefined;
  if (flags.json && stdStream(flags.trace) === 'stdout') {
    throw new SetupError(`--trace ${flags.trace} with --json: stdout holds the one JSON document; send the trace to /dev/stderr or a file.`);
  }
  const trace = openTrace(flags.trace, flags.traceContent === true);
  trace.hide(secrets);
  return trace;
}

type Streamed = Extract<RunEvent, { type: 'text.delta' | 'thinking.delta' | 'tool.updated' }>;
/** Which stream an event's text continues (a tool's progress is its call's own), or null. */
function streamOf(event: RunEvent): string | null {
  if (event.type === 'text.delta' || event.type === 'thinking.delta') return event.type;
  return event.type === 'tool.updated' ? `tool.updated ${event.callId}` : null;
}

/** Open the trace file now, so a bad path is a setup error before the run, not a crash in it. */
export function openTrace(file: string, withContent: boolean): Trace {
  const put = openTraceOutput(file);
  let secrets: SecretValue[] = [];
  let scrub = redactor([]);
  const write = (event: RunEvent) => {
    put(Buffer.from(`${JSON.stringify(scrub(withContent ? event : redact(event)))}\n`));
  };
  // The last streamed event, when its text ends in what may be the start of a secret.
  let held: { stream: string; event: Streamed } | null = null;
  const flush = () => {
    if (held) write(held.event);
    held = null;
  };
  return {
    hide(more) {
      secrets = [...secrets, ...more.filter((m) => !secrets.some((s) => s.value === m.value))];
      scrub = redactor(secrets);
    },
    emit(event: RunEvent) {
      const stream = withContent && secrets.length ? streamOf(event) : null;
      if (stream === null) {
        flush();
        return write(event);
      }
      const piece = event as Streamed;
      const before = held?.stream === stream ? held.event : null;
      if (!before) flush();
      held = null;
      // Scrubbed as one text and cut where a secret may still be starting: the earlier piece gets
      // what is safe, this one the rest, held until the next piece (or any other event) comes.
      const text = scrub((before?.text ?? '') + piece.text);
      const cut = text.length - partialSecretTail(text, secrets);
      if (before) write({ ...before, text: text.slice(0, cut) });
      if (cut < text.length) held = { stream, event: { ...piece, text: before ? text.slice(cut) : text } };
      else write({ ...piece, text: before ? '' : text });
    },
  };
}

/** Whether FILE names conch's own stdout or stderr (/dev/stderr, /dev/fd/1, /proc/self/fd/2). */
function stdStream(file: string): 'stdout' | 'stderr' | null {
  const m = /^\/(?:dev\/std(out|err)|dev\/fd\/([12])|proc\/self\/fd\/([12]))$/.exec(resolve(file));
  if (!m) return null;
  return m[1] === 'out' || m[2] === '1' || m[3] === '1' ? 'stdout' : 'stderr';
}

/**
 * Where the trace's bytes go. /dev/stderr and /dev/stdout (or /dev/fd/2, /proc/self/fd/1…) are
 * conch's own stderr and stdout, written as the rest of its output is (they may be sockets, which
 * Linux cannot open by path). Other links under /dev and /proc are followed: /dev/fd/N names a
 * descriptor the user's shell gave conch (3>>log, a process substitution), and no sandboxed command
 * can put a link there. What they lead to is appended to, as the shell opened it.
 */
function openTraceOutput(file: string): (bytes: Uint8Array) => void {
  // Elsewhere '-' means stdout, which holds the answer here: a file of that name would be a surprise.
  if (file === '-') throw new SetupError("--trace -: give a file, or --trace /dev/stderr to see the events beside the answer (conch's stdout holds the answer).");
  const std = stdStream(file);
  if (std) {
    const output = std === 'stdout' ? stdout : stderr;
    return (bytes) => void output.write(bytes);
  }
  const path = resolve(file);
  const system = /^\/(dev|proc)\//.test(path);
  // Otherwise opened once, and written through this descriptor only: the file may lie in the
  // workspace, where a sandboxed command can replace it with a link (to a ~/.bashrc) that appending
  // by path would follow. Not through a link either: one a command of an earlier run left there
  // would be truncated and written.
  const mode = constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | (system ? 0 : constants.O_TRUNC | constants.O_NOFOLLOW);
  let fd: number;
  try {
    fd = openSync(file, mode, 0o666);
  } catch (error) {
    const code = (error as { code?: string }).code;
    const why =
      code === 'EISDIR' ? 'it is a directory'
      : code === 'ELOOP' ? 'it is a symbolic link, which conch does not follow: a command may have put it there; remove it or give the file itself'
      : (error as Error).message;
    throw new SetupError(`--trace ${file}: cannot write the trace file (${why}). Give a file path in an existing, writable directory.`);
  }
  return (bytes) => {
    for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset);
  };
}

export function redact(event: RunEvent): Record<string, unknown> {
  switch (event.type) {
    case 'text.delta':
    case 'thinking.delta':
      return { ...event, text: undefined, chars: event.text.length };
    case 'tool.started':
      return { ...event, args: undefined };
    case 'tool.updated':
      return { ...event, text: undefined };
    case 'tool.finished':
      return { ...event, output: undefined, details: undefined, outputChars: event.output.length };
    case 'run.started':
      // What resuming narrowed can name writable roots: paths of the user's machine.
      return event.session ? { ...event, session: { ...event.session, narrowed: event.session.narrowed.length } } : { ...event };
    case 'output.repair':
      // The paths can name keys the model wrote: counted, not quoted.
      return { ...event, errors: event.errors.length };
    case 'run.finished': {
      const { outputValue: _value, outputErrors, ...outcome } = event.outcome;
      return {
        ...event,
        outcome: { ...outcome, output: undefined, message: undefined, outputChars: outcome.output.length, ...(outputErrors ? { outputErrors: outputErrors.length } : {}) },
      };
    }
    default:
      return { ...event };
  }
}
