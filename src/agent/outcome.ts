import type { Usage } from '../providers/types.ts';

/** The six ways a run can end. Exactly one per run. */
export type OutcomeStatus =
  | 'completed'
  | 'cancelled'
  | 'timed_out'
  | 'policy_denied'
  | 'limit_exceeded'
  | 'failed';

/** Closed set of failure codes for `failed` outcomes. */
export const FAILURE_CODES = [
  'provider_auth',
  'provider_unavailable',
  'provider_protocol',
  'provider_rejected',
  'config_invalid',
  'tool_cleanup',
  'output_invalid',
  'model_stuck',
  'internal',
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

/** What is wrong with an answer that had to match the output schema: a JSON Pointer into it ('' = the whole) and why. */
export interface OutputIssue {
  path: string;
  message: string;
}

export interface RunCounts {
  modelCalls: number;
  toolCalls: number;
  toolErrors: number;
}

export interface Outcome {
  status: OutcomeStatus;
  /** The model's final answer text (what was streamed to stdout), possibly partial. */
  output: string;
  /** Provider stop reason of the last model call, when there was one. */
  stopReason: string | null;
  usage: Usage;
  counts: RunCounts;
  durationMs: number;
  /** The model's visible reasoning, counted (its text is in the events, never in the outcome). */
  thinking?: { chars: number; tokens: number | null };
  /** What the model calls cost; null when any figure (a token count, a price) is unknown. */
  cost?: { usd: number; estimated: boolean } | null;
  /** The model ("provider/model") that answered each turn, in turn order. */
  answeredBy?: string[];
  /** Prompt tokens over the run, cached ones included (for the cache hit ratio); null when not reported. */
  promptTokens?: number | null;
  /** Human-readable reason for every status but `completed`. */
  message?: string;
  /** For `failed`. */
  code?: FailureCode;
  /** For `limit_exceeded`: the limit's name (see limits.ts). */
  limit?: string;
  /** For `policy_denied`: the id of the deciding rule. */
  rule?: string;
  /** For `cancelled`: the signal that asked conch to stop, when one did (its exit code is 128 + its number). */
  signal?: StopSignal;
  /** With an output schema, a completed run's answer as the parsed JSON value. */
  outputValue?: unknown;
  /** With an output schema, why the last answer did not validate (`output_invalid`, or a limit hit before the repair). */
  outputErrors?: OutputIssue[];
}

/** The signals a host cancels a run on. */
export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/**
 * A run cancelled by a signal exits as shells report a process the signal ended, 128 + its number
 * (the same on Linux and macOS), so `kill` (SIGTERM, 143) is not mistaken for Ctrl-C (SIGINT, 130).
 */
export const SIGNAL_EXIT_CODES: Record<StopSignal, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

/** A signal's name as a StopSignal (the watchdog passes names as text); any other counts as SIGINT. */
export function stopSignal(name: string): StopSignal {
  return name in SIGNAL_EXIT_CODES ? (name as StopSignal) : 'SIGINT';
}

/**
 * The AbortSignal reason of a run a signal stopped: the loop ends it as `cancelled` with this message
 * and `signal`. The status stays cancelled (no new failure code): the run was asked to stop.
 */
export class SignalStop extends Error {
  constructor(readonly signal: StopSignal) {
    super(signal === 'SIGINT' ? 'cancelled by the user' : `terminated by signal ${signal}${signal === 'SIGHUP' ? ' (the terminal closed)' : ''}`);
    this.name = 'SignalStop';
  }
}

/** Documented, distinct exit codes (README "Exit codes"). */
export const EXIT_CODES = {
  completed: 0,
  failed: 1,
  setup_error: 2,
  policy_denied: 3,
  limit_exceeded: 4,
  /** `failed` with code output_invalid: scripts tell a wrong answer from a broken run. */
  output_invalid: 5,
  timed_out: 124,
  /** Ctrl-C, or a host's own cancel; a signal other than SIGINT has its own (SIGNAL_EXIT_CODES). */
  cancelled: 130,
} as const;

export function exitCodeFor(outcome: Pick<Outcome, 'status' | 'code' | 'signal'>): number {
  if (outcome.status === 'cancelled' && outcome.signal) return SIGNAL_EXIT_CODES[outcome.signal];
  return outcome.code === 'output_invalid' ? EXIT_CODES.output_invalid : EXIT_CODES[outcome.status];
}

export function emptyUsage(): Usage {
  return { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null };
}

/**
 * Sum usage over model calls. A total is known only when every call reported that figure: a call
 * that did not report it makes the total unknown (null), never a silent undercount.
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const add = (x: number | null, y: number | null) => (x === null || y === null ? null : x + y);
  return {
    inputTokens: add(a.inputTokens, b.inputTokens),
    outputTokens: add(a.outputTokens, b.outputTokens),
    cacheReadTokens: add(a.cacheReadTokens, b.cacheReadTokens),
    cacheWriteTokens: add(a.cacheWriteTokens, b.cacheWriteTokens),
  };
}
