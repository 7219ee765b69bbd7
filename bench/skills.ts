// Figures for skills: what 50 skills in ~/.agents/skills add to a start, against none.
//   process:    a real `bin/conch` run whose model (the local test server) answers at once: every
//               start cost, skills included, up to the exit; wall time and CPU time (user + system,
//               steadier on a busy machine). Second start: the same run again (warm OS cache and
//               skills parse cache); runs interleave none/50 so machine load hits both alike.
//   in-process: loadSkills() + the catalog alone, timed inside a fresh process, with a cold parse
//               cache (the yaml import and 50 parses) and a warm one (a second start).
// The bundle is what users run; it is rebuilt first when src/ is newer (as `npm install` would).
// Run: ./node_modules/.bin/bun bench/skills.ts
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Glob } from 'bun';

const ROOT = resolve(import.meta.dir, '..');
const CONCH = join(ROOT, 'bin/conch');
const SKILLS = 50;
const REPEATS = 15;

if (process.argv[2] === '--child') {
  const [home, configDir, cwd, , cacheFile] = process.argv.slice(3) as [string, string, string, string, string];
  const started = performance.now();
  const { loadSkills } = await import('../src/skills/load.ts');
  const { renderCatalog } = await import('../src/skills/catalog.ts');
  const set = await loadSkills({ home, configDir, cwd, trusted: async () => true, cacheFile });
  const text = renderCatalog(set.skills, { maxBytes: 16 * 1024, path: (f) => f });
  const ms = performance.now() - started;
  if (set.skills.length !== Number(process.argv[6])) throw new Error(`loaded ${set.skills.length} skills: ${set.warnings.join('; ')}`);
  process.stdout.write(JSON.stringify({ ms, bytes: text?.length ?? 0 }));
  process.exit(0);
}

function skill(i: number): string {
  return `---
name: bench-skill-${i}
description: Generated benchmark skill number ${i}. Use it when the task mentions benchmark ${i}, and not otherwise.
license: MIT
metadata:
  author: bench
  version: "1.0"
---
# Bench skill ${i}

1. Read the inputs.
2. Do the work described in references/guide.md.
3. Report what changed.
`;
}

function bundleFresh(): boolean {
  const built = join(ROOT, 'node_modules/.cache/conch/dist/BUILT');
  if (!existsSync(built)) return false;
  const stamp = statSync(built).mtimeMs;
  for (const file of new Glob('src/**/*').scanSync(ROOT)) if (statSync(join(ROOT, file)).mtimeMs > stamp) return false;
  return statSync(join(ROOT, 'package.json')).mtimeMs <= stamp;
}

const base = await mkdtemp(join(tmpdir(), 'conch-bench-skills-'));
const { startModelServer } = await import('../test/support/model-server.ts');
const server = await startModelServer();
server.script(() => ({ text: 'ok' }));

async function setup(count: number): Promise<{ home: string; xdg: string; work: string }> {
  const dir = join(base, `n${count}`);
  const home = join(dir, 'home');
  const xdg = join(dir, 'config');
  const work = join(dir, 'work');
  for (const d of [home, join(xdg, 'conch'), join(work, '.git')]) await mkdir(d, { recursive: true });
  for (let i = 0; i < count; i++) {
    const folder = join(home, '.agents', 'skills', `bench-skill-${i}`);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'SKILL.md'), skill(i));
  }
  return { home, xdg, work };
}

async function timeRun(dirs: { home: string; xdg: string; work: string }): Promise<{ wall: number; cpu: number }> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.xdg,
    XDG_CACHE_HOME: join(dirs.home, '.cache'),
    ANTHROPIC_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: server.anthropicBaseUrl,
  };
  const started = performance.now();
  const child = Bun.spawn([CONCH, '--model', 'anthropic/bench', '--no-shell', 'go'], { cwd: dirs.work, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  const code = await child.exited;
  const wall = performance.now() - started;
  if (code !== 0) throw new Error(`conch exited ${code}: ${err || out}`);
  const usage = child.resourceUsage();
  const cpu = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1000 : NaN;
  return { wall, cpu };
}

async function timeLoader(dirs: { home: string; xdg: string; work: string }, count: number, cacheFile: string): Promise<number> {
  const child = Bun.spawn([process.execPath, import.meta.path, '--child', dirs.home, join(dirs.xdg, 'conch'), dirs.work, String(count), cacheFile], { stdout: 'pipe', stderr: 'pipe' });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  if ((await child.exited) !== 0) throw new Error(`loader child failed: ${err}`);
  return (JSON.parse(out) as { ms: number }).ms;
}

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;

try {
  if (!bundleFresh()) {
    console.log('(src/ is newer than the bundle: rebuilding it first, as npm install would)');
    if (Bun.spawnSync([process.execPath, join(ROOT, 'src/build.ts')], { cwd: ROOT }).exitCode !== 0) throw new Error('build failed');
  }
  const none = await setup(0);
  const many = await setup(SKILLS);
  // First starts warm the OS cache and Bun's transpiler cache; every figure below is a second start.
  await timeRun(none);
  await timeRun(many);
  const runs = { none: [] as { wall: number; cpu: number }[], many: [] as { wall: number; cpu: number }[] };
  for (let i = 0; i < REPEATS; i++) {
    runs.none.push(await timeRun(none));
    runs.many.push(await timeRun(many));
  }
  for (const key of ['wall', 'cpu'] as const) {
    const a = median(runs.none.map((r) => r[key]));
    const b = median(runs.many.map((r) => r[key]));
    const [aMin, bMin] = [Math.min(...runs.none.map((r) => r[key])), Math.min(...runs.many.map((r) => r[key]))];
    console.log(`process    ${key.padEnd(4)} skills=0   second start ${a.toFixed(1)} ms (min ${aMin.toFixed(1)})`);
    console.log(`process    ${key.padEnd(4)} skills=${SKILLS}  second start ${b.toFixed(1)} ms (min ${bMin.toFixed(1)}): +${(b - a).toFixed(1)} ms over none (min: ${(bMin - aMin).toFixed(1)}); budget +10 ms`);
  }
  const loader = { none: [] as number[], cold: [] as number[], warm: [] as number[] };
  for (let i = 0; i < 7; i++) {
    const cacheFile = join(base, `loader-cache-${i}.json`);
    loader.none.push(await timeLoader(none, 0, cacheFile));
    loader.cold.push(await timeLoader(many, SKILLS, cacheFile));
    loader.warm.push(await timeLoader(many, SKILLS, cacheFile));
  }
  console.log(`in-process skills=0   loadSkills+catalog ${median(loader.none).toFixed(2)} ms`);
  console.log(`in-process skills=${SKILLS}  loadSkills+catalog ${median(loader.cold).toFixed(2)} ms with a cold parse cache (yaml import and 50 parses)`);
  console.log(`in-process skills=${SKILLS}  loadSkills+catalog ${median(loader.warm).toFixed(2)} ms with a warm parse cache (a second start)`);
} finally {
  await server.close();
  await rm(base, { recursive: true, force: true });
}
