// The interactive prompt: one line editor (node:readline: ↑/↓ history, Emacs keys, resize-aware)
// for each submission. It is closed while a run is under way, so the terminal is back in cooked
// mode: Ctrl-C is then a SIGINT the run's handler cancels with, and an `ask` question reads its
// answer without the editor taking the keys.
//
// Pasted text is one submission, whatever line breaks it holds: while the editor is open the
// terminal is asked for bracketed paste (readline names its markers paste-start and paste-end), and
// a line ended inside a paste goes on to the next, as after a backslash. Without the markers (a
// terminal that does not bracket pastes) each pasted line would be a submission of its own, and
// the lines after the first were lost with the editor that read them.
import { createInterface } from 'node:readline';

export type Submission = { kind: 'text'; text: string } | { kind: 'eof' };

export interface PromptOptions {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream;
  /** Shown before the first line, and before each continued one. */
  prompt: string;
  continuation: string;
  /** What Tab may complete the text before the cursor to (none: Tab is typed as a tab). */
  complete?: (before: string) => string[];
}

/** Earlier submissions, newest first (readline's order), kept across line editors (and sessions: history.ts). */
const HISTORY_SIZE = 1000;
const BRACKETED_PASTE_ON = '\x1b[?2004h';
const BRACKETED_PASTE_OFF = '\x1b[?2004l';

/** A submission as readline keeps it: its lines in reverse order, joined by \r. */
const entryOf = (text: string) => text.split('\n').reverse().join('\r');

/** What readline draws before each line but the first of a recalled entry of several. */
const READLINE_MARK = '| ';

/**
 * readline's output, with conch's continuation drawn where readline marks a recalled entry's later
 * lines: the entry shows as it was typed. The mark is the two characters after each line break
 * readline writes (the entry's own text follows them, a pasted table's `| ` too), sometimes in a
 * write of their own; the continuation must be as wide, for readline's cursor arithmetic.
 */
function markedAsTyped(output: PromptOptions['output'], continuation: string): PromptOptions['output'] {
  const out = output as NodeJS.WritableStream & { columns?: number; isTTY?: boolean };
  if (Bun.stringWidth(continuation) !== READLINE_MARK.length) return output;
  let afterBreak = false;
  const write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
    let text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (afterBreak && text.startsWith(READLINE_MARK)) text = continuation + text.slice(READLINE_MARK.length);
    text = text.replaceAll(`\n${READLINE_MARK}`, `\n${continuation}`);
    if (text) afterBreak = text.endsWith('\n');
    return (out.write as (text: string, ...rest: unknown[]) => boolean)(text, ...rest);
  };
  // What readline uses of its output: the width, whether it is a terminal, resizes.
  return {
    write,
    get columns() {
      return out.columns;
    },
    get isTTY() {
      return out.isTTY;
    },
    on: (event: string, listener: () => void) => out.on(event, listener),
    removeListener: (event: string, listener: () => void) => out.removeListener(event, listener),
  } as unknown as PromptOptions['output'];
}

export function createPrompt(options: PromptOptions) {
  const shown = markedAsTyped(options.output, options.continuation);
  let history: string[] = [];
  /** The line editor open now: its history is the one to extend. */
  let open: { history?: string[] } | null = null;
  let active: (() => void) | null = null;
  // Ctrl-C at an empty prompt ends the session only when pressed again with no key between: one
  // meant for a run that had just ended, or to clear a line already empty, must not end it.
  let exitArmed = false;
  // readline decodes a chunk of input whole: keys that came in one read after the Enter that ended
  // a submission (typed ahead during a run, and let out at once by the terminal) are decoded after
  // the editor closed, with no one listening. They are kept, as sent, for the next editor.
  let leftover = '';
  const spill = (text: string | undefined, key: { sequence?: string } | undefined) => {
    if (!open) leftover += key?.sequence ?? text ?? '';
  };
  const editor = {
    /**
     * Submissions of earlier sessions, oldest first: they go behind this session's (↑ reaches them
     * after), an older copy of an entry giving way to the newer one.
     */
    remember(older: string[]): void {
      const h = open?.history ?? history;
      const seen = new Set(h);
      for (const text of older.toReversed()) {
        const entry = entryOf(text);
        if (h.length >= HISTORY_SIZE) break;
        if (!seen.has(entry)) h.push(entry);
        seen.add(entry);
      }
      history = h;
    },
    /** Submissions remember() was given that must go again (the history turned out to be off). */
    forget(texts: string[]): void {
      const h = open?.history ?? history;
      const gone = new Set(texts.map(entryOf));
      for (let i = h.length - 1; i >= 0; i--) if (gone.has(h[i]!)) h.splice(i, 1);
      history = h;
    },
    /** End the line being edited as if Ctrl-D was pressed (conch cannot go on). */
    cancel(): void {
      active?.();
    },
    /**
     * One submission: lines ending in a backslash go on to the next line. Ctrl-C clears what was
     * typed; twice in a row at an empty prompt it ends like Ctrl-D.
     */
    read(): Promise<Submission> {
      return new Promise<Submission>((resolve) => {
        // Ctrl-D typed while a run was ending reached the terminal in cooked mode: stdin has ended.
        if ((options.input as { readableEnded?: boolean }).readableEnded) return resolve({ kind: 'eof' });
        // In front of what the terminal holds (typed later), read as if it came now.
        if (leftover) (options.input as unknown as { unshift(chunk: Buffer): void }).unshift(Buffer.from(leftover));
        leftover = '';
        let pasting = false;
        // Tab completes only where there is something to complete, and not inside a paste: readline
        // calls the completer for every Tab once it has one, and inserts nothing when it finds nothing,
        // so a tab the user means (code, a pasted table) is offered back as the one completion.
        // A command already complete is one hit that adds nothing: readline would list it again at
        // every further Tab, so there is nothing to offer (and no tab to type either).
        const completer = (before: string): [string[], string] => {
          const hits = pasting ? [] : options.complete!(before);
          if (hits.length === 1 && hits[0] === before) return [[], before];
          return [hits.length ? hits : [`${before}\t`], before];
        };
        const rl = createInterface({ input: options.input, output: shown, terminal: true, history, historySize: HISTORY_SIZE, removeHistoryDuplicates: true, prompt: options.prompt, ...(options.complete ? { completer } : {}) });
        open = rl as unknown as { history?: string[] };
        const lines: string[] = [];
        /** History entries readline added for this submission's lines (it skips blank ones). */
        let entries = 0;
        // Registered after readline's own listener: a line break inside a paste is seen with
        // `pasting` still set, and the paste's end only after its last line break.
        const onKey = (_text: string | undefined, key: { name?: string; ctrl?: boolean } | undefined) => {
          if (!(key?.ctrl && key.name === 'c')) exitArmed = false;
          if (key?.name === 'paste-start') pasting = true;
          else if (key?.name === 'paste-end') pasting = false;
        };
        // The terminal must not be left bracketing pastes for the shell, however conch exits.
        const pasteOff = () => options.output.write(BRACKETED_PASTE_OFF);
        options.input.on('keypress', onKey);
        options.output.write(BRACKETED_PASTE_ON);
        process.once('exit', pasteOff);
        let done = false;
        const close = () => {
          options.input.off('keypress', onKey);
          process.off('exit', pasteOff);
          pasteOff();
          const kept = (rl as unknown as { history?: string[] }).history;
          if (kept) history = kept;
          open = null;
          rl.close();
          // Only the rest of the chunk being decoded now.
          options.input.on('keypress', spill);
          process.nextTick(() => options.input.off('keypress', spill));
        };
        const finish = (result: Submission) => {
          if (done) return;
          done = true;
          active = null;
          close();
          resolve(result);
        };
        rl.on('line', (typed) => {
          if (typed.trim() !== '') entries++;
          // readline keeps a submission of several lines as one history entry, its lines in reverse
          // order joined by \r, shows it recalled as lines, and hands it back joined by \r.
          const line = typed.replaceAll('\r', '\n');
          const continued = line.endsWith('\\') && !pasting;
          if (continued || pasting) {
            lines.push(continued ? line.slice(0, -1) : line);
            rl.setPrompt(options.continuation);
            rl.prompt();
            return;
          }
          lines.push(line);
          const text = lines.join('\n');
          // The whole submission is one history entry, in readline's form, in place of the entries
          // it made of the lines; an older copy goes, as removeHistoryDuplicates does.
          const h = (rl as unknown as { history?: string[] }).history;
          if (lines.length > 1 && h) {
            const entry = entryOf(text);
            h.splice(0, entries, entry);
            const older = h.indexOf(entry, 1);
            if (older !== -1) h.splice(older, 1);
          }
          finish({ kind: 'text', text });
        });
        rl.on('SIGINT', () => {
          const empty = rl.line === '' && lines.length === 0;
          if (empty && exitArmed) {
            options.output.write('\n');
            finish({ kind: 'eof' });
            return;
          }
          exitArmed = empty;
          // Like a shell: what was typed stays on screen, dropped; a fresh prompt follows.
          options.output.write(empty ? '^C  (Ctrl-C again or Ctrl-D to exit)\n' : '^C\n');
          done = true;
          close();
          resolve(editor.read());
        });
        // Ctrl-Z stops conch; on `fg` readline puts the terminal back in raw mode but leaves its
        // input paused, and with nothing else to wait for the process would end there.
        rl.on('SIGCONT', () => rl.resume());
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
