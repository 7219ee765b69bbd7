// While a run is under way the prompt is closed and the terminal is in cooked mode (prompt.ts:
// Ctrl-C must stay a SIGINT, an `ask` question reads a line), and cooked mode echoes: what a user
// typed ahead for the next prompt landed in the middle of the streaming answer. Only the echo is
// turned off; the keys wait in the terminal's buffer, and the next prompt shows them as its line.
// node:tty can switch raw mode alone, which would also take Ctrl-C's SIGINT away, hence stty.

export interface TypeAhead {
  /** Keys typed from now on are not echoed (until `echo()` or the process exits). */
  hide(): void;
  /** Echo again: the prompt (which takes the terminal raw itself) or a question is next. */
  echo(): void;
}

export function typeAhead(input: { isTTY?: boolean }): TypeAhead {
  let hidden = false;
  // On the terminal conch reads from (stdin), whatever stdout and stderr are.
  const stty = (setting: string) => {
    try {
      Bun.spawnSync(['stty', setting], { stdin: 'inherit', stdout: 'ignore', stderr: 'ignore' });
    } catch {
      // No stty: typed keys are echoed, as before; nothing else depends on it.
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
  };
}
