// A home run with --allow-home-writes: the cost of the home's protected paths (src/config/home.ts).
// - start: the first command of a run (its placeholders made, its held sandbox set up);
// - per command: later commands in the same run (the held sandbox), and with a sandbox per
//   command (CONCH_SANDBOX_PER_COMMAND=1), each against the same workspace without the home's
//   globs, interleaved (load from other processes hits all alike).
// The home looks like a developer's: .config, .local/share, .cache, .cargo and .docker exist; the
// editors' and tools' start-up files mostly do not (placeholders hold those).
// Usage: bun bench/home.ts [calls]
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { homeGuard } from '../src/config/home.ts';
import { DEFAULT_LIMITS } from '../src/core/limits.ts';
import { PlaceholderScope, type SandboxSettings } from '../src/sandbox/index.ts';
import { probe } from '../src/sandbox/probe.ts';
import { createExecutor } from '../src/shell/exec.ts';
import { Workspace } from '../src/workspace/paths.ts';

const calls = Number(process.argv[2] ?? 100);
const probed = await probe();
if (!probed.status.ok) {
  console.log(`sandbox unavailable, nothing to measure: ${probed.status.detail}`);
  process.exit(1);
}
const root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-bench-home-')));

function makeHome(name: string): string {
  const home = join(root, name);
  for (const dir of ['.config/gh', '.local/share', '.cache', '.cargo/bin', '.docker', 'src/project']) mkdirSync(join(home, dir), { recursive: true });
  writeFileSync(join(home, '.bashrc'), '# bashrc\n');
  writeFileSync(join(home, '.profile'), '# profile\n');
  writeFileSync(join(home, '.cargo/env'), '# cargo env\n');
  writeFileSync(join(home, '.docker/config.json'), '{}\n');
  return home;
}

async function executor(name: string, withGlobs: boolean) {
  const home = makeHome(name);
  const globs = withGlobs ? homeGuard(home, home, { allowHomeWrites: true })!.sandboxGlobs : [];
  const settings: SandboxSettings = { profile: 'workspace-write', network: true, writableRoots: [], protectedGlobs: globs };
  const scope = new PlaceholderScope();
  const tmp = join(root, `${name}-tmp`);
  mkdirSync(tmp);
  const run = createExecutor({
    workspace: await Workspace.open({ root: home, unrestricted: false }),
    unrestricted: false,
    sandbox: settings,
    limits: DEFAULT_LIMITS,
    env: {},
    shellEnabled: true,
    tmpDir: tmp,
    logDir: join(root, `${name}-logs`),
    placeholders: scope,
  });
  return { run, scope, globs: globs.length };
}

const signal = new AbortController().signal;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function once(run: Awaited<ReturnType<typeof executor>>['run'], perCommand = false): Promise<number> {
  if (perCommand) process.env.CONCH_SANDBOX_PER_COMMAND = '1';
  const started = performance.now();
  try {
    const result = await run('true', { signal });
    if (result.exitCode !== 0 || result.cleanupError) throw new Error(`true failed: ${JSON.stringify(result)}`);
  } finally {
    delete process.env.CONCH_SANDBOX_PER_COMMAND;
  }
  return performance.now() - started;
}

const scopes: PlaceholderScope[] = [];
try {
  const starts: Record<string, number[]> = { plain: [], home: [] };
  for (let i = 0; i < 7; i++) {
    for (const [label, withGlobs] of [['plain', false], ['home', true]] as const) {
      const e = await executor(`start-${label}-${i}`, withGlobs);
      scopes.push(e.scope);
      starts[label]!.push(await once(e.run));
      e.scope.close();
    }
  }
  const plain = await executor('plain', false);
  const home = await executor('home', true);
  scopes.push(plain.scope, home.scope);
  const samples: Record<string, number[]> = { plain: [], home: [], plainOne: [], homeOne: [] };
  for (let i = 0; i < 3; i++) for (const e of [plain, home]) await once(e.run);
  for (let i = 0; i < calls; i++) {
    samples.plain!.push(await once(plain.run));
    samples.home!.push(await once(home.run));
    samples.plainOne!.push(await once(plain.run, true));
    samples.homeOne!.push(await once(home.run, true));
  }
  const ms = (values: number[]) => `${median(values).toFixed(2)} ms`;
  console.log(`home run, ${home.globs} protected globs; medians (first command: of 7 runs; others: of ${calls} interleaved calls of \`true\`)`);
  console.log(`first command of a run: ${ms(starts.home!)} (without the home's globs ${ms(starts.plain!)})`);
  console.log(`later command, held sandbox: ${ms(samples.home!)} (without ${ms(samples.plain!)})`);
  console.log(`command with a sandbox per command: ${ms(samples.homeOne!)} (without ${ms(samples.plainOne!)})`);
} finally {
  for (const scope of scopes) scope.close();
  rmSync(root, { recursive: true, force: true });
}
