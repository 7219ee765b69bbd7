// Figures for sessions: what continuing a 50-turn session costs over a fresh run (the whole CLI,
// against the local model server), the load of that session in-process, and the cost of storing
// one turn; the store holds 500 sessions (the sessions.keep default). Run: ./node_modules/.bin/bun bench/sessions.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer } from '../test/support/model-server.ts';
import { SessionStore } from '../src/sessions/store.ts';
import { planSession } from '../src/sessions/open.ts';
import { latestIndexDir } from '../src/sessions/dir.ts';
import type { PolicySnapshot } from '../src/sessions/records.ts';
import type { SessionWriter } from '../src/sessions/writer.ts';

const CONCH = resolve(import.meta.dir, '../bin/conch');

// Child mode: find and load the latest session of a workspace once, in a fresh (cold) process, as
// `conch -c` does, and print how long it took.
if (process.argv[2] === '--load-once') {
  const { planSession: plan } = await import('../src/sessions/open.ts');
  const started = performance.now();
  const loaded = plan({ continue: true }, process.argv[3]!, process.argv[4]!, process.argv[5]!).loaded!;
  console.log(`${performance.now() - started} ${loaded.conversation.length}`);
  process.exit(0);
}
const TURNS = 50;
const server = await startModelServer();
server.script(() => ({ text: 'done' }));
const base = await mkdtemp(join(tmpdir(), 'conch-bench-'));
const ws = join(base, 'ws');
await Bun.write(join(ws, 'small.txt'), 'hello\n');
const state = join(base, 'state');
// Where conch (HOME=base) keeps each workspace's latest session: -c reads one entry, not 500 headers.
const indexDir = latestIndexDir({ HOME: base });
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: base,
  XDG_CONFIG_HOME: join(base, 'config'),
  XDG_STATE_HOME: state,
  ANTHROPIC_API_KEY: 'bench',
  ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
};
const policy: PolicySnapshot = {
  unrestricted: false, readOnly: false, shell: true, filesystem: true, network: true, profile: 'workspace-write',
  only: null, denied: [], writableRoots: [], policyFile: null,
};

/** One turn as a real one looks: a task, a tool call with a 2 KB result, an answer, the end. */
function writeTurn(w: SessionWriter, i: number) {
  w.startRun({ runId: `run-${i}`, provider: 'anthropic', model: 'bench', policy });
  w.message({ role: 'user', content: [{ type: 'text', text: `task number ${i}: look at small.txt and say what it holds` }] });
  w.message({ role: 'assistant', text: 'Reading it.', toolCalls: [{ id: `call_${i}`, name: 'read', arguments: '{"path":"small.txt"}' }] });
  w.result({ callId: `call_${i}`, name: 'read', content: [{ type: 'text', text: `1\thello ${'x'.repeat(2000)}\n` }], isError: false });
  w.message({ role: 'assistant', text: `It holds a greeting (turn ${i}).`, toolCalls: [] });
  w.end({ status: 'completed', output: 'ok', stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: null, cacheWriteTokens: null }, counts: { modelCalls: 2, toolCalls: 1, toolErrors: 0 }, durationMs: 5 });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

// Storing a turn.
{
  const store = new SessionStore(join(base, 'store-bench'));
  const w = store.create('/bench');
  const n = 2000;
  for (let i = 0; i < 100; i++) writeTurn(w, i); // warm up
  const started = performance.now();
  for (let i = 0; i < n; i++) writeTurn(w, i);
  const perTurn = (performance.now() - started) / n;
  w.close();
  console.log(`storing a turn (task, tool call, 2 KB result, answer, end): ${(perTurn * 1000).toFixed(1)} µs (target ≤ 1 ms)`);
}

// A 50-turn session of this workspace.
const real = (await import('node:fs')).realpathSync(ws);
const store = new SessionStore(join(state, 'conch', 'sessions'));
const w = store.create(real);
for (let i = 0; i < TURNS; i++) writeTurn(w, i);
w.close();
// A store as full as sessions.keep lets it grow (500), the others of other workspaces and newer:
// -c reads past their headers to find this workspace's latest, --resume matches among them.
for (let i = 1; i < 500; i++) {
  const other = store.create(`/elsewhere/${i}`);
  writeTurn(other, 0);
  other.close();
}

{
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    const plan = planSession({ continue: true }, ws, store.dir, indexDir);
    if (plan.loaded!.runs.length < TURNS) throw new Error('session not found');
    times.push(performance.now() - started);
  }
  console.log(`finding and loading a ${TURNS}-turn session in-process: ${median(times).toFixed(2)} ms (median of 50)`);
}

{
  const times: number[] = [];
  for (let i = 0; i < 15; i++) {
    const child = Bun.spawn([process.execPath, import.meta.path, '--load-once', ws, store.dir, indexDir], { stdout: 'pipe', stderr: 'inherit' });
    const [ms] = (await new Response(child.stdout).text()).trim().split(' ');
    await child.exited;
    times.push(Number(ms));
  }
  console.log(`finding and loading it in a fresh process, as conch -c does (load + replay): ${median(times).toFixed(2)} ms (median of 15; target ≤ 10)`);
}

/** One whole run: its wall time, and the CPU time of conch's process (the model server is this one's). */
async function run(args: string[]): Promise<{ wall: number; cpu: number }> {
  const started = performance.now();
  const child = Bun.spawn([CONCH, '--model', 'anthropic/bench', '--json', ...args], { cwd: ws, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if ((await child.exited) !== 0) throw new Error(`conch ${args.join(' ')} failed: ${stderr || stdout}`);
  const { user, system } = child.resourceUsage()!.cpuTime;
  return { wall: performance.now() - started, cpu: (Number(user) + Number(system)) / 1000 };
}

// Whole runs, interleaved so that machine load hits all alike. --ephemeral on all: the continued
// session stays at 50 turns, and none pays for creating a file the others do not. Wall time
// includes the model server (this process) reading the longer request; CPU time is conch's alone,
// and load on the machine barely moves it.
const kinds: Record<string, string[]> = {
  fresh: ['--ephemeral', 'a fresh task'],
  '-c': ['--ephemeral', '-c', 'one more task'],
  '--resume': ['--ephemeral', '--resume', w.id.slice(0, 8), 'one more task'],
};
const figures: Record<string, { wall: number[]; cpu: number[] }> = {};
await run(['--ephemeral', 'warm up']);
for (const kind of Object.keys(kinds)) figures[kind] = { wall: [], cpu: [] };
for (let i = 0; i < 25; i++) {
  for (const [kind, args] of Object.entries(kinds)) {
    const { wall, cpu } = await run(args);
    figures[kind]!.wall.push(wall);
    figures[kind]!.cpu.push(cpu);
  }
}
const fresh = { wall: median(figures.fresh!.wall), cpu: median(figures.fresh!.cpu) };
console.log(`whole CLI, fresh run: ${fresh.wall.toFixed(1)} ms wall, ${fresh.cpu.toFixed(1)} ms CPU (medians of 25)`);
for (const kind of ['-c', '--resume']) {
  const wall = median(figures[kind]!.wall);
  const cpu = median(figures[kind]!.cpu);
  console.log(
    `whole CLI, ${kind} on the ${TURNS}-turn session: ${wall.toFixed(1)} ms wall (${(wall - fresh.wall).toFixed(1)} more, with sending the ~120 KB of ${TURNS} turns to the model server), ` +
      `${cpu.toFixed(1)} ms CPU (${(cpu - fresh.cpu).toFixed(1)} more; target ≤ 10)`,
  );
}

await server.close();
await rm(base, { recursive: true, force: true });
