// Ctrl-C for a run (or several at once): the first cancels through the one AbortSignal, a second
// exits at once. A closed terminal (SIGHUP) and a polite kill (SIGTERM) cancel the same way, so
// cleanup runs.
import { EXIT_CODES } from '../agent/outcome.ts';
import { stderr } from '../core/stdio.ts';
import { killAllNow } from '../process/spawn.ts';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface Interrupts {
  /** What a signal does; the watchdog calls it for the signals it receives. */
  readonly onSignal: () => void;
  /** Stop listening. */
  remove(): void;
}

export function cancelOnSignals(controller: AbortController, json: boolean): Interrupts {
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1) {
      controller.abort(new Error('cancelled'));
      if (!json && stderr.isTTY) stderr.write('\nconch: cancelling… (Ctrl-C again to exit now)\n');
    } else {
      killAllNow();
      process.exit(EXIT_CODES.cancelled);
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
