// Where a sandboxed run's memory is: conch runs `turns` bash calls (call i runs `echo hi i`, as
// bench/summary.ts's RSS row) while this samples /proc/PID/smaps of the conch process; printed are
// its peak RSS (VmHWM, bench/child-peak.ts) and the resident MiB of each kind of mapping at the
// sampled peak, beside the same for a one-turn run. Linux only.
// Run: ./node_modules/.bin/bun bench/rss.ts [turns]   (default 49)
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer, type ScriptedTurn } from '../test/support/model-server.ts';
import { watchPeak } from './child-peak.ts';
import { isolatedEnv } from './isolated-env.ts';

const CONCH = process.env.CONCH_BIN ?? resolve(import.meta.dir, '..', 'bin', 'conch');
const TURNS = Number(process.argv[2] ?? 49);

const server = await startModelServer();
const base = await mkdtemp(join(tmpdir(), 'conch-bench-rss-'));
const work = join(base, 'work');
await mkdir(work);
const env = isolatedEnv(base, { ANTHROPIC_BASE_URL: server.anthropicBaseUrl });

/** What a mapping is, from its path and permissions. */
function kind(path: string, perms: string): string {
  if (path === process.execPath || path.endsWith('/bun.exe') || path.endsWith('/bin/bun')) return perms.includes('x') ? 'Bun binary, code' : 'Bun binary, data';
  if (path === '') return perms.includes('x') ? 'anonymous rwx (JIT code)' : 'anonymous rw (malloc arena: JS heap, bytecode, native)';
  if (path === '[stack]') return 'main thread stack';
  if (path.includes('.so')) return 'shared libraries';
  return path.startsWith('[') ? path : 'other files';
}

function residentByKind(smaps: string): Map<string, number> {
  const out = new Map<string, number>();
  let current = '';
  for (const line of smaps.split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping) {
      current = kind(mapping[2]!, mapping[1]!);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out.set(current, (out.get(current) ?? 0) + Number(rss[1]));
  }
  return out;
}

async function run(argv: string[], turns: number) {
  server.script([...Array.from({ length: turns }, (_, i): ScriptedTurn => ({ toolCalls: [{ name: 'bash', arguments: { command: `echo hi ${i}` } }] })), { text: 'done' }]);
  const child = Bun.spawn(argv, { cwd: work, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
  const hwm = watchPeak(child.pid);
  let peak = new Map<string, number>();
  let peakTotal = 0;
  const sampling = (async () => {
    for (;;) {
      const smaps = await readFile(`/proc/${child.pid}/smaps`, 'utf8').catch(() => '');
      if (smaps === '') return;
      const now = residentByKind(smaps);
      const total = [...now.values()].reduce((a, b) => a + b, 0);
      if (total > peakTotal) [peak, peakTotal] = [now, total];
      await Bun.sleep(5);
    }
  })();
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  await sampling;
  const peakBytes = await hwm();
  if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}: ${stderr || stdout}`);
  return { peakMiB: peakBytes / 1024 / 1024, peak, peakTotal };
}

const mib = (kib: number) => (kib / 1024).toFixed(1);
try {
  const flags = ['--model', 'anthropic/bench', '--json', 'bench'];
  const one = await run([CONCH, ...flags], 1);
  const many = await run([CONCH, ...flags], TURNS);
  console.log(`peak RSS: 1 sandboxed turn ${one.peakMiB.toFixed(1)} MiB; ${TURNS} sandboxed turns ${many.peakMiB.toFixed(1)} MiB`);
  console.log(`resident at the sampled peak (MiB), 1 turn → ${TURNS} turns:`);
  const kinds = [...new Set([...many.peak.keys(), ...one.peak.keys()])].sort((a, b) => (many.peak.get(b) ?? 0) - (many.peak.get(a) ?? 0));
  for (const k of kinds) if ((many.peak.get(k) ?? 0) >= 64) console.log(`  ${k}: ${mib(one.peak.get(k) ?? 0)} → ${mib(many.peak.get(k) ?? 0)}`);
  console.log(`  total: ${mib(one.peakTotal)} → ${mib(many.peakTotal)}`);
} finally {
  await server.close();
  await rm(base, { recursive: true, force: true });
}
