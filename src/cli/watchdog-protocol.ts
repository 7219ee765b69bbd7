// What the main thread and the watchdog's thread (watchdog.ts, watchdog-worker.ts) share: the
// layout of the shared state, the timings and the messages.

/** Int32Array slots over the SharedArrayBuffer. */
export const PHASE = 0; // 0 running, 1 the main thread is finishing, 2 the watchdog is ending the run
export const BEAT = 1; // bumped by the main thread while its event loop turns
export const TRANSPILING = 2; // 1 while the main thread transpiles a plugin (plugins/transpiling.ts)
export const STATE_SLOTS = 3;

export const BEAT_MS = 250;
export const TICK_MS = 200;
/** No heartbeat for this long: the main thread is not answering. */
export const STALE_MS = 1_500;
/** After the deadline or a signal, how long the main thread gets to end the run itself. */
export const GRACE_MS = 3_000;
/** Past the deadline by this much, the run ends even if the main thread still beats. */
export const HARD_CAP_MS = 60_000;

/** The signals the watchdog counts, with their names (the same numbers on Linux and macOS). */
export const SIGNALS: ReadonlyArray<readonly [number, 'SIGINT' | 'SIGTERM' | 'SIGHUP']> = [
  [2, 'SIGINT'],
  [15, 'SIGTERM'],
  [1, 'SIGHUP'],
];

export type ToWatchdog =
  /** `label` names what the watchdog ends in its message ('the run', 'conch tools', 'conch acp'). */
  | { type: 'start'; state: SharedArrayBuffer; startedAt: number; deadlineAt: number | null; json: boolean; label: string }
  /** null: no deadline (between the turns of a conversation, in `conch tools`). `fresh`: a new run starts, earlier signals were answered. */
  | { type: 'arm'; deadlineAt: number | null; fresh: boolean }
  /** Plugins are loading, each within `limitMs`: a main thread stuck past that (plus GRACE_MS) is a plugin that never yields. null: done. */
  | { type: 'loading'; limitMs: number | null }
  /** The plugin file loading now (plugins/loading.ts), for the message if it never finishes; null: none. */
  | { type: 'plugin'; path: string | null }
  | { type: 'groups'; groups: number[] }
  | { type: 'dirs'; dirs: string[] }
  | { type: 'envelope'; doc: Record<string, unknown> }
  | { type: 'stop' };

export type FromWatchdog = { type: 'signal'; name: 'SIGINT' | 'SIGTERM' | 'SIGHUP' };
