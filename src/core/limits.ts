/**
 * Every limit has a name, a default, a flag and a config key (config: limits.<name>). The
 * durations (DURATION_LIMITS) are checked by core/duration.ts: above 0, at most 365 days.
 */
export interface Limits {
  /** Run deadline in ms. Flag --timeout (seconds or 30s/5m/1h). */
  deadline_ms: number;
  /** Model calls per run; 0 = unlimited. Flag --max-turns. */
  model_calls: number;
  /** Tool calls per run; 0 = unlimited. Flag --max-tool-calls. */
  tool_calls: number;
  /** Bytes of one tool call's JSON arguments. */
  tool_argument_bytes: number;
  /** Bytes of one tool result after JSON serialization. */
  tool_result_bytes: number;
  /** Bytes of the serialized request context sent to the model. */
  context_bytes: number;
  /** Bytes of model output (text + tool arguments) over the run. */
  model_output_bytes: number;
  /** Default bash/exec timeout in ms, and its maximum. */
  tool_timeout_ms: number;
  tool_timeout_max_ms: number;
  /** Bytes of command output shown to the model (head + tail). */
  shell_output_bytes: number;
  /** Bytes of one command's full-output log kept on disk; past it the log stops growing (0 = unlimited). */
  shell_log_bytes: number;
  /** Bytes of the skills catalog in the system prompt (skills past it are counted, not listed; 0 = no catalog). */
  skills_catalog_bytes: number;
  /** Bytes of piped stdin read into the task; 0 = unlimited. */
  stdin_bytes: number;
  /** US dollars the run's model calls may cost (a fraction; 0 = unlimited). Flag --max-cost. */
  cost_usd: number;
}

export const DEFAULT_LIMITS: Limits = {
  deadline_ms: 60 * 60 * 1000,
  model_calls: 0,
  tool_calls: 0,
  tool_argument_bytes: 1024 * 1024,
  tool_result_bytes: 8 * 1024 * 1024,
  context_bytes: 32 * 1024 * 1024,
  model_output_bytes: 4 * 1024 * 1024,
  tool_timeout_ms: 120_000,
  tool_timeout_max_ms: 15 * 60 * 1000,
  shell_output_bytes: 50 * 1024,
  shell_log_bytes: 64 * 1024 * 1024,
  skills_catalog_bytes: 16 * 1024,
  stdin_bytes: 8 * 1024 * 1024,
  cost_usd: 0,
};

export const LIMIT_NAMES = Object.keys(DEFAULT_LIMITS) as (keyof Limits)[];

/** The limits that are durations in milliseconds: 0 is refused for them, not "unlimited". */
export const DURATION_LIMITS: readonly (keyof Limits)[] = ['deadline_ms', 'tool_timeout_ms', 'tool_timeout_max_ms'];
