// Directories conch makes for a run (its private /tmp and logs) are removed however the process
// ends: by the code that made them, at `process.exit` (a second Ctrl-C), or by the watchdog when the
// main thread is stuck (it reads the list through `watchExitRemovals`).
import { rmSync } from 'node:fs';

const dirs = new Set<string>();
let hooked = false;
let listener: ((dirs: string[]) => void) | null = null;

/** Remove `dir` at exit unless the returned function (call it once it is removed) runs first. */
export function removeAtExit(dir: string): () => void {
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });
  }
  dirs.add(dir);
  listener?.([...dirs]);
  return () => {
    dirs.delete(dir);
    listener?.([...dirs]);
  };
}

/** Be told the whole list each time it changes (one listener: the watchdog). */
export function watchExitRemovals(watch: ((dirs: string[]) => void) | null): void {
  listener = watch;
  watch?.([...dirs]);
}
