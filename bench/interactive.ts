// Startup of the interactive mode: from starting `conch` in a pseudo-terminal (tmux) to its prompt
// on screen, against `conch --version` started the same way (the floor: Bun and the entry point).
// Run: bun bench/interactive.ts
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CONCH = resolve(import.meta.dir, '../bin/conch');
const RUNS = 15;

async function timeToScreen(argv: string[], shows: string, env: Record<string, string>, cwd: string): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'conch-bench-tty-'));
  const socket = join(dir, 's');
  const tmux = (...args: string[]) => Bun.spawnSync(['tmux', '-S', socket, '-f', '/dev/null', ...args], { stdout: 'pipe', env: { PATH: process.env.PATH!, TERM: 'xterm-256color' } });
  // The shell waits for a key before starting conch, so tmux's own start is not counted.
  tmux('new-session', '-d', '-x', '120', '-y', '40', '-s', 'b', `cd '${cwd}'; read go; env -i ${Object.entries(env).map(([k, v]) => `'${k}=${v}'`).join(' ')} ${argv.join(' ')}; sleep 30`);
  await Bun.sleep(200);
  const start = performance.now();
  tmux('send-keys', '-t', 'b', 'Enter');
  let ms = NaN;
  for (let i = 0; i < 4000; i++) {
    if (tmux('capture-pane', '-p', '-t', 'b').stdout.toString().includes(shows)) {
      ms = performance.now() - start;
      break;
    }
    await Bun.sleep(1);
  }
  tmux('kill-server');
  await rm(dir, { recursive: true, force: true });
  return ms;
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]!;
const base = await mkdtemp(join(tmpdir(), 'conch-bench-'));
const home = join(base, 'home');
const ws = join(base, 'ws');
await mkdir(home);
await mkdir(ws);
const env = { PATH: process.env.PATH!, HOME: home, XDG_CONFIG_HOME: join(base, 'config'), OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', CONCH_MODEL: 'openai/test-model', TERM: 'xterm-256color' };
const version: number[] = [];
const prompt: number[] = [];
for (let i = 0; i < RUNS; i++) {
  version.push(await timeToScreen([CONCH, '--version'], 'conch 0.', env, ws));
  prompt.push(await timeToScreen([CONCH], '/help lists commands', env, ws));
}
await rm(base, { recursive: true, force: true });
// The minimum too: on a loaded machine it is the figure least disturbed by other processes.
console.log(`conch --version on screen: median ${median(version).toFixed(0)} ms, min ${Math.min(...version).toFixed(0)} ms (${RUNS} runs)`);
console.log(`interactive prompt on screen: median ${median(prompt).toFixed(0)} ms, min ${Math.min(...prompt).toFixed(0)} ms (${RUNS} runs; ${(median(prompt) / median(version)).toFixed(2)}x --version)`);
