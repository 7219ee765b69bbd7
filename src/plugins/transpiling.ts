// Transpiling a plugin file (Babel, on the main thread) is conch's work, not the plugin's: no load
// limit counts it, neither the import's own (importer.ts) nor the watchdog's (cli/watchdog.ts), or
// a cold cache on a busy machine would fail a plugin that only waited for conch. The watchdog's
// thread cannot be told by message while the main thread is busy, so a flag in shared memory says
// when conch is at it.

let totalMs = 0;
let shared: { state: Int32Array; slot: number } | null = null;

/** Run `work` (one transform) as conch's transpiling. */
export function transpiling<T>(work: () => T): T {
  const started = performance.now();
  const flag = shared;
  if (flag) Atomics.store(flag.state, flag.slot, 1);
  try {
    return work();
  } finally {
    if (flag) Atomics.store(flag.state, flag.slot, 0);
    totalMs += performance.now() - started;
  }
}

/** Time this process has spent transpiling so far (ms). */
export function transpiledMs(): number {
  return totalMs;
}

/** Where to raise the flag while transpiling (the watchdog's shared state); null: nowhere. */
export function shareTranspiling(state: Int32Array | null, slot = 0): void {
  shared = state ? { state, slot } : null;
}
