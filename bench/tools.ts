// Kernel tool figures: a page from a 1 GiB file, an edit of a 50 MB file, a `true` round trip.
// Run: ./node_modules/.bin/bun bench/tools.ts   (never run by the tests; one line per figure)
import { mkdtemp, open, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool, ToolContext } from '../src/tools/define.ts';
import type { ToolResult } from '../src/core/content.ts';
import { createEditTool } from '../src/tools/kernel/edit.ts';
import { createReadTool } from '../src/tools/kernel/read.ts';
import { Workspace } from '../src/workspace/paths.ts';
import { RevisionTracker } from '../src/workspace/revision.ts';

const MB = 1024 * 1024;
const root = await realpath(await mkdtemp(join(tmpdir(), 'conch-bench-tools-')));
const workspace = await Workspace.open({ root, unrestricted: false });
const deps = { workspace, revisions: new RevisionTracker() };
const ctx = { cwd: root, signal: new AbortController().signal, workspace, update() {}, callId: 'bench' } as unknown as ToolContext;

/** Wall time and peak RSS growth over `work`, sampling RSS every millisecond. */
async function measure(work: () => Promise<unknown>): Promise<{ ms: number; rssMb: number }> {
  Bun.gc(true);
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 1);
  const start = performance.now();
  await work();
  const ms = performance.now() - start;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { ms, rssMb: (peak - before) / MB };
}

async function call(tool: Tool, args: Record<string, unknown>): Promise<ToolResult> {
  const result = (await tool.execute(args as never, ctx)) as ToolResult;
  if (result.isError) throw new Error(`${tool.name} failed: ${JSON.stringify(result.content)}`);
  return result;
}

const fmt = (m: { ms: number; rssMb: number }) => `${m.ms.toFixed(1)} ms, +${m.rssMb.toFixed(1)} MB RSS`;

try {
  // 1 GiB sparse file: 10 KiB of text, a hole, 100 lines of text at the end.
  const big = join(root, 'big.log');
  const fh = await open(big, 'w');
  await fh.write(Array.from({ length: 1000 }, (_, i) => `head ${i}\n`).join(''), 0);
  const tail = '\n' + Array.from({ length: 100 }, (_, i) => `tail ${i}\n`).join('');
  await fh.write(tail, 1024 * MB - Buffer.byteLength(tail));
  await fh.close();
  // Facts about files changed within the last 2 s are not cached (racy timestamps); let it age.
  await Bun.sleep(2100);
  const read = createReadTool(deps);
  const cold = await measure(() => call(read, { path: 'big.log', offset: 1050 }));
  console.log(`read 1 GiB last page, first read in the run, holes not yet in the page cache: ${fmt(cold)} (target ≤ 50 ms, ≤ 10 MB)`);
  // A new run (fresh tracker) over a file already in the page cache: bound by SHA-256 of 1 GiB.
  const fresh = createReadTool({ workspace, revisions: new RevisionTracker() });
  const hashBound = await measure(() => call(fresh, { path: 'big.log', offset: 1050 }));
  console.log(`read 1 GiB last page, first read in a run, file in the page cache (hashes all 1 GiB): ${fmt(hashBound)} (target ≤ 50 ms, ≤ 10 MB)`);
  const warm = await measure(() => call(read, { path: 'big.log', offset: 1050 }));
  console.log(`read 1 GiB last page, file unchanged since a read in this run (cached revision + line index): ${fmt(warm)} (target ≤ 50 ms, ≤ 10 MB)`);
  const other = await measure(() => call(read, { path: 'big.log', offset: 500, limit: 100 }));
  console.log(`read 1 GiB another page, unchanged file: ${fmt(other)}`);
  await rm(big);

  // 50 MB text file, one edit in the middle.
  const lines = Array.from({ length: 1_000_000 }, (_, i) => `line ${String(i).padStart(7, '0')} ${'x'.repeat(36)}`);
  await writeFile(join(root, 'fifty.txt'), lines.join('\n') + '\n');
  const edit = createEditTool(deps);
  const edited = await measure(() => call(edit, { path: 'fifty.txt', edits: [{ old_text: 'line 0500000 ', new_text: 'LINE 0500000 ' }] }));
  console.log(`edit of a 50 MB file (read, match, atomic write with fsync, diff): ${fmt(edited)}`);
} finally {
  await rm(root, { recursive: true, force: true });
}

// bash `true` round trip through the process layer, unsandboxed.
try {
  const { runProcess, cleanEnv } = await import('../src/process/spawn.ts');
  const env = cleanEnv(process.env, {});
  const once = () =>
    runProcess({ argv: ['/bin/sh', '-c', 'true'], cwd: tmpdir(), env, timeoutMs: 10_000, maxShownBytes: 50 * 1024, logDir: tmpdir() });
  for (let i = 0; i < 5; i++) await once(); // warm up
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const start = performance.now();
    const r = await once();
    times.push(performance.now() - start);
    if (r.exitCode !== 0) throw new Error(`true exited with ${r.exitCode}: ${r.output}`);
  }
  times.sort((a, b) => a - b);
  console.log(`bash \`true\` round trip via runProcess (unsandboxed): median ${times[25]!.toFixed(2)} ms, p90 ${times[45]!.toFixed(2)} ms (target ≤ 5 ms)`);
} catch (error) {
  console.log(`bash \`true\` round trip: not measured: ${(error as Error).message}`);
}
