// --trace FILE: one JSON line per event. Arguments, paths and content are left out unless
// --trace-content, so a trace can be shared without leaking the user's code or machine layout.
import { appendFileSync, writeFileSync } from 'node:fs';
import type { EventSink, RunEvent } from '../agent/events.ts';
import { SetupError } from '../core/errors.ts';

/** The run's trace from its flags: none without --trace; --trace-content alone is a setup error. */
export function traceFromFlags(flags: { trace?: string; traceContent?: boolean }): EventSink | undefined {
  if (flags.traceContent && !flags.trace) throw new SetupError('--trace-content needs --trace FILE: it says what to include in the trace.');
  return flags.trace ? openTrace(flags.trace, flags.traceContent === true) : undefined;
}

/** Open the trace file now, so a bad path is a setup error before the run, not a crash in it. */
export function openTrace(file: string, withContent: boolean): EventSink {
  try {
    writeFileSync(file, '');
  } catch (error) {
    const why = (error as { code?: string }).code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    throw new SetupError(`--trace ${file}: cannot write the trace file (${why}). Give a file path in an existing, writable directory.`);
  }
  return {
    emit(event: RunEvent) {
      appendFileSync(file, `${JSON.stringify(withContent ? event : redact(event))}\n`);
    },
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
