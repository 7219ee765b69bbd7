// --json: exactly one JSON document on stdout when the run ends.
import type { EventSink } from '../agent/events.ts';
import type { Outcome } from '../agent/outcome.ts';

export const ENVELOPE_VERSION = 1;

export interface EnvelopeFacts {
  provider: string;
  model: string;
  mode: 'restricted' | 'unrestricted';
  sandbox: string;
}

export function envelope(runId: string, outcome: Outcome, facts: EnvelopeFacts | null, exitCode: number) {
  return {
    version: ENVELOPE_VERSION,
    runId,
    status: outcome.status,
    ...(outcome.code ? { code: outcome.code } : {}),
    ...(outcome.limit ? { limit: outcome.limit } : {}),
    ...(outcome.rule ? { rule: outcome.rule } : {}),
    ...(outcome.message ? { message: outcome.message } : {}),
    output: outcome.output,
    // A run that did not complete has no answer: `output` is only the last text the model wrote.
    partial: outcome.status !== 'completed',
    stopReason: outcome.stopReason,
    usage: outcome.usage,
    counts: outcome.counts,
    durationMs: outcome.durationMs,
    exitCode,
    ...(facts ?? {}),
  };
}

/** Collects the run.started facts; the caller prints the envelope after run.finished. */
export function envelopeSink(): EventSink & { facts: EnvelopeFacts | null } {
  const sink = {
    facts: null as EnvelopeFacts | null,
    emit(event: Parameters<EventSink['emit']>[0]) {
      if (event.type === 'run.started') {
        sink.facts = { provider: event.provider, model: event.model, mode: event.mode, sandbox: event.sandbox };
      }
    },
  };
  return sink;
}
