// Durations: a whole number of milliseconds, checked once where a person gives one (a flag, a
// config key, --limit), and timers that honour every duration that passed the check.
//
// setTimeout stores its delay as a signed 32-bit number: anything above 2^31-1 ms (24.8 days) fires
// after 1 ms with a TimeoutOverflowWarning, which turned `--timeout 600h` into an instant timeout and
// `--limit tool_timeout_max_ms=3000000000` into a bash call killed at once. startTimer chains
// shorter waits instead, so any duration up to the maximum means what it says.

/** The longest duration conch accepts anywhere (a run deadline, a tool timeout): 365 days. */
export const MAX_DURATION_MS = 365 * 86_400_000;
export const MAX_DURATION_TEXT = '365d';

/** The longest single setTimeout delay that does not overflow. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export type DurationCheck = { ok: true; ms: number } | { ok: false; problem: string };

const TOO_LONG = `is longer than the maximum of ${MAX_DURATION_TEXT} (${MAX_DURATION_MS} ms)`;

/**
 * A duration as a person types it: seconds ("90", or a number) or a number with a unit: 250ms, 30s,
 * 5m, 1h, 2d. Zero and negative durations are refused: a deadline of nothing can only fail, and 0
 * is not a way to say "unlimited" (the maximum is).
 */
export function parseDuration(value: string | number): DurationCheck {
  let ms: number;
  if (typeof value === 'number') ms = value * 1000;
  else {
    const m = /^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(value);
    if (!m) return { ok: false, problem: 'expected seconds or a duration such as 30s, 5m, 1h or 2d' };
    ms = Number(m[1]) * UNITS[(m[2] ?? 's') as keyof typeof UNITS];
  }
  return checkDurationMs(Math.round(ms));
}

/** A count of milliseconds (a config key, --limit NAME=VALUE): a whole number above 0, at most the maximum. */
export function checkDurationMs(ms: number, options: { zero?: boolean } = {}): DurationCheck {
  if (!Number.isFinite(ms)) return { ok: false, problem: TOO_LONG };
  if (!Number.isInteger(ms)) return { ok: false, problem: 'must be a whole number of milliseconds' };
  if (ms < 0 || (ms === 0 && !options.zero)) return { ok: false, problem: `must be more than 0 (at most ${MAX_DURATION_TEXT})` };
  if (ms > MAX_DURATION_MS) return { ok: false, problem: TOO_LONG };
  return { ok: true, ms };
}

export interface Timer {
  clear(): void;
}

/**
 * setTimeout for any duration: waits longer than one timer can hold are chained. A negative or
 * non-finite delay is a bug in the caller (durations are checked where they enter), so it throws.
 */
export function startTimer(ms: number, fire: () => void): Timer {
  if (!(ms >= 0) || !Number.isFinite(ms)) throw new RangeError(`startTimer: ${ms} ms is not a duration`);
  let handle: ReturnType<typeof setTimeout>;
  const arm = (left: number) => {
    handle = left > MAX_TIMER_MS ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS) : setTimeout(fire, left);
  };
  arm(ms);
  return { clear: () => clearTimeout(handle) };
}

/** Resolves after `ms`, or rejects with `onAbort()` when `signal` fires first. */
export function delay(ms: number, signal: AbortSignal, onAbort: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(onAbort());
    const abort = () => {
      timer.clear();
      reject(onAbort());
    };
    const timer = startTimer(ms, () => {
      signal.removeEventListener('abort', abort);
      resolve();
    });
    signal.addEventListener('abort', abort, { once: true });
  });
}
