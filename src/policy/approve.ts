// Interactive approval for "ask" command rules. Only ever asks on a terminal: without one (pipes,
// CI, --json) there is nobody to answer, and the guard treats "ask" as deny instead of waiting.
import type { ApprovalAnswer, Approver } from './command-rules.ts';

interface TtyInput {
  isTTY?: boolean;
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  off(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  off(event: 'end' | 'close', listener: () => void): unknown;
  resume(): unknown;
  pause(): unknown;
}

interface TtyOutput {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** Show control characters as escapes so that a command cannot hide part of itself on screen. */
export function visibleCommand(command: string): string {
  // eslint-disable-next-line no-control-regex
  return command.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    return `\\u{${c.charCodeAt(0).toString(16)}}`;
  });
}

function interpret(line: string): ApprovalAnswer {
  const answer = line.trim().toLowerCase();
  if (answer === 'y' || answer === 'yes') return 'once';
  if (answer === 'a' || answer === 'always') return 'always';
  return 'deny'; // anything else, including just Enter, is no
}

/**
 * An approver that asks on `output` and reads one line from `input`. Answers 'deny' at once when
 * either side is not a TTY, when input ends, or when `signal` aborts (Ctrl-C cancels the run, so
 * the question must not outlive it).
 */
export function ttyApprover(input: TtyInput, output: TtyOutput, signal?: AbortSignal): Approver {
  return (command, rule) => {
    if (!input.isTTY || !output.isTTY || signal?.aborted) return Promise.resolve('deny');
    return new Promise<ApprovalAnswer>((resolve) => {
      let buffered = '';
      const finish = (answer: ApprovalAnswer) => {
        input.off('data', onData);
        input.off('end', onEnd);
        input.off('close', onEnd);
        signal?.removeEventListener('abort', onEnd);
        input.pause();
        if (answer === 'deny') output.write('conch: not approved\n');
        resolve(answer);
      };
      const onData = (chunk: Buffer | string) => {
        buffered += chunk.toString();
        const nl = buffered.indexOf('\n');
        if (nl !== -1) finish(interpret(buffered.slice(0, nl)));
      };
      // No answer was typed, so no Enter ended the question's line (Ctrl-C left only its echo there).
      const onEnd = () => {
        output.write('\n');
        finish('deny');
      };
      input.on('data', onData);
      input.on('end', onEnd);
      input.on('close', onEnd);
      signal?.addEventListener('abort', onEnd, { once: true });
      output.write(
        // The rule's id is config text, a cloned repository's too (its ask rules): spelled out like
        // the command, or it could erase the lines above and conceal the command below.
        `\nconch: command rule "${visibleCommand(rule)}" asks before running:\n    ${visibleCommand(command)}\n` +
          'Run it? [y]es / [N]o / [a]lways for this run: ',
      );
      input.resume();
    });
  };
}
