// The watchdog's thread (see watchdog.ts). It never runs plugin code, so it keeps running when the
// main thread is stuck: it watches the main thread's heartbeat, the run deadline and the signals,
// and ends the run when the main thread cannot: kills every process group conch started, removes
// the run's temp dirs, says why on stderr, prints the one --json document, and exits the process.
import { cc } from 'bun:ffi';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { isatty } from 'node:tty';
import { exitCodeFor, type StopSignal } from '../agent/outcome.ts';
import { endUnfinished, type BatchDocument } from './batch.ts';
import { PACKAGE_ROOT } from '../core/package-root.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { BEAT, GRACE_MS, HARD_CAP_MS, PHASE, SIGNALS, STALE_MS, TICK_MS, TRANSPILING, type FromWatchdog, type ToWatchdog } from './watchdog-protocol.ts';

declare const self: Worker;

interface Native {
  catchSignal(sig: number): number;
  taken(sig: number): number;
  exitNow(code: number): void;
}

let state: Int32Array | null = null;
let deadlineAt: number | null = null;
let startedAt = Date.now();
let json = false;
let label = 'the run';
let loadingLimit: number | null = null;
let loadingPath: string | null = null;
let groups: number[] = [];
let dirs: string[] = [];
let doc: Record<string, unknown> = {};
let native: Native | null = null;
const seen = new Map<number, number>();
let signalAt: number | null = null;
/** The signal the run ends for, when one ends it: its exit code is the signal's (SIGTERM 143), as on the main thread. */
let signalName: StopSignal | null = null;
let lastBeat = -1;
let lastBeatAt = Date.now();
/** The last tick that saw the main thread transpiling a plugin (plugins/transpiling.ts). */
let transpiledAt = 0;
let ticker: ReturnType<typeof setInterval> | null = null;

self.onmessage = (event: MessageEvent<ToWatchdog>) => {
  const m = event.data;
  switch (m.type) {
    case 'start':
      state = new Int32Array(m.state);
      json = m.json;
      label = m.label;
      startedAt = m.startedAt;
      deadlineAt = m.deadlineAt;
      ticker = setInterval(tick, TICK_MS);
      catchSignals();
      break;
    case 'arm':
      deadlineAt = m.deadlineAt;
      // A new run (the next turn of a conversation): a signal its predecessor answered is done with.
      if (m.fresh) {
        signalAt = null;
        signalName = null;
      }
      // The main thread's own listeners made Bun take the signals back: take them again.
      catchSignals();
      break;
    case 'loading':
      loadingLimit = m.limitMs;
      break;
    case 'plugin':
      loadingPath = m.path;
      break;
    case 'groups':
      groups = m.groups;
      break;
    case 'dirs':
      dirs = m.dirs;
      break;
    case 'envelope':
      doc = m.doc;
      break;
    case 'stop':
      if (ticker) clearInterval(ticker);
      self.onmessage = null;
      break;
  }
};

function catchSignals(): void {
  native ??= loadNative();
  for (const [sig] of SIGNALS) if (native && native.catchSignal(sig) === 0 && !seen.has(sig)) seen.set(sig, native.taken(sig));
}

function loadNative(): Native | null {
  try {
    const { symbols } = cc({
      source: join(PACKAGE_ROOT, 'src', 'cli', 'signals.c'),
      symbols: {
        catch_signal: { args: ['int'], returns: 'int' },
        signals_taken: { args: ['int'], returns: 'int' },
        exit_now: { args: ['int'], returns: 'void' },
      },
    });
    return {
      catchSignal: (sig) => symbols.catch_signal(sig) as number,
      taken: (sig) => symbols.signals_taken(sig) as number,
      exitNow: (code) => void symbols.exit_now(code),
    };
  } catch {
    // No compiler for this platform: the deadline still holds, signals stay with Bun's main thread.
    return null;
  }
}

function tick(): void {
  if (!state) return;
  const now = Date.now();
  const beat = Atomics.load(state, BEAT);
  if (beat !== lastBeat) {
    lastBeat = beat;
    lastBeatAt = now;
  }
  if (Atomics.load(state, TRANSPILING) !== 0) transpiledAt = now;
  const stuck = now - lastBeatAt > STALE_MS;
  for (const [sig, name] of SIGNALS) {
    const count = native && seen.has(sig) ? native.taken(sig) : 0;
    const before = seen.get(sig) ?? 0;
    if (count <= before) continue;
    seen.set(sig, count);
    // A second signal while the main thread is stuck: the user means it, end now.
    if (signalAt !== null && stuck) return end('cancelled', `${name} arrived while conch's main thread was stuck`, name);
    signalAt ??= now;
    signalName ??= name;
    self.postMessage({ type: 'signal', name } satisfies FromWatchdog);
  }
  if (signalAt !== null && stuck && now > signalAt + GRACE_MS) {
    return end('cancelled', `${signalName ?? 'a signal'} asked conch to stop and its main thread did not answer`, signalName ?? undefined);
  }
  // Conch transpiling a plugin (the main thread busy in Babel) is not the plugin stuck loading.
  if (loadingLimit !== null && now - Math.max(lastBeatAt, transpiledAt) > loadingLimit + GRACE_MS) {
    const plugin = loadingPath === null ? 'a plugin' : `the plugin ${loadingPath}`;
    return end('timed_out', `${plugin} did not finish loading within ${loadingLimit} ms and conch's main thread did not answer`);
  }
  if (deadlineAt !== null && ((stuck && now > deadlineAt + GRACE_MS) || now > deadlineAt + HARD_CAP_MS)) {
    return end('timed_out', 'the run deadline passed and conch\'s main thread did not answer');
  }
}

function end(status: 'timed_out' | 'cancelled', why: string, signal?: StopSignal): void {
  if (!state || Atomics.compareExchange(state, PHASE, 0, 2) !== 0) return; // the main thread is finishing
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  const exitCode = exitCodeFor({ status, signal });
  const message = `${why} (plugin code that never yields?); the watchdog ended ${label} and killed its commands`;
  stderr.write(`conch: ${message}\n`);
  const durationMs = Date.now() - startedAt;
  // Several tasks (`conch run A B`): their one document, the unfinished ones ended; else one envelope.
  const final = Array.isArray(doc.tasks)
    ? endUnfinished(doc as unknown as BatchDocument, { status, message, durationMs, ...(signal ? { signal } : {}) })
    : { ...doc, status, message, partial: true, ...(signal ? { signal } : {}), durationMs, exitCode };
  if (json) stdout.write(`${JSON.stringify(final)}\n`);
  // Interactive mode turns the terminal's echo off during a run (typeahead.ts); the exit below runs
  // no exit handlers, so the shell after conch would not echo what is typed.
  try {
    if (isatty(0)) Bun.spawnSync(['stty', 'echo'], { stdin: 'inherit', stdout: 'ignore', stderr: 'ignore' });
  } catch {
    // no stty: typeahead.ts could not turn the echo off either
  }
  if (native) native.exitNow(exitCode);
  process.kill(process.pid, 'SIGKILL');
}
