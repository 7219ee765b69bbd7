// Processes that would outlive conch because their parent died first. The case that matters: bwrap
// forks the sandbox's first process and only then sets its parent-death signal (--die-with-parent);
// when bwrap itself is killed in that window (a command cancelled the moment it starts, a signal to
// `conch sandbox run`), the sandbox carries on with no parent, is re-parented to init, and runs its
// command to the end (or waits forever), however conch exits.
//
// conch makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER) the first time it starts a
// command, so such orphans are re-parented to conch instead of init. There they are recognisable:
// a child of conch's that is the first process of a pid namespace of its own (NSpid in
// /proc/PID/status ends in 1) is a sandbox whose bwrap is gone, since the bwrap conch starts lives
// in conch's namespace. sweepOrphans() SIGKILLs them (which ends their whole namespace) after every
// command and on exit.
//
// Being a subreaper also brings back every other orphan (a command's background process whose
// shell exited first), which once dead stays a zombie until its parent reaps it; Bun only reaps
// what it spawned. So the sweep reaps the zombies that are certainly not Bun's own children: those
// in a process group that is neither conch's own nor led by themselves (Bun spawns either into
// conch's group or, detached, as a group leader), and every sandbox (the first process of a pid
// namespace is never Bun's child, and it leads its own session: bwrap --new-session). A sandbox
// whose bwrap was killed (a cancelled or timed-out command) dies of --die-with-parent, often before
// a sweep sees it alive; it used to stay a zombie for good, one per such command.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { loadLibc } from './libc.ts';

const PR_SET_CHILD_SUBREAPER = 36;
const SIGKILL = 9;
let subreaper: boolean | undefined;
/** Orphaned sandboxes killed and not yet reaped. */
const killed = new Set<number>();

/** Become a child subreaper (once); false where that is not possible (not Linux, no FFI). */
export function adoptOrphans(): boolean {
  if (subreaper !== undefined) return subreaper;
  subreaper = loadLibc()?.prctl(PR_SET_CHILD_SUBREAPER, 1) === 0;
  return subreaper;
}

interface Child {
  pid: number;
  ppid: number;
  state: string;
  pgrp: number;
}

const buffer = Buffer.alloc(16384);

/** A small /proc file in one read (readFileSync reads a second time to find the end): 3 syscalls, not 4. */
function readProc(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    return n < buffer.length ? buffer.toString('latin1', 0, n) : readFileSync(path, 'latin1');
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

function child(pid: string): Child | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name may contain spaces and parentheses: fields resume after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid: Number(pid), state: fields[0] ?? '', ppid: Number(fields[1]), pgrp: Number(fields[2]) };
}

/** pid 1 of a pid namespace of its own (NSpid in /proc/PID/status ends in 1). */
function nsInit(pid: number): boolean {
  const nspid = readProc(`/proc/${pid}/status`)?.match(/^NSpid:\s*(.*)$/m)?.[1]?.trim().split(/\s+/) ?? [];
  return nspid.length > 1 && nspid.at(-1) === '1';
}

let mainChildren: number | null | undefined;

/** The main thread's children file, kept open: read again at offset 0 it is made afresh. */
function mainThreadChildren(): string {
  if (mainChildren === undefined) mainChildren = openSync(`/proc/self/task/${process.pid}/children`, 'r');
  if (mainChildren === null) throw new Error('no children file');
  const n = readSync(mainChildren, buffer, 0, buffer.length, 0);
  return n < buffer.length ? buffer.toString('latin1', 0, n) : readFileSync(`/proc/self/task/${process.pid}/children`, 'latin1');
}

/**
 * conch's direct children: /proc/self/task/TID/children of every thread, or a scan of /proc.
 * mainThread: the main thread's only, which is where every orphan goes (the kernel hands it to the
 * subreaper's first live thread, the thread-group leader while conch runs); Bun has a dozen threads.
 */
function childPids(options: { mainThread?: boolean } = {}): string[] {
  try {
    if (options.mainThread) return mainThreadChildren().split(' ').filter(Boolean);
    const out: string[] = [];
    for (const task of readdirSync('/proc/self/task')) {
      out.push(...readFileSync(`/proc/self/task/${task}/children`, 'latin1').split(' ').filter(Boolean));
    }
    return out;
  } catch {
    mainChildren = null;
    // no CONFIG_PROC_CHILDREN: every process, filtered by its parent in sweepOrphans()
    try {
      return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
    } catch {
      return [];
    }
  }
}

let ownGroup: number | undefined;

function conchGroup(): number {
  if (ownGroup !== undefined) return ownGroup;
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    ownGroup = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    ownGroup = -1;
  }
  return ownGroup;
}

/**
 * SIGKILL every orphaned sandbox re-parented to conch and reap the orphans that are dead. Returns
 * the sandboxes signalled now (their death is not waited for).
 */
export function sweepOrphans(options: { mainThread?: boolean } = {}): number[] {
  const signalled: number[] = [];
  if (!subreaper) return signalled;
  const libc = loadLibc();
  for (const pid of childPids(options)) {
    const found = child(pid);
    if (!found || found.ppid !== process.pid) continue;
    if (found.state === 'Z') {
      const orphan = killed.has(found.pid) || (found.pgrp !== conchGroup() && found.pgrp !== found.pid) || nsInit(found.pid);
      if (orphan && libc) libc.reap(found.pid);
      killed.delete(found.pid);
      continue;
    }
    if (!nsInit(found.pid)) continue;
    try {
      process.kill(found.pid, 'SIGKILL');
      killed.add(found.pid);
      signalled.push(found.pid);
    } catch {
      // gone already
    }
  }
  return signalled;
}

/**
 * For the exit: SIGKILL the process group of every live child re-parented to conch that is neither
 * a sandbox (sweepOrphans) nor in conch's own group: an unsandboxed command's `setsid` daemon, which
 * left the command's group and so escaped its kill. Every group conch started itself is killed
 * before this runs, so what is left is such an orphan.
 */
export function killEscapees(): void {
  if (!subreaper) return;
  for (const pid of childPids()) {
    const found = child(pid);
    if (!found || found.ppid !== process.pid || found.state === 'Z' || found.pgrp === conchGroup() || found.pgrp <= 1 || nsInit(found.pid)) continue;
    try {
      process.kill(-found.pgrp, 'SIGKILL');
    } catch {
      try {
        process.kill(found.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}

/**
 * true unless the sandbox's first process is known to have no children. Every process of a pid
 * namespace descends from its first one (orphans inside are re-parented within the namespace), so a
 * first process without children is the namespace's last: what is left is its own exit and the
 * namespace's teardown, which runs no code of the command's.
 */
function running(pid: number): boolean {
  // bwrap's first process has one thread (the seccomp filter refuses ptrace, so no command can add
  // one): its own children file is all of them.
  const children = readProc(`/proc/${pid}/task/${pid}/children`);
  // null: gone (then nothing runs), or no CONFIG_PROC_CHILDREN: assume the worst, as before
  return children === null ? existsSync(`/proc/${pid}`) : children.trim() !== '';
}

/**
 * Sweep until no orphaned sandbox is alive, for at most `ms`. A sandbox outlives the bwrap that was
 * killed with its command's group for a moment: --die-with-parent and the namespace's teardown take
 * time (long on a loaded machine), and until it is over its processes still hold the command's
 * output pipe, where they would pass for processes that escaped the group.
 *
 * untilIdle: wait only while an orphaned sandbox still runs something besides its first process;
 * the rest is reaped in the background. A bwrap that exited by itself is told the command's status by
 * the sandbox's first process, which exits right after, often after bwrap: its exit and the
 * namespace's teardown took several ms in every other command, waited for here to no purpose.
 */
export function settleOrphans(ms: number, options: { untilIdle?: boolean } = {}): Promise<void> | undefined {
  const until = Date.now() + ms;
  let signalled = false;
  const waitFor = () => {
    const alive = sweepOrphans({ mainThread: true });
    if (alive.length > 0) signalled = true;
    return options.untilIdle ? alive.filter(running) : alive;
  };
  // Reap what died last: only a sandbox signalled here can have died since (a zombie is reaped by
  // the sweep that finds it, and the usual finished sandbox is one).
  const reapLast = () => {
    if (signalled && sweepOrphans({ mainThread: true }).length > 0) reapInBackground(until);
  };
  // Nothing to wait for (the usual case): settled without a turn of the event loop.
  if (waitFor().length === 0) {
    reapLast();
    return undefined;
  }
  return (async () => {
    do await Bun.sleep(5);
    while (waitFor().length > 0 && Date.now() < until);
    reapLast();
  })();
}

/**
 * The sandbox whose first process is known (bwrap --info-fd), after a command that ended by itself:
 * reaped if it is gone, SIGKILLed and reaped in the background if it runs nothing but its own exit.
 * 'busy' while it still runs something (the caller then settles as for any orphan), 'unknown' when
 * it is no child of conch's (no subreaper), so that only the full sweep can say.
 */
export function settleSandbox(pid: number): 'settled' | 'busy' | 'unknown' {
  const libc = loadLibc();
  if (!subreaper || !libc) return 'unknown';
  const reaped = libc.reap(pid);
  if (reaped === pid) return 'settled';
  if (reaped !== 0) return 'unknown';
  if (running(pid)) return 'busy';
  // libc's kill: gone meanwhile is no exception (the background sweep reaps it).
  if (libc.kill(pid, SIGKILL) === 0) killed.add(pid);
  reapInBackground(Date.now() + 2000);
  return 'settled';
}

let reaping = false;

/** Sweep every 5 ms until no orphaned sandbox is left (or `until`), without keeping conch alive. */
function reapInBackground(until: number): void {
  if (reaping) return;
  reaping = true;
  const again = () => {
    if (sweepOrphans({ mainThread: true }).length > 0 && Date.now() < until) setTimeout(again, 5).unref();
    else reaping = false;
  };
  setTimeout(again, 5).unref();
}
