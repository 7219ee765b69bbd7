// --trace FILE: one JSON line per event. Arguments, paths and content are left out unless
// --trace-content, so a trace can be shared without leaking the user's code or machine layout.
import { appendFileSync, writeFileSync } from 'node:fs';
import type { EventSink, RunEvent } from '../agent/events.ts';

export function traceSink(file: string, withContent: boolean): EventSink {
  writeFileSync(file, '');
  return {
    emit(event: RunEvent) {
      appendFileSync(file, `${JSON.stringify(withContent ? event : redact(event))}\n`);
    },
  };
}

export function redact(event: RunEvent): Record<string, unknown> {
  switch (event.type) {
    case 'text.delta':
      return { ...event, text: undefined, chars: event.text.length };
    case 'tool.started':
      return { ...event, args: undefined };
    case 'tool.updated':
      return { ...event, text: undefined };
    case 'tool.finished':
      return { ...event, output: undefined, details: undefined, outputChars: event.output.length };
    case 'run.finished':
      return { ...event, outcome: { ...event.outcome, output: undefined, message: undefined, outputChars: event.outcome.output.length } };
    default:
      return { ...event };
  }
}
