// Ctrl-C for a run (or several at once): the first cancels through the one AbortSignal, a second
// exits at once. A closed terminal (SIGHUP) and a polite kill (SIGTERM) cancel the same way, so
// cleanup runs; the outcome names the signal and the exit code is the shell's for it (outcome.ts).
import { emptyUsage, SIGNAL_EXIT_CODES, SignalStop, stopSignal, type Outcome, type StopSignal } from '../agent/outcome.ts';
import { stderr } from '../core/stdio.ts';
import { killAllNow } from '../process/spawn.ts';
import { CANCELLING } from './render.ts';

const SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export interface Interrupts {
  /** What a signal does; the watchdog calls it with the name of each signal it receives. */
  readonly onSignal: (name: string) => void;
  /** Stop listening. */
  remove(): void;
}

/** `notice` says the cancelling line where a display would draw it (render.ts's notice, over its spinner). */
export function cancelOnSignals(controller: AbortController, json: boolean, notice: (line: string) => void = (line) => stderr.write(`\n${line}\n`)): Interrupts {
  let interrupts = 0;
  const onSignal = (name: string) => {
    const signal = stopSignal(name);
    interrupts++;
    if (interrupts === 1) {
      controller.abort(new SignalStop(signal));
      if (!json && stderr.isTTY) notice(CANCELLING);
    } else {
      killAllNow();
      process.exit(SIGNAL_EXIT_CODES[signal]);
    }
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  return {
    onSignal,
    remove: () => {
      for (const s of SIGNALS) process.off(s, onSignal);
    },
  };
}

/**
 * `starting` (the host: plugins, MCP servers), or 'stopped' once `signal` aborts: a server slow to
 * start (up to its startupTimeoutMs) must not hold a Ctrl-C. What it started goes with conch's exit.
 */
export function unlessStopped<T>(starting: Promise<T>, signal: AbortSignal): Promise<T | 'stopped'> {
  // Its end no longer matters once stopped, a failure included.
  const abandon = () => void starting.catch(() => {});
  if (signal.aborted) {
    abandon();
    return Promise.resolve('stopped');
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      abandon();
      resolve('stopped');
    };
    signal.addEventListener('abort', onAbort, { once: true });
    starting.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The outcome of a run a signal stopped before it began (while conch read stdin or started). */
export function stoppedBeforeStart(reason: unknown, what: string): Outcome {
  const signal: StopSignal = reason instanceof SignalStop ? reason.signal : 'SIGINT';
  return {
    status: 'cancelled',
    signal,
    message: `${new SignalStop(signal).message}, ${what}`,
    output: '',
    stopReason: null,
    usage: emptyUsage(),
    counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 },
    durationMs: 0,
  };
}
