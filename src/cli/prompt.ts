// The interactive prompt: one line editor (node:readline: ↑/↓ history, Emacs keys, resize-aware)
// for each submission. It is closed while a run is under way, so the terminal is back in cooked
// mode: Ctrl-C is then a SIGINT the run's handler cancels with, and an `ask` question reads its
// answer without the editor taking the keys.
import { createInterface } from 'node:readline';

export type Submission = { kind: 'text'; text: string } | { kind: 'eof' };

export interface PromptOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  /** Shown before the first line, and before each continued one. */
  prompt: string;
  continuation: string;
}

/** Earlier submissions, newest first (readline's order), kept across line editors. */
const HISTORY_SIZE = 500;

export function createPrompt(options: PromptOptions) {
  let history: string[] = [];
  let active: (() => void) | null = null;
  const editor = {
    /** End the line being edited as if Ctrl-D was pressed (conch cannot go on). */
    cancel(): void {
      active?.();
    },
    /**
     * One submission: lines ending in a backslash go on to the next line. Ctrl-C clears what was
     * typed, or at an empty prompt ends like Ctrl-D.
     */
    read(): Promise<Submission> {
      return new Promise<Submission>((resolve) => {
        // Ctrl-D typed while a run was ending reached the terminal in cooked mode: stdin has ended.
        if ((options.input as { readableEnded?: boolean }).readableEnded) return resolve({ kind: 'eof' });
        const rl = createInterface({ input: options.input, output: options.output, terminal: true, history, historySize: HISTORY_SIZE, removeHistoryDuplicates: true, prompt: options.prompt });
        const lines: string[] = [];
        let done = false;
        const finish = (result: Submission) => {
          if (done) return;
          done = true;
          active = null;
          const kept = (rl as unknown as { history?: string[] }).history;
          if (kept) history = kept;
          rl.close();
          resolve(result);
        };
        rl.on('line', (line) => {
          if (line.endsWith('\\')) {
            lines.push(line.slice(0, -1));
            rl.setPrompt(options.continuation);
            rl.prompt();
            return;
          }
          lines.push(line);
          const text = lines.join('\n');
          // The whole submission is one history entry, as it was typed.
          if (lines.length > 1 && history[0] !== text) {
            const h = (rl as unknown as { history?: string[] }).history;
            if (h) h.splice(0, lines.length, text);
          }
          finish({ kind: 'text', text });
        });
        rl.on('SIGINT', () => {
          if (rl.line === '' && lines.length === 0) {
            options.output.write('\n');
            finish({ kind: 'eof' });
            return;
          }
          // Like a shell: what was typed stays on screen, dropped; a fresh prompt follows.
          options.output.write('^C\n');
          done = true;
          const kept = (rl as unknown as { history?: string[] }).history;
          if (kept) history = kept;
          rl.close();
          resolve(editor.read());
        });
        active = () => rl.close();
        rl.on('close', () => {
          if (!done) options.output.write('\n');
          finish({ kind: 'eof' });
        });
        rl.prompt();
      });
    },
  };
  return editor;
}
