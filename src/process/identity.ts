// Who a process is, in a form that outlives it: its pid namespace, pid and start time. A pid alone is
// reused; with the start time (field 22 of /proc/PID/stat) a record or a directory named for a
// process tells whether that process still runs. Linux only: elsewhere there is no identity and
// every question is answered 'unknown'.
import { readFileSync, readlinkSync } from 'node:fs';

export interface ProcessTag {
  ns: string;
  pid: number;
  start: string;
}

export type Liveness = 'alive' | 'dead' | 'unknown';

/** Field 22 of /proc/PID/stat (start time in clock ticks since boot), or null when unreadable. */
export function startTime(pid: number | 'self'): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may contain spaces and parentheses: count from its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

export function pidNamespace(): string | null {
  try {
    return readlinkSync('/proc/self/ns/pid').replace(/\D/g, '') || null;
  } catch {
    return null;
  }
}

let self: ProcessTag | null | undefined;

/** This process's tag, or null where there is none (no /proc). */
export function selfTag(): ProcessTag | null {
  if (self !== undefined) return self;
  const ns = pidNamespace();
  const start = startTime('self');
  self = ns && start ? { ns, pid: process.pid, start } : null;
  return self;
}

/** Whether the process a tag names still runs; 'unknown' for another pid namespace's (its pids are not ours to look up). */
export function liveness(tag: ProcessTag): Liveness {
  const me = selfTag();
  if (!me || tag.ns !== me.ns) return 'unknown';
  const now = startTime(tag.pid);
  if (now === null) return 'dead'; // no such process (its /proc entry is gone)
  return now === tag.start ? 'alive' : 'dead'; // same pid, later start: a new process reused the pid
}
