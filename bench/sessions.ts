// Figures for sessions: what continuing a 50-turn session costs over a fresh run (the whole CLI,
// against the local model server), the load of that session in-process, and the cost of storing
// one turn. Run: ./node_modules/.bin/bun bench/sessions.ts
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer } from '../test/support/model-server.ts';
import { SessionStore } from '../src/sessions/store.ts';
import { planSession } from '../src/sessions/open.ts';
import type { PolicySnapshot } from '../src/sessions/records.ts';
import type { SessionWriter } from '../src/sessions/writer.ts';

const CONCH = resolve(import.meta.dir, '../bin/conch');

// Child mode: find and load the latest session of a workspace once, in a fresh (cold) process, as
// `conch -c` does, and print how long it took.
if (process.argv[2] === '--load-once') {
  const { planSession: plan } = await import('../src/sessions/open.ts');
  const started = performance.now();
  const loaded = plan({ continue: true }, process.argv[3]!, process.argv[4]!).loaded!;
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

{
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    const plan = planSession({ continue: true }, ws, store.dir);
    if (plan.loaded!.runs.length < TURNS) throw new Error('session not found');
    times.push(performance.now() - started);
  }
  console.log(`finding and loading a ${TURNS}-turn session in-process: ${median(times).toFixed(2)} ms (median of 50)`);
}

{
  const times: number[] = [];
  for (let i = 0; i < 15; i++) {
    const child = Bun.spawn([process.execPath, import.meta.path, '--load-once', ws, store.dir], { stdout: 'pipe', stderr: 'inherit' });
    const [ms] = (await new Response(child.stdout).text()).trim().split(' ');
    await child.exited;
    times.push(Number(ms));
  }
  console.log(`finding and loading it in a fresh process, as conch -c does (load + replay): ${median(times).toFixed(2)} ms (median of 15; target ≤ 10)`);
}

async function run(args: string[]): Promise<number> {
  const started = performance.now();
  const child = Bun.spawn([CONCH, '--model', 'anthropic/bench', '--json', ...args], { cwd: ws, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if ((await child.exited) !== 0) throw new Error(`conch ${args.join(' ')} failed: ${stderr || stdout}`);
  return performance.now() - started;
}

// Whole runs, interleaved so that machine load hits both alike. --ephemeral on both: the continued
// session stays at 50 turns, and neither run pays for creating a file the other does not.
const fresh: number[] = [];
const continued: number[] = [];
await run(['--ephemeral', 'warm up']);
for (let i = 0; i < 25; i++) {
  fresh.push(await run(['--ephemeral', 'a fresh task']));
  continued.push(await run(['--ephemeral', '-c', 'one more task']));
}
const delta = median(continued) - median(fresh);
console.log(`whole CLI: fresh run ${median(fresh).toFixed(1)} ms, continuing the ${TURNS}-turn session ${median(continued).toFixed(1)} ms (medians of 25):`);
console.log(`  ${delta.toFixed(1)} ms more, which includes sending the ${TURNS} turns (~120 KB) to the model server through the SDK`);

await server.close();
await rm(base, { recursive: true, force: true });
