// While a run is under way the prompt is closed and the terminal is in cooked mode (prompt.ts:
// Ctrl-C must stay a SIGINT, an `ask` question reads a line), and cooked mode echoes: what a user
// typed ahead for the next prompt landed in the middle of the streaming answer. Only the echo is
// turned off; the keys wait in the terminal's buffer, and the next prompt shows them as its line.
// node:tty can switch raw mode alone, which would also take Ctrl-C's SIGINT away, hence stty.
//
// An `ask` question reads its answer from that same buffer, so keys typed before it was on screen
// (a "y" and Enter meant for the next prompt) would answer it. They are set aside before it asks,
// and given back, in their order, for the next prompt they were typed for: kept rather than
// dropped, since the user typed them for that prompt and never saw the question they would answer.
import { readSync } from 'node:fs';

export interface TypeAhead {
  /** Keys typed from now on are not echoed (until `echo()` or the process exits). */
  hide(): void;
  /** Echo again: the prompt (which takes the terminal raw itself) or a question is next. */
  echo(): void;
  /** Take what was typed so far out of the terminal's buffer (a question must not read it). */
  setAside(): void;
  /** Put what setAside() took back in front of what comes next, for the next prompt to read. */
  giveBack(): void;
}

interface Input {
  isTTY?: boolean;
  unshift(chunk: Buffer): void;
}

export function typeAhead(input: Input, fd = 0): TypeAhead {
  let hidden = false;
  const kept: Buffer[] = [];
  // On the terminal conch reads from (stdin), whatever stdout and stderr are.
  const stty = (...settings: string[]): boolean => {
    try {
      return Bun.spawnSync(['stty', ...settings], { stdin: 'inherit', stdout: 'ignore', stderr: 'ignore' }).exitCode === 0;
    } catch {
      // No stty: typed keys are echoed, as before; nothing else depends on it.
      return false;
    }
  };
  const echo = () => {
    if (!hidden) return;
    hidden = false;
    process.off('exit', echo);
    stty('echo');
  };
  return {
    hide() {
      if (hidden || !input.isTTY) return;
      hidden = true;
      // The shell conch returns to must echo, however the session ends.
      process.once('exit', echo);
      stty('-echo');
    },
    echo,
    setAside() {
      if (!input.isTTY) return;
      // A line not yet ended waits in the canonical buffer, which read() does not hand out; without
      // canonical mode all of it is readable, and MIN 0 TIME 0 returns at once when nothing is there.
      // Without that setting a read would wait for the user, so nothing is read.
      if (!stty('-icanon', 'min', '0', 'time', '0')) return;
      try {
        const chunk = Buffer.alloc(4096);
        for (let n = chunk.length; n === chunk.length; ) {
          n = readSync(fd, chunk, 0, chunk.length, null);
          if (n > 0) kept.push(Buffer.from(chunk.subarray(0, n)));
        }
      } catch {
        // EAGAIN (a non-blocking descriptor with nothing more): all there was is taken.
      } finally {
        stty('icanon');
      }
    },
    giveBack() {
      if (kept.length) input.unshift(Buffer.concat(kept.splice(0)));
    },
  };
}
