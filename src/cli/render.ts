// Human output: the answer on stdout as it streams; tool activity and a spinner on stderr, only on a TTY.
import type { EventSink, RunEvent } from '../agent/events.ts';
import type { Outcome } from '../agent/outcome.ts';

export interface Streams {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function humanSink(streams: Streams, options: { color: boolean; interactive: boolean }): EventSink {
  const { stdout, stderr } = streams;
  const paint = (code: number, text: string) => (options.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const dim = (t: string) => paint(2, t);
  let atLineStart = true;
  let wroteText = false;
  let spinner: ReturnType<typeof setInterval> | null = null;
  let spinnerShown = false;

  const stopSpinner = () => {
    if (spinner) clearInterval(spinner);
    spinner = null;
    if (spinnerShown) stderr.write('\r\x1b[2K');
    spinnerShown = false;
  };
  const startSpinner = (label: string) => {
    if (!options.interactive) return;
    stopSpinner();
    let i = 0;
    spinner = setInterval(() => {
      stderr.write(`\r\x1b[2K${dim(`${FRAMES[i++ % FRAMES.length]} ${label}`)}`);
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
    emit(event: RunEvent) {
      switch (event.type) {
        case 'run.started':
          if (options.interactive) {
            const mode = event.mode === 'unrestricted' ? paint(33, 'unrestricted: no workspace checks, no sandbox') : `restricted, sandbox ${event.sandbox}`;
            stderr.write(dim(`conch · ${event.provider}/${event.model} · ${mode}\n`));
          } else if (event.mode === 'unrestricted') {
            stderr.write('conch: running unrestricted (no workspace checks, no sandbox)\n');
          }
          break;
        case 'model.started':
          startSpinner('thinking');
          break;
        case 'model.retry':
          stopSpinner();
          if (options.interactive) stderr.write(dim(`  retrying model call in ${Math.round(event.delayMs)} ms (${event.reason})\n`));
          break;
        case 'text.delta':
          stopSpinner();
          stdout.write(event.text);
          wroteText = true;
          atLineStart = event.text.endsWith('\n');
          break;
        case 'tool.started':
          stopSpinner();
          if (options.interactive) {
            endTextLine();
            stderr.write(`${paint(36, '›')} ${paint(1, event.name)} ${dim(summarizeArgs(event.args))}\n`);
          }
          startSpinner(event.name);
          break;
        case 'tool.updated':
          if (options.interactive) startSpinner(`${event.name}: ${event.text.slice(0, 60)}`);
          break;
        case 'tool.finished':
          stopSpinner();
          if (options.interactive && event.isError) stderr.write(`  ${paint(31, '✗')} ${dim(firstLine(event.output).slice(0, 160))}\n`);
          break;
        case 'model.finished':
          stopSpinner();
          break;
        case 'run.finished':
          stopSpinner();
          if (wroteText) endTextLine();
          if (event.outcome.status !== 'completed') stderr.write(`${describeOutcome(event.outcome)}\n`);
          break;
      }
    },
  };
}

export function describeOutcome(outcome: Outcome): string {
  const detail = outcome.code ? `${outcome.status} (${outcome.code})` : outcome.status;
  return `conch: ${detail}${outcome.message ? `: ${outcome.message}` : ''}`;
}

function summarizeArgs(args: unknown): string {
  if (!args || typeof args !== 'object') return typeof args === 'string' ? args.slice(0, 80) : '';
  const a = args as Record<string, unknown>;
  const main = a.command ?? a.path ?? Object.values(a).find((v) => typeof v === 'string');
  return typeof main === 'string' ? firstLine(main).slice(0, 100) : '';
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? '';
}
