// Human output. On a terminal the answer streams to stdout as it arrives, with tool activity and a
// spinner on stderr. When stdout is a pipe or a file, it gets only the final answer, so that
// `conch "…" > answer.md` holds the result and not the model's thinking aloud between tool calls.
import type { EventSink, RunEvent } from '../agent/events.ts';
import type { Outcome } from '../agent/outcome.ts';

export interface Streams {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; columns?: number };
}

export interface HumanOptions {
  color: boolean;
  /** stderr is a terminal: tool lines and a spinner. */
  interactive: boolean;
  /** stdout is a terminal: stream every turn's text live; otherwise print only the final answer. */
  streamText: boolean;
}

export interface HumanSink extends EventSink {
  /** Stop the spinner while something else (an approval question) owns the terminal. */
  hold(): void;
  release(): void;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Text from the model or a tool, made safe for a terminal: control characters other than newline
 * and tab are dropped (C0, DEL and C1), so escape sequences cannot set the clipboard (OSC 52), the
 * window title, move the cursor to forge lines, or clear the screen.
 */
export function terminalSafe(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '');
}

export function humanSink(streams: Streams, options: HumanOptions): HumanSink {
  const { stdout, stderr } = streams;
  const paint = (code: number, text: string) => (options.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const dim = (t: string) => paint(2, t);
  let atLineStart = true;
  let wroteText = false;
  let turnHasText = false;
  let held = false;
  let label: string | null = null;
  let spinner: ReturnType<typeof setInterval> | null = null;
  let spinnerShown = false;
  let thinkingOpen = false;

  const clearSpinner = () => {
    if (spinner) clearInterval(spinner);
    spinner = null;
    if (spinnerShown) stderr.write('\r\x1b[2K');
    spinnerShown = false;
  };
  const stopSpinner = () => {
    label = null;
    clearSpinner();
  };
  const startSpinner = (text: string) => {
    if (!options.interactive) return;
    clearSpinner();
    label = text;
    if (held) return;
    const started = Date.now();
    let i = 0;
    spinner = setInterval(() => {
      const seconds = Math.floor((Date.now() - started) / 1000);
      stderr.write(`\r\x1b[2K${dim(`${FRAMES[i++ % FRAMES.length]} ${text}${seconds >= 2 ? ` ${seconds}s` : ''}`)}`);
      spinnerShown = true;
    }, 80);
    spinner.unref?.();
  };
  const endTextLine = () => {
    if (!atLineStart) {
      stdout.write('\n');
      atLineStart = true;
    }
  };

  return {
    hold() {
      held = true;
      clearSpinner();
    },
    release() {
      held = false;
      if (label) startSpinner(label);
    },
    emit(event: RunEvent) {
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
          if (options.interactive) {
            const mode = event.mode === 'unrestricted' ? paint(33, 'unrestricted: no workspace checks, no sandbox') : `restricted, sandbox ${event.sandbox}`;
            const session = event.session?.resumed ? ` · session ${event.session.id}${event.session.parent ? ` (forked from ${event.session.parent})` : ' (continued)'}` : '';
            stderr.write(dim(`conch · ${event.provider}/${event.model} · ${mode}${session}\n`));
          } else if (event.mode === 'unrestricted') {
            stderr.write('conch: running unrestricted (no workspace checks, no sandbox)\n');
          }
          // Resuming never widens: say what the recorded policy took away, on a terminal or not.
          if (event.session?.narrowed.length) {
            stderr.write(`conch: resumed session ${event.session.id} under the policy now ∩ the recorded one: ${event.session.narrowed.join('; ')}\n`);
          }
          break;
        case 'context.elided':
          stderr.write(`conch: ${event.results} earlier tool result(s) (${event.bytes} bytes) elided to stay within context_bytes; the model is told\n`);
          break;
        case 'model.started':
          turnHasText = false;
          startSpinner('thinking');
          break;
        case 'model.retry':
          stopSpinner();
          if (options.interactive) stderr.write(dim(`  retrying the model call in ${(event.delayMs / 1000).toFixed(1)} s (${event.reason})\n`));
          break;
        case 'model.warning':
          clearSpinner();
          stderr.write(`conch: ${terminalSafe(event.text)}\n`);
          break;
        case 'text.delta':
          if (!options.streamText) break;
          stopSpinner();
          // Text of a new turn starts on a fresh paragraph, not glued to the previous turn's.
          if (!turnHasText && wroteText) {
            endTextLine();
            stdout.write('\n');
          }
          turnHasText = true;
          stdout.write(terminalSafe(event.text));
          wroteText = true;
          atLineStart = event.text.endsWith('\n');
          break;
        case 'tool.started':
          stopSpinner();
          if (options.interactive) {
            if (options.streamText) endTextLine();
            stderr.write(`${paint(36, '›')} ${paint(1, terminalSafe(event.name))} ${dim(summarizeArgs(event.args))}\n`);
          }
          startSpinner(terminalSafe(event.name));
          break;
        case 'tool.updated':
          if (options.interactive) {
            // The latest line of progress (a command's output arrives in chunks).
            const line = event.text.split('\n').filter((l) => l.trim()).at(-1) ?? '';
            startSpinner(terminalSafe(`${event.name}: ${line.slice(0, 60)}`));
          }
          break;
        case 'tool.finished': {
          stopSpinner();
          if (!options.interactive) break;
          const exitCode = event.details?.exitCode;
          // One screen line: the model reads the whole error; the user needs only its gist.
          const width = Math.max(40, (stderr.columns ?? 160) - 5);
          if (event.isError) stderr.write(`  ${paint(31, '✗')} ${dim(terminalSafe(firstLine(event.output)).slice(0, width))}\n`);
          else if (typeof exitCode === 'number' && exitCode !== 0) stderr.write(`  ${paint(33, '!')} ${dim(`exit ${exitCode}`)}\n`);
          break;
        }
        case 'model.finished':
          stopSpinner();
          break;
        case 'run.finished':
          stopSpinner();
          // Only a completed run has an answer; a stopped run's last text ("Let me look…") is not one.
          if (!options.streamText && event.outcome.status === 'completed' && event.outcome.output) {
            stdout.write(event.outcome.output);
            wroteText = true;
            atLineStart = event.outcome.output.endsWith('\n');
          }
          if (wroteText) endTextLine();
          if (event.outcome.status !== 'completed') stderr.write(`${terminalSafe(describeOutcome(event.outcome))}\n`);
          if (options.interactive) stderr.write(`${dim(closingLine(event.outcome))}\n`);
          break;
      }
    },
  };
}

/** One line on a terminal when the run ends: duration, turns, tokens with the cache hit ratio, cost when known. */
export function closingLine(outcome: Outcome): string {
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
  return parts.join(' · ');
}

export function describeOutcome(outcome: Outcome): string {
  const detail = outcome.code ? `${outcome.status} (${outcome.code})` : outcome.status;
  return `conch: ${detail}${outcome.message ? `: ${outcome.message}` : ''}`;
}

function summarizeArgs(args: unknown): string {
  if (!args || typeof args !== 'object') return typeof args === 'string' ? oneLine(args) : '';
  const a = args as Record<string, unknown>;
  const main = a.command ?? a.path ?? Object.values(a).find((v) => typeof v === 'string');
  return typeof main === 'string' ? oneLine(main) : oneLine(JSON.stringify(args));
}

/** The first line, marked when there was more, cut to fit a line. */
function oneLine(text: string): string {
  const first = terminalSafe(firstLine(text));
  const more = first.length < text.length || first.length > 100;
  return `${first.slice(0, 100)}${more ? '…' : ''}`;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}
