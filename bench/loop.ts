// Figures for the agent loop: startup, a one-turn task end to end, per-turn harness overhead and
// peak RSS, against the local model server; the one-turn task again with OpenTelemetry export on
// (OTLP/HTTP to a local receiver). Run: ./node_modules/.bin/bun bench/loop.ts
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer } from '../test/support/model-server.ts';
import { startOtlpReceiver } from '../test/support/otlp-receiver.ts';
import { watchPeak } from './child-peak.ts';

const CONCH = resolve(import.meta.dir, '../bin/conch');
const server = await startModelServer();
const base = await mkdtemp(join(tmpdir(), 'conch-bench-'));
await writeFile(join(base, 'small.txt'), 'hello\n');
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: base,
  XDG_CONFIG_HOME: join(base, 'config'),
  ANTHROPIC_API_KEY: 'bench',
  ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
};

async function run(args: string[], cwd = base, extraEnv: Record<string, string> = {}) {
  const started = performance.now();
  const child = Bun.spawn([CONCH, ...args], { cwd, env: { ...env, ...extraEnv }, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const peak = watchPeak(child.pid);
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  const code = await child.exited;
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`conch ${args.join(' ')} exited ${code}: ${stderr || stdout}`);
  return { ms, maxRssBytes: (await peak()) || Number(child.resourceUsage()?.maxRSS ?? 0) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function task(turns: number, trace: string, extraEnv: Record<string, string> = {}) {
  server.script([
    ...Array.from({ length: turns }, () => ({ toolCalls: [{ name: 'read', arguments: { path: 'small.txt' } }] })),
    { text: 'done' },
  ]);
  return run(['--model', 'anthropic/bench', '--unrestricted', '--json', '--trace', trace, 'bench'], base, extraEnv);
}

/** Sum of tool durations reported in the trace: the tools' own cost, excluded from overhead. */
async function toolMs(trace: string): Promise<number> {
  const lines = (await readFile(trace, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  return lines.filter((e) => e.type === 'tool.finished').reduce((sum, e) => sum + e.durationMs, 0);
}

const versionRuns: number[] = [];
for (let i = 0; i < 7; i++) versionRuns.push((await run(['--version'])).ms);
const version = median(versionRuns);
console.log(`startup --version: ${version.toFixed(1)} ms (target ≤ 30)`);

const one: number[] = [];
let rss = 0;
for (let i = 0; i < 5; i++) {
  const r = await task(0, join(base, 't0.jsonl'));
  one.push(r.ms);
  rss = Math.max(rss, r.maxRssBytes);
}
console.log(`one-turn task end to end: ${median(one).toFixed(1)} ms (target ≤ 200)`);

// Alternated with untraced runs, so both see the same load.
const receiver = await startOtlpReceiver();
const traced = { on: [] as number[], off: [] as number[] };
for (let i = 0; i < 5; i++) {
  traced.off.push((await task(0, join(base, 't0.jsonl'))).ms);
  traced.on.push((await task(0, join(base, 't0.jsonl'), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })).ms);
}
await receiver.close();
console.log(`one-turn task with OpenTelemetry export: ${median(traced.on).toFixed(1)} ms, ${(median(traced.on) - median(traced.off)).toFixed(1)} ms over untraced`);

const results: Record<number, { ms: number; tools: number }> = {};
for (const n of [1, 50]) {
  const samples: { ms: number; tools: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const trace = join(base, `t${n}.jsonl`);
    const r = await task(n, trace);
    rss = Math.max(rss, r.maxRssBytes);
    samples.push({ ms: r.ms, tools: await toolMs(trace) });
  }
  samples.sort((a, b) => a.ms - b.ms);
  results[n] = samples[1]!;
  console.log(`${n} tool turn(s): ${results[n]!.ms.toFixed(1)} ms wall, ${results[n]!.tools} ms in tools`);
}
const perTurn = (results[50]!.ms - results[50]!.tools - (results[1]!.ms - results[1]!.tools)) / 49;
console.log(`harness overhead per turn (model round trip on loopback included): ${perTurn.toFixed(2)} ms (target ≤ 5)`);
console.log(`peak RSS: ${(rss / 1024 / 1024).toFixed(1)} MB (target ≤ 80)`);

// Shell turns, sandboxed and unrestricted: call i runs `echo hi i` (issue 17's measurement), from a
// git workspace. Medians of runs alternated between the modes; peak RSS is the sandboxed runs' max.
await mkdir(join(base, 'ws', '.git'), { recursive: true });
await writeFile(join(base, 'ws', '.git', 'HEAD'), 'ref: refs/heads/main\n');
async function shellTask(turns: number, sandboxed: boolean) {
  server.script([
    ...Array.from({ length: turns }, (_, i) => ({ toolCalls: [{ name: 'bash', arguments: { command: `echo hi ${i}` } }] })),
    { text: 'done' },
  ]);
  return run(['--model', 'anthropic/bench', ...(sandboxed ? [] : ['--unrestricted']), '--json', 'bench'], join(base, 'ws'));
}
const shell: Record<string, number[]> = {};
let sandboxedRss = 0;
for (let i = 0; i < 5; i++) {
  for (const turns of [1, 49]) {
    for (const sandboxed of [true, false]) {
      const r = await shellTask(turns, sandboxed);
      (shell[`${turns} ${sandboxed}`] ??= []).push(r.ms);
      if (sandboxed && turns === 49) sandboxedRss = Math.max(sandboxedRss, r.maxRssBytes);
    }
  }
}
for (const turns of [1, 49]) {
  const sandboxed = median(shell[`${turns} true`]!);
  const open = median(shell[`${turns} false`]!);
  console.log(`${turns} shell turn(s): sandboxed ${sandboxed.toFixed(0)} ms, unrestricted ${open.toFixed(0)} ms (${((sandboxed - open) / turns).toFixed(2)} ms per sandboxed command extra)`);
}
console.log(`peak RSS, 49 sandboxed shell turns: ${(sandboxedRss / 1024 / 1024).toFixed(1)} MiB (target ≤ 50)`);

await server.close();
await rm(base, { recursive: true, force: true });
