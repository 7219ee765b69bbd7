// The peak RSS of a spawned process itself. Its resourceUsage().maxRSS is not that: Linux carries
// the spawner's own high-water mark across the vfork and exec that start it (a child of a 200 MiB
// process reports at least 200 MiB), so a bench script's own memory could stand in for conch's.
// VmHWM in /proc/PID/status is the high-water mark of the process's current image alone; read
// while the process runs, the last reading misses at most what it grew in its last interval.
import { readFile } from 'node:fs/promises';

/** Starts watching `pid`; the returned function stops and gives the peak in bytes (0 without /proc). */
export function watchPeak(pid: number, everyMs = 10): () => Promise<number> {
  let peakKiB = 0;
  let stopped = false;
  const watching = (async () => {
    while (!stopped) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status);
      // A process that exited (a zombie has no VmHWM) keeps its last reading.
      if (!hwm) return;
      peakKiB = Math.max(peakKiB, Number(hwm[1]));
      await Bun.sleep(everyMs);
    }
  })();
  return async () => {
    stopped = true;
    await watching;
    return peakKiB * 1024;
  };
}
