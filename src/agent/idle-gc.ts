// A collection requested between turns, when the loop is about to wait on the model anyway. Left to
// itself JSC collects when allocation crosses its heap thresholds, by which time the garbage of
// several turns (request bodies, stream events, command output) has grown the heap: a run of 49
// sandboxed commands peaked ≈ 5 MiB higher (73 against 68 MiB). The request is asynchronous (Bun.gc(false): the collector runs
// beside the next request), and at most one per interval, so a run of millisecond turns (a local
// model) spends no more than a few per cent of one core on it.

/** The shortest time between two requested collections. */
export const IDLE_GC_INTERVAL_MS = 50;

export interface IdleGc {
  /** A turn ended: request a collection unless one was requested less than the interval ago. */
  turnEnded(): boolean;
}

export function idleGc(
  collect: () => void = () => Bun.gc(false),
  now: () => number = () => performance.now(),
  intervalMs = IDLE_GC_INTERVAL_MS,
): IdleGc {
  let last = -Infinity;
  return {
    turnEnded() {
      const at = now();
      if (at - last < intervalMs) return false;
      last = at;
      collect();
      return true;
    },
  };
}

/** One gate for the process: concurrent runs (conch run A B C) share the collector. */
export const betweenTurns = idleGc();
