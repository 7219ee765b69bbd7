// --json: exactly one JSON document on stdout when the run ends.
import type { EventSink } from '../agent/events.ts';
import { emptyUsage, EXIT_CODES, type Outcome } from '../agent/outcome.ts';

export const ENVELOPE_VERSION = 1;

export interface EnvelopeFacts {
  provider: string;
  model: string;
  mode: 'restricted' | 'unrestricted';
  sandbox: string;
  /** The stored session (null: --ephemeral). */
  sessionId: string | null;
}

/** What is known of the run's setting so far: before run.started (a plugin stuck while it loads) only some of it. */
export type KnownFacts = { [K in keyof EnvelopeFacts]: EnvelopeFacts[K] | null };

/** The envelope facts of a run that never started. */
export const NOT_STARTED: KnownFacts = { provider: null, model: null, mode: null, sandbox: null, sessionId: null };

/** Every envelope has the facts' keys, null for what is not known (a script reads one shape). */
export function envelope(runId: string, outcome: Outcome, facts: KnownFacts | null, exitCode: number) {
  return {
    version: ENVELOPE_VERSION,
    runId,
    status: outcome.status,
    ...(outcome.code ? { code: outcome.code } : {}),
    ...(outcome.limit ? { limit: outcome.limit } : {}),
    ...(outcome.rule ? { rule: outcome.rule } : {}),
    ...(outcome.signal ? { signal: outcome.signal } : {}),
    ...(outcome.message ? { message: outcome.message } : {}),
    // With an output schema a completed run's answer is the parsed JSON value, not its text.
    output: outcome.outputValue !== undefined ? outcome.outputValue : outcome.output,
    ...(outcome.outputErrors ? { outputErrors: outcome.outputErrors } : {}),
    // A run that did not complete has no answer: `output` is only the last text the model wrote.
    partial: outcome.status !== 'completed',
    stopReason: outcome.stopReason,
    usage: outcome.usage,
    counts: outcome.counts,
    thinking: outcome.thinking ?? { chars: 0, tokens: null },
    cost: outcome.cost ?? null,
    answeredBy: outcome.answeredBy ?? [],
    durationMs: outcome.durationMs,
    exitCode,
    ...(facts ?? NOT_STARTED),
  };
}

/**
 * The document for a setup or usage error (no run happened): every key a finished run's envelope
 * has, null where there is nothing to report, so a script reads one shape. runId is null when the
 * command line failed before a run id existed.
 */
export function setupEnvelope(runId: string | null, message: string) {
  return {
    version: ENVELOPE_VERSION,
    runId,
    status: 'failed',
    code: 'config_invalid',
    message,
    output: null,
    // `partial` marks an output that is not an answer; here there is no output at all.
    partial: false,
    stopReason: null,
    usage: emptyUsage(),
    counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 },
    thinking: { chars: 0, tokens: null },
    cost: null,
    answeredBy: [],
    durationMs: null,
    exitCode: EXIT_CODES.setup_error,
    provider: null,
    model: null,
    mode: null,
    sandbox: null,
    sessionId: null,
  };
}

/** Collects the run.started facts; the caller prints the envelope after run.finished. */
export function envelopeSink(): EventSink & { facts: EnvelopeFacts | null } {
  const sink = {
    facts: null as EnvelopeFacts | null,
    emit(event: Parameters<EventSink['emit']>[0]) {
      if (event.type === 'run.started') {
        sink.facts = { provider: event.provider, model: event.model, mode: event.mode, sandbox: event.sandbox, sessionId: event.session?.id ?? null };
      }
    },
  };
  return sink;
}
