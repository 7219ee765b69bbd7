// Piped stdin is part of the task (`git diff | conch "review this"`): read to its end, bounded by
// the stdin_bytes limit, and said out loud on a terminal when the end is slow to come
// (`sleep 8 | conch …` would otherwise look like a hang).
import { SetupError } from '../core/errors.ts';
import { stderr, stdinIsTTY } from '../core/stdio.ts';

/** How long stdin may stay open before conch says it is waiting for it. */
const QUIET_MS = 1000;

export type StdinInput = { text: string } | { tooLarge: true; maxBytes: number } | { binary: true; bytes: number };

/** '' when stdin is a terminal or unreadable; 0 = unlimited, as for the other count limits. */
export async function readPipedStdin(maxBytes: number): Promise<StdinInput> {
  if (stdinIsTTY()) return { text: '' };
  const notice = stderr.isTTY
    ? setTimeout(() => stderr.write('conch: reading stdin as part of the task, until it ends (run with </dev/null to leave it out)\n'), QUIET_MS)
    : undefined;
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    const reader = (Bun.stdin.stream() as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (maxBytes > 0 && total > maxBytes) {
        void reader.cancel().catch(() => {});
        return { tooLarge: true, maxBytes };
      }
      chunks.push(value);
    }
  } catch {
    // An unreadable stdin (closed, a directory) adds nothing to the task.
    return { text: '' };
  } finally {
    clearTimeout(notice);
  }
  const bytes = Buffer.concat(chunks);
  // A NUL byte is what git takes for binary too: decoded as text it reaches the model as noise.
  if (bytes.includes(0)) return { binary: true, bytes: bytes.length };
  return { text: bytes.toString('utf8') };
}

/** `cat image.png | conch "describe"`: said before any model call, with what to do instead. */
export function binaryStdinError(bytes: number): SetupError {
  return new SetupError(
    `stdin is binary (${bytes} bytes with NUL bytes), and piped input is added to the task as text. Save it to a file in the workspace and name the file in the task instead (the read tool shows images and describes other binary files), or run with </dev/null to leave stdin out.`,
  );
}

/** The task: the arguments, with piped input appended in a marked block. */
export function composeTask(taskArg: string, piped: string): string {
  if (!piped.trim()) return taskArg.trim();
  if (!taskArg.trim()) return piped;
  return `${taskArg.trim()}\n\n<stdin>\n${piped.replace(/\n$/, '')}\n</stdin>`;
}
