// Process-group teardown and the evidence that it worked.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { EPERM, loadLibc } from './libc.ts';

const POLL_MS = 10;
// After SIGKILL the kernel needs only a moment; longer means something is wrong (D state, escape).
const KILL_WAIT_MS = 1000;
const isLinux = process.platform === 'linux';

/** true while any process of the group is alive (a zombie is not alive: it only awaits reaping). */
export function groupAlive(pgid: number): boolean {
  const found = signalZero(-pgid);
  if (found !== 'yes') return found === 'denied';
  // kill() also succeeds for zombies, which stay forever under an init that does not reap
  // (common in containers); on Linux look at the members themselves.
  if (!isLinux) return true;
  return liveGroupMembers(pgid).length > 0;
}

export function liveGroupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const stat of procStats()) if (stat.pgrp === pgid && stat.state !== 'Z') members.push(stat.pid);
  return members;
}

/** true if the pid is a living process (not a zombie). */
export function processAlive(pid: number): boolean {
  const found = signalZero(pid);
  if (found !== 'yes') return found === 'denied';
  if (!isLinux) return true;
  const stat = readStat(String(pid));
  return stat !== null && stat.state !== 'Z';
}

/**
 * kill(target, 0): 'yes' when it exists, 'denied' when it exists but is not ours to signal, 'no'
 * otherwise. Through libc where it is at hand: this runs after every command, and Node reports
 * ESRCH by throwing.
 */
function signalZero(target: number): 'yes' | 'denied' | 'no' {
  const libc = loadLibc();
  if (libc) {
    const errno = libc.kill(target, 0);
    return errno === 0 ? 'yes' : errno === EPERM ? 'denied' : 'no';
  }
  try {
    process.kill(target, 0);
    return 'yes';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? 'denied' : 'no';
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: already gone, which is the goal.
  }
}

/**
 * SIGTERM the group (and SIGCONT, so stopped members can act on it), wait up to graceMs, then
 * SIGKILL. Returns a message when members are still alive afterwards, null when the group is gone.
 */
export async function killGroup(pgid: number, graceMs: number): Promise<string | null> {
  if (!groupAlive(pgid)) return null;
  signalGroup(pgid, 'SIGTERM');
  signalGroup(pgid, 'SIGCONT');
  if (await waitGone(pgid, graceMs)) return null;
  signalGroup(pgid, 'SIGKILL');
  if (await waitGone(pgid, KILL_WAIT_MS)) return null;
  const left = isLinux ? ` (pids ${liveGroupMembers(pgid).join(', ')})` : '';
  return `process group ${pgid} still has live members${left} ${KILL_WAIT_MS} ms after SIGKILL`;
}

async function waitGone(pgid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (!groupAlive(pgid)) return true;
    if (Date.now() >= until) return false;
    await Bun.sleep(POLL_MS);
  }
}

/** The identity of the pipe a process writes its stdout to (Linux), e.g. 'pipe:[12345]'. */
export function stdoutPipeOf(pid: number): string | null {
  if (!isLinux) return null;
  try {
    return readlinkSync(`/proc/${pid}/fd/1`);
  } catch {
    return null;
  }
}

/**
 * Processes outside the group that still hold the output pipe (they called setsid or changed
 * group). Only processes we may inspect are seen, which covers everything the command started.
 */
export function pipeHolders(pipe: string): number[] {
  const holders: number[] = [];
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    for (const fd of safeReaddir(`/proc/${entry}/fd`)) {
      try {
        if (readlinkSync(`/proc/${entry}/fd/${fd}`) === pipe) {
          holders.push(Number(entry));
          break;
        }
      } catch {
        // The fd closed or the process exited while we looked.
      }
    }
  }
  return holders;
}

export function killPids(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

interface ProcStat {
  pid: number;
  state: string;
  pgrp: number;
}

function* procStats(): Generator<ProcStat> {
  for (const entry of safeReaddir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (stat) yield stat;
  }
}

function readStat(pid: string): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name may contain spaces and parentheses: fields resume after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid: Number(pid), state: fields[0] ?? '', pgrp: Number(fields[2]) };
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}
