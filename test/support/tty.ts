// A real pseudo-terminal for CLI tests: conch runs in a detached tmux session of its own (its own
// server socket, so nothing is shared with anyone's tmux), keys are sent as a user types them, and
// the screen is read back as text.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const hasTmux = Bun.spawnSync(['sh', '-c', 'command -v tmux'], { stdout: 'ignore', stderr: 'ignore' }).exitCode === 0;

export interface Terminal {
  /** Keys in tmux's names ('Enter', 'C-c', 'C-d', 'Up') or literal text with `literal`. */
  keys(...keys: string[]): void;
  type(text: string): void;
  /** Paste as a terminal does: bracketed (ESC[200~ … ESC[201~) when the program asked for it. */
  paste(text: string): void;
  /** The visible screen (and scrollback), lines joined; `escapes` keeps colours. */
  screen(escapes?: boolean): string;
  /** Resize the window as a user drags it (the program gets SIGWINCH). */
  resize(columns: number, rows?: number): void;
  /** The window title as the program left it (OSC 0 / OSC 2 set it). */
  title(): string;
  /** Wait until the screen satisfies `test`; throws with the screen when it does not in time. */
  waitFor(test: (screen: string) => boolean, what: string, ms?: number): Promise<string>;
  /** The program's exit code, once it exited. */
  exited(ms?: number): Promise<number>;
  close(): Promise<void>;
}

export async function openTerminal(argv: string[], options: { cwd: string; env: Record<string, string>; columns?: number; rows?: number }): Promise<Terminal> {
  const dir = await mkdtemp(join(tmpdir(), 'conch-tty-'));
  const socket = join(dir, 'tmux.sock');
  const status = join(dir, 'status');
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const env = Object.entries(options.env).map(([k, v]) => quote(`${k}=${v}`)).join(' ');
  // The exit code goes to a file, and the pane stays (its screen readable) until close().
  const command = `cd ${quote(options.cwd)} && env -i ${env} ${argv.map(quote).join(' ')}; echo $? > ${quote(status)}; exec sleep 600`;
  const tmux = (...args: string[]) => Bun.spawnSync(['tmux', '-S', socket, '-f', '/dev/null', ...args], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color' } });
  const started = tmux('new-session', '-d', '-x', String(options.columns ?? 100), '-y', String(options.rows ?? 40), '-s', 'conch', command);
  if (started.exitCode !== 0) throw new Error(`tmux did not start: ${started.stderr}`);
  const screen = (escapes = false) => tmux('capture-pane', '-p', '-J', ...(escapes ? ['-e'] : []), '-S', '-200', '-t', 'conch').stdout.toString();
  let last = '';
  return {
    keys: (...keys) => void tmux('send-keys', '-t', 'conch', ...keys),
    type: (text) => void tmux('send-keys', '-t', 'conch', '-l', text),
    paste(text) {
      tmux('set-buffer', '-b', 'paste', '--', text);
      // -p brackets it only if the program turned bracketed paste mode on; each line feed goes as a
      // carriage return, the key Enter sends, as a terminal pastes a line break.
      tmux('paste-buffer', '-p', '-b', 'paste', '-t', 'conch');
    },
    screen,
    resize: (columns, rows) => void tmux('resize-window', '-t', 'conch', '-x', String(columns), ...(rows ? ['-y', String(rows)] : [])),
    title: () => tmux('display-message', '-p', '-t', 'conch', '#{pane_title}').stdout.toString().trim(),
    async waitFor(test, what, ms = 30_000) {
      for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(50)) {
        last = screen() || last;
        if (test(last)) return last;
      }
      throw new Error(`the terminal never showed ${what}; the screen:\n${last}`);
    },
    async exited(ms = 30_000) {
      for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(50)) {
        const text = await readFile(status, 'utf8').catch(() => '');
        if (text.trim()) return Number(text.trim());
      }
      throw new Error(`the program did not exit; the screen:\n${screen() || last}`);
    },
    async close() {
      tmux('kill-server');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
