// Human output. On a terminal the answer streams to stdout as it arrives (as terminal Markdown when
// a renderer is given), with tool activity and a spinner on stderr. When stdout is a pipe or a file,
// it gets only the final answer, raw, so that `conch "…" > answer.md` holds the result and not the
// model's thinking aloud between tool calls.
import { tildePath } from '../core/display-path.ts';
import type { EventSink, RunEvent } from '../agent/events.ts';
import type { Outcome } from '../agent/outcome.ts';
import type { MarkdownStream } from './markdown.ts';
import { wrapWords } from './wrap.ts';
import { finishedLines, fit, showsAtFinish, startedLine, terminalSafe, visible, type LineContext, type Paint } from './tool-lines.ts';

export { terminalSafe } from './tool-lines.ts';

export interface Streams {
  stdout: { write(text: string): unknown; columns?: number };
  stderr: { write(text: string): unknown; columns?: number };
}

export interface HumanOptions {
  color: boolean;
  /** stderr is a terminal: header, tool lines, a spinner and a closing line. */
  interactive: boolean;
  /** stdout is a terminal: stream every turn's text live; otherwise print only the final answer. */
  streamText: boolean;
  /** Draws the streamed text (whole blocks as they complete); raw text when absent. */
  markdown?: MarkdownStream;
  /** The working directory, for the header and for the paths tool lines show. */
  cwd?: string;
  /** The header line on a terminal (an interactive session shows it for its first run only). */
  header?: boolean;
  /**
   * --output-schema: stdout gets only the checked answer, at the end (compact JSON on one line on a
   * pipe, indented and highlighted on a terminal), never the text of the turns before it.
   */
  jsonAnswer?: boolean;
  /** false: no spinner (tasks that run at once, whose output is held back until its turn). */
  spinner?: boolean;
}

export interface HumanSink extends EventSink {
  /** Stop the spinner while something else (an approval question) owns the terminal. */
  hold(): void;
  release(): void;
  /**
   * A line on stderr said outside the events (Ctrl-C's "cancelling…"): over the spinner's line, which
   * would stay on screen above it, else on a line of its own (after the ^C the terminal echoed).
   */
  notice(line: string): void;
}

type RunStarted = Extract<RunEvent, { type: 'run.started' }>;

/** What the first Ctrl-C of a run says on a terminal. */
export const CANCELLING = 'conch: cancelling… (Ctrl-C again to exit now)';

/**
 * What the start of a run says on stderr whatever the display, --json too: a run without the
 * sandbox, and a resumed session the recorded policy narrowed. `modeShown`: a terminal's header
 * said the mode already.
 */
export function startNotices(event: RunStarted, modeShown: boolean): string[] {
  const lines: string[] = [];
  if (event.mode === 'unrestricted' && !modeShown) lines.push('conch: running unrestricted (no workspace checks, no sandbox)');
  // Resuming never widens: say what the recorded policy took away, on a terminal or not.
  if (event.session?.narrowed.length) {
    lines.push(`conch: resumed session ${event.session.id} under the policy now ∩ the recorded one: ${event.session.narrowed.join('; ')}`);
  }
  return lines;
}

/** Under --json: the start notices on stderr (stdout keeps its one document). */
export function noticeSink(stderr: Streams['stderr']): EventSink {
  return {
    emit(event) {
      if (event.type === 'run.started') for (const line of startNotices(event, false)) stderr.write(`${line}\n`);
    },
  };
}

/** Events that draw any text held back, in full, before what they write. */
const FINISHES_TEXT = new Set<RunEvent['type']>(['tool.started', 'model.finished', 'run.finished']);

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function humanSink(streams: Streams, options: HumanOptions): HumanSink {
  const { stdout, stderr } = streams;
  const code = (n: number) => (t: string) => (options.color ? `\x1b[${n}m${t}\x1b[0m` : t);
  const paint: Paint = { bold: code(1), dim: code(2), red: code(31), green: code(32), yellow: code(33), cyan: code(36) };
  const { dim } = paint;
  // Asked at every line, so a resized terminal gets lines of its new width.
  const width = () => Math.max(20, (stderr.columns ?? 100) - 1);
  const cwd = options.cwd ?? process.cwd();
  const lineContext = (): LineContext => ({ paint, width: width(), cwd });
  const live = options.streamText && !options.jsonAnswer;
  const md = live ? options.markdown : undefined;
  const toolArgs = new Map<string, unknown>();
  /** When each call under way started: its spinner counts from there through every progress line. */
  const toolSince = new Map<string, number>();
  let atLineStart = true;
  let wroteText = false;
  let turnHasText = false;
  let held = false;
  let label: string | null = null;
  let since = 0;
  let spinner: ReturnType<typeof setInterval> | null = null;
  let spinnerShown = false;
  let thinkingOpen = false;

  // A frame leaves the cursor at its start, and goes with everything below it: a terminal narrowed
  // under it (a pane resized mid-tool) rewraps it onto several rows, which erasing the cursor's row
  // alone left behind, and a terminal that cuts it instead keeps the cursor on its one row.
  const ERASE_FRAME = '\r\x1b[J';
  const clearSpinner = () => {
    if (spinner) clearInterval(spinner);
    spinner = null;
    if (spinnerShown) stderr.write(ERASE_FRAME);
    spinnerShown = false;
  };
  const stopSpinner = () => {
    label = null;
    clearSpinner();
  };
  const startSpinner = (text: string, started = Date.now()) => {
    if (!options.interactive || options.spinner === false) return;
    clearSpinner();
    label = text;
    since = started;
    if (held) return;
    let i = 0;
    spinner = setInterval(() => {
      const secs = Math.floor((Date.now() - started) / 1000);
      stderr.write(`${ERASE_FRAME}${dim(fit(`${FRAMES[i++ % FRAMES.length]} ${text}${secs >= 2 ? ` ${secs}s` : ''}`, width()))}\r`);
      spinnerShown = true;
    }, 80);
    spinner.unref?.();
  };
  const writeText = (text: string) => {
    if (!text) return;
    stdout.write(text);
    wroteText = true;
    atLineStart = text.endsWith('\n');
  };
  const endTextLine = () => {
    if (!atLineStart) {
      stdout.write('\n');
      atLineStart = true;
    }
  };
  /**
   * Before a line on stderr while a paragraph is being shown as it arrives (the cursor after its
   * last word): that paragraph goes off the screen, to come back below the line.
   */
  const clearLive = () => {
    if (!md || atLineStart) return;
    const back = md.retract();
    if (!back) return;
    stdout.write(back);
    atLineStart = true;
  };
  /** Text held back for a block to complete goes out before anything else is printed. */
  const flushText = () => {
    if (md) writeText(md.end());
    if (live) endTextLine();
  };

  const jsonAnswer = (value: unknown) => {
    if (!options.streamText || !options.markdown) return `${JSON.stringify(value)}\n`;
    return options.markdown.push(`\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\`\n`) + options.markdown.end();
  };

  return {
    hold() {
      held = true;
      clearSpinner();
      clearLive();
    },
    release() {
      held = false;
      if (label) startSpinner(label, since);
    },
    notice(line: string) {
      clearLive();
      // The spinner goes on drawing below the line, where run.finished clears it.
      if (spinnerShown) stderr.write(ERASE_FRAME);
      else stderr.write('\n');
      spinnerShown = false;
      stderr.write(`${wrapWords(line, options.interactive ? stderr.columns : undefined)}\n`);
    },
    emit(event: RunEvent) {
      // Every event but text writes at a line's start (those that finish the text draw it whole).
      if (event.type !== 'text.delta' && !FINISHES_TEXT.has(event.type)) clearLive();
      if (thinkingOpen && event.type !== 'thinking.delta') {
        thinkingOpen = false;
        stderr.write('\n');
      }
      switch (event.type) {
        case 'thinking.delta':
          // Reasoning streams dimmed on stderr, on a terminal only: it is not the answer.
          if (!options.interactive) break;
          stopSpinner();
          thinkingOpen = true;
          stderr.write(dim(terminalSafe(event.text)));
          break;
        case 'run.started':
          if (options.interactive && options.header !== false) {
            const mode = event.mode === 'unrestricted' ? paint.yellow('unrestricted: no workspace checks, no sandbox') : `restricted, sandbox ${event.sandbox}`;
            const session = event.session?.resumed ? ` · session ${event.session.id}${event.session.parent ? ` (forked from ${event.session.parent})` : ' (continued)'}` : '';
            stderr.write(`${dim(`conch · ${event.provider}/${event.model} · `)}${mode}${dim(`${session} · ${tildePath(cwd)}`)}\n`);
          }
          for (const line of startNotices(event, options.interactive)) stderr.write(`${line}\n`);
          break;
        case 'context.elided':
          stderr.write(`conch: ${event.results} earlier tool ${event.results === 1 ? 'result' : 'results'} (${event.bytes} bytes) elided to stay within context_bytes; the model is told\n`);
          break;
        case 'model.started':
          turnHasText = false;
          startSpinner('thinking');
          break;
        case 'model.retry':
          stopSpinner();
          if (options.interactive) stderr.write(dim(`  retrying the model call in ${(event.delayMs / 1000).toFixed(1)} s (${terminalSafe(event.reason)})\n`));
          break;
        case 'model.fallback':
          clearSpinner();
          stderr.write(`conch: ${terminalSafe(event.from)} failed (${terminalSafe(event.reason)}); turn ${event.turn} goes to ${terminalSafe(event.to)}\n`);
          break;
        case 'model.warning':
          clearSpinner();
          stderr.write(`conch: ${terminalSafe(event.text)}\n`);
          break;
        case 'text.delta': {
          if (!live) break;
          // Text of a new turn starts on a fresh paragraph, not glued to the previous turn's.
          if (!turnHasText && wroteText && !md) {
            endTextLine();
            stdout.write('\n');
          }
          turnHasText = true;
          const text = terminalSafe(event.text);
          const ready = md ? md.push(text) : text;
          if (ready) {
            stopSpinner();
            writeText(ready);
            // A paragraph shown as it arrives ends mid-line: the spinner would draw over it.
          } else if (label !== 'writing' && atLineStart) startSpinner('writing');
          break;
        }
        case 'tool.started':
          stopSpinner();
          flushText();
          toolArgs.set(event.callId, event.args);
          toolSince.set(event.callId, Date.now());
          if (options.interactive && !showsAtFinish(event.name)) stderr.write(`${startedLine(event, lineContext())}\n`);
          startSpinner(terminalSafe(event.name));
          break;
        case 'tool.updated':
          if (options.interactive) {
            // The latest line of progress (a command's output arrives in chunks).
            const line = event.text.split('\n').filter((l) => l.trim()).at(-1) ?? '';
            startSpinner(terminalSafe(`${event.name}: ${line}`), toolSince.get(event.callId));
          }
          break;
        case 'tool.finished': {
          stopSpinner();
          const args = toolArgs.get(event.callId);
          toolArgs.delete(event.callId);
          toolSince.delete(event.callId);
          if (!options.interactive) break;
          for (const line of finishedLines(event, args, lineContext())) stderr.write(`${line}\n`);
          break;
        }
        case 'output.repair': {
          clearSpinner();
          const first = event.errors.slice(0, 3).map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ');
          stderr.write(`conch: the answer does not match the output schema (${terminalSafe(first)}${event.errors.length > 3 ? ', …' : ''}); asking the model once to correct it\n`);
          break;
        }
        case 'model.finished':
          stopSpinner();
          flushText();
          break;
        case 'run.finished':
          stopSpinner();
          flushText();
          // Only a completed run has an answer; a stopped run's last text ("Let me look…") is not one.
          if (event.outcome.status === 'completed' && event.outcome.outputValue !== undefined) writeText(jsonAnswer(event.outcome.outputValue));
          else if (!live && event.outcome.status === 'completed' && event.outcome.output) writeText(event.outcome.output);
          if (wroteText) endTextLine();
          if (event.outcome.status !== 'completed') stderr.write(`${wrapWords(terminalSafe(describeOutcome(event.outcome)), options.interactive ? stderr.columns : undefined)}\n`);
          if (options.interactive) for (const line of closingLines(event.outcome, width())) stderr.write(`${dim(line)}\n`);
          break;
      }
    },
  };
}

/** One line on a terminal when the run ends: duration, turns, tokens with the cache hit ratio, cost when known. */
export function closingLine(outcome: Outcome): string {
  return closingParts(outcome).join(' · ');
}

/**
 * The closing line as drawn at `width`: its parts go on to another line rather than being cut, since
 * the cost comes last and is what a narrow terminal (a split pane) would lose. Nothing redraws these
 * lines, so they may take several.
 */
export function closingLines(outcome: Outcome, width: number): string[] {
  const lines: string[] = [];
  for (const part of closingParts(outcome)) {
    const last = lines.at(-1);
    if (last !== undefined && visible(`${last} · ${part}`) <= width) lines[lines.length - 1] = `${last} · ${part}`;
    else lines.push(fit(last === undefined ? part : `  ${part}`, width));
  }
  return lines;
}

function closingParts(outcome: Outcome): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  // Hosts may hand in an outcome built by hand (an embedder, the watchdog): every figure is optional here.
  const turns = outcome.counts?.modelCalls ?? 0;
  const parts = [`conch · ${((outcome.durationMs ?? 0) / 1000).toFixed(1)} s`, `${turns} turn${turns === 1 ? '' : 's'}`];
  const prompt = outcome.promptTokens ?? null;
  const read = outcome.usage?.cacheReadTokens ?? null;
  if (prompt !== null) {
    const ratio = read !== null && prompt > 0 ? ` (${Math.round((100 * read) / prompt)}% from cache)` : '';
    const out = outcome.usage?.outputTokens ?? null;
    parts.push(`${n(prompt)} tokens in${ratio}${out !== null ? `, ${n(out)} out` : ''}`);
  }
  if (outcome.cost) parts.push(`$${outcome.cost.usd.toFixed(4)}${outcome.cost.estimated ? ' (list prices)' : ''}`);
  return parts;
}

export function describeOutcome(outcome: Outcome): string {
  const detail = outcome.code ? `${outcome.status} (${outcome.code})` : outcome.status;
  return `conch: ${detail}${outcome.message ? `: ${outcome.message}` : ''}`;
}
