// The prompt history of an interactive session: the file is read before the prompt shows (↑ must
// reach earlier sessions at once, not once the config has loaded), and submissions are stored only
// once the config says the history is wanted ("history": false forgets what was read).
import { historyFileOf, historyOff } from '../config/xdg.ts';
import { homedir } from 'node:os';
import { openHistory, type HistoryStore } from './history.ts';

export interface PromptHistory {
  /** The config is known (before the session opens, so that the file exists when the sandbox hides it). */
  configure(history: { file: string; enabled: boolean }): void;
  /** The config could not be read: nothing is stored. */
  abandon(): void;
  /** Store one submission, once the config is known. */
  add(text: string): Promise<void>;
  /** What went wrong with the file, to be said where a line does not land on the prompt. */
  readonly warnings: string[];
}

interface Editor {
  remember(older: string[]): void;
  forget(texts: string[]): void;
}

export function promptHistory(editor: Editor, env: NodeJS.ProcessEnv = process.env): PromptHistory {
  const warnings: string[] = [];
  const file = historyFileOf(env, env.HOME || homedir());
  const early = historyOff(env.CONCH_HISTORY) ? null : openHistory(file, (line) => warnings.push(line));
  if (early) editor.remember(early.entries);
  let settle: (store: HistoryStore | null) => void = () => {};
  const store = new Promise<HistoryStore | null>((resolve) => (settle = resolve));
  let known = false;
  return {
    warnings,
    configure(history) {
      if (known) return;
      known = true;
      if (!history.enabled || history.file !== file) {
        if (early) editor.forget(early.entries);
        warnings.length = 0;
      }
      if (!history.enabled) return settle(null);
      const opened = history.file === file && early ? early : openHistory(history.file, (line) => warnings.push(line));
      if (opened !== early) editor.remember(opened.entries);
      opened.touch();
      settle(opened);
    },
    abandon() {
      known = true;
      settle(null);
    },
    async add(text) {
      (await store)?.add(text);
    },
  };
}
