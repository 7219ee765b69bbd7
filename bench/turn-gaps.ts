// Time between one model request and the next in a 49-turn task (call i runs `echo hi i`), as the
// mock server sees them: launch to the first request, the first three gaps (the first commands,
// which set up the sandbox), and the median of the rest, for three modes alternated:
// - held: restricted, the run's held sandbox from its third command on (src/sandbox/held.ts);
// - per-command: restricted with CONCH_SANDBOX_PER_COMMAND=1, a sandbox of its own per command;
// - unrestricted.
// CONCH_BIN: another checkout's bin/conch. Usage: bun bench/turn-gaps.ts [rounds]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer } from '../test/support/model-server.ts';

const CONCH = process.env.CONCH_BIN ?? resolve(import.meta.dir, '../bin/conch');
const TURNS = 49;
const rounds = Number(process.argv[2] ?? 3);
const base = mkdtempSync(join(tmpdir(), 'conch-bench-gaps-'));
const home = join(base, 'home');
Bun.spawnSync(['mkdir', '-p', home]);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function once(mode: 'held' | 'per-command' | 'unrestricted') {
  const server = await startModelServer();
  const at: number[] = [];
  let call = 0;
  server.script(() => {
    at.push(performance.now());
    const i = call++;
    return i < TURNS ? { toolCalls: [{ name: 'bash', arguments: { command: `echo hi ${i}` } }] } : { text: 'done' };
  });
  const work = mkdtempSync(join(base, 'ws-'));
  Bun.spawnSync(['git', 'init', '-q', work]);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    ANTHROPIC_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
    ...(mode === 'per-command' ? { CONCH_SANDBOX_PER_COMMAND: '1' } : {}),
  };
  const started = performance.now();
  const child = Bun.spawn([CONCH, '--model', 'anthropic/bench', ...(mode === 'unrestricted' ? ['--unrestricted'] : []), '--json', 'bench'], {
    cwd: work,
    env,
    stdout: 'ignore',
    stderr: 'pipe',
  });
  const code = await child.exited;
  const total = performance.now() - started;
  await server.close();
  if (code !== 0 || at.length !== TURNS + 1) throw new Error(`conch exited ${code}: ${await new Response(child.stderr).text()}`);
  const gaps = at.slice(1).map((t, i) => t - at[i]!);
  return { total, first: at[0]! - started, early: gaps.slice(0, 3), rest: median(gaps.slice(3)) };
}

const modes = ['held', 'per-command', 'unrestricted'] as const;
const results = Object.fromEntries(modes.map((m) => [m, [] as Awaited<ReturnType<typeof once>>[]]));
try {
  await once('held'); // warm-up: file cache, the toolchain cache, the seccomp program
  for (let r = 0; r < rounds; r++) for (const mode of modes) results[mode]!.push(await once(mode));
  console.log(`medians of ${rounds} runs of ${TURNS} tool turns (ms)`);
  for (const mode of modes) {
    const runs = results[mode]!;
    const m = (pick: (r: (typeof runs)[number]) => number) => median(runs.map(pick)).toFixed(1);
    console.log(
      `${mode.padEnd(13)} total ${m((r) => r.total)}  to first request ${m((r) => r.first)}  ` +
        `gaps 1-3 ${m((r) => r.early[0]!)} ${m((r) => r.early[1]!)} ${m((r) => r.early[2]!)}  later gaps ${m((r) => r.rest)}`,
    );
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}
