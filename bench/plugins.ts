// Figures for plugin loading: what 0, 20 and 100 small generated plugins add to startup, on a first
// run (empty transpile cache) and a second run (warm cache).
//   process:    wall time of a real `bin/conch tools --json` process (everything a start does)
//   in-process: loadPlugins() alone, timed inside a fresh process (the loader's own cost)
// Run: ./node_modules/.bin/bun bench/plugins.ts
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CONCH = resolve(import.meta.dir, '../bin/conch');
const COUNTS = [0, 20, 100];
const FIRST_REPEATS = 5;
const SECOND_REPEATS = 11;

if (process.argv[2] === '--child') {
  // In-process figure: import the loader, then time loadPlugins alone.
  const [configDir, cwd, cacheDir] = process.argv.slice(3) as [string, string, string];
  const { loadPlugins } = await import('../src/plugins/load.ts');
  const started = performance.now();
  const { tools, reports } = await loadPlugins({
    configDir,
    cwd,
    settings: { enabled: true, dirs: [], firstParty: [], projectTools: false, allowOverride: [] },
    reserved: new Map(),
    cacheDir,
  });
  const ms = performance.now() - started;
  if (reports.some((r) => r.status !== 'loaded')) throw new Error(JSON.stringify(reports.filter((r) => r.status !== 'loaded')));
  process.stdout.write(JSON.stringify({ ms, tools: tools.length }));
  process.exit(0);
}

function plugin(i: number): string {
  return `import { defineTool, Type } from 'conch';

export default defineTool({
  name: 'bench_tool_${i}',
  description: 'Generated benchmark tool number ${i}',
  parameters: Type.Object({
    text: Type.String({ description: 'Some text' }),
    count: Type.Optional(Type.Integer({ minimum: 1 })),
  }),
  async execute({ text, count = 1 }) {
    return text.repeat(count);
  },
});
`;
}

const base = await mkdtemp(join(tmpdir(), 'conch-bench-plugins-'));
const work = join(base, 'work');
await mkdir(work);

async function setup(count: number): Promise<string> {
  const xdg = join(base, `config-${count}`);
  const tools = join(xdg, 'conch', 'tools');
  await mkdir(tools, { recursive: true });
  await Promise.all(Array.from({ length: count }, (_, i) => writeFile(join(tools, `tool_${i}.ts`), plugin(i))));
  return xdg;
}

async function timeProcess(xdg: string, cache: string): Promise<number> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base, XDG_CONFIG_HOME: xdg, XDG_CACHE_HOME: cache };
  const started = performance.now();
  const child = Bun.spawn([CONCH, 'tools', '--json'], { cwd: work, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  const code = await child.exited;
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`conch tools --json exited ${code}: ${err || out}`);
  return ms;
}

async function timeLoader(xdg: string, cache: string): Promise<number> {
  const child = Bun.spawn([process.execPath, import.meta.path, '--child', join(xdg, 'conch'), work, join(cache, 'conch', 'jiti')], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if ((await child.exited) !== 0) throw new Error(`loader child failed: ${err}`);
  return (JSON.parse(out) as { ms: number }).ms;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

type Figures = { first: number; second: number; firstMin: number; secondMin: number };

/**
 * Runs are interleaved across plugin counts (0, 20, 100, 0, 20, 100, …) so that load from other
 * processes on the machine lands on every count alike; figures are medians.
 */
async function measure(time: (xdg: string, cache: string) => Promise<number>): Promise<Map<number, Figures>> {
  const configs = new Map<number, string>();
  for (const count of COUNTS) configs.set(count, await setup(count));
  const firsts = new Map<number, number[]>(COUNTS.map((c) => [c, []]));
  const seconds = new Map<number, number[]>(COUNTS.map((c) => [c, []]));
  for (let i = 0; i < FIRST_REPEATS; i++) {
    for (const count of COUNTS) {
      // A fresh cache: every plugin is transpiled. The same cache again: the second run.
      const cache = join(base, `cache-${time.name}-${count}-${i}`);
      firsts.get(count)!.push(await time(configs.get(count)!, cache));
      seconds.get(count)!.push(await time(configs.get(count)!, cache));
    }
  }
  for (let i = FIRST_REPEATS; i < SECOND_REPEATS; i++) {
    for (const count of COUNTS) seconds.get(count)!.push(await time(configs.get(count)!, join(base, `cache-${time.name}-${count}-0`)));
  }
  const stats = (c: number): Figures => ({
    first: median(firsts.get(c)!),
    second: median(seconds.get(c)!),
    firstMin: Math.min(...firsts.get(c)!),
    secondMin: Math.min(...seconds.get(c)!),
  });
  return new Map(COUNTS.map((c) => [c, stats(c)]));
}

/** Median and minimum; on a shared machine the minimum is the steadier figure. */
function line(kind: string, count: number, figures: Figures, baseline: Figures): string {
  const part = (label: 'first' | 'second') => {
    const key = `${label}Min` as const;
    const ms = figures[label];
    const min = figures[key];
    if (!count) return `${label} ${ms.toFixed(1)} ms (min ${min.toFixed(1)})`;
    const delta = ms - baseline[label];
    const minDelta = min - baseline[key];
    return `${label} ${ms.toFixed(1)} ms, +${delta.toFixed(1)} ms = ${(delta / count).toFixed(2)} ms/plugin (min: +${minDelta.toFixed(1)} ms)`;
  };
  return `${kind.padEnd(10)} plugins=${String(count).padEnd(4)} ${part('first')} | ${part('second')}`;
}

try {
  // Warm the OS file cache and Bun's own transpiler cache so the first figure measures plugins.
  await timeProcess(await setup(0), join(base, 'warmup'));
  for (const [kind, time] of [
    ['process', timeProcess],
    ['in-process', timeLoader],
  ] as const) {
    const results = await measure(time);
    const baseline = results.get(0)!;
    for (const count of COUNTS) console.log(line(kind, count, results.get(count)!, baseline));
  }
} finally {
  await rm(base, { recursive: true, force: true });
}
