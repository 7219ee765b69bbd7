import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalog } from '../../src/tools/catalog.ts';
import type { Tool, ToolContext } from '../../src/tools/define.ts';
import type { ToolResult } from '../../src/core/content.ts';
import { loadPlugins } from '../../src/plugins/load.ts';
import { probeSandbox } from '../../src/sandbox/index.ts';
import { OutputBuffer } from '../../plugins/jobs/buffer.ts';
import { makeContext } from '../support/plugin-context.ts';

let root: string;
let work: string;
let tools: Map<string, Tool>;
let catalog: Catalog;
const runs: AbortController[] = [];

const sandbox = await probeSandbox();
if (!sandbox.ok) console.warn(`SKIPPING the sandboxed jobs test: the sandbox cannot run here: ${sandbox.detail}`);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'conch-jobs-'));
  work = join(root, 'work');
  await mkdir(work);
  const loaded = await loadPlugins({
    configDir: join(root, 'config'),
    cwd: work,
    settings: { enabled: true, dirs: [], firstParty: ['jobs'], projectTools: false, allowOverride: [] },
    reserved: new Map(),
    cacheDir: join(root, 'cache'),
  });
  expect(loaded.reports).toMatchObject([{ status: 'loaded', tools: ['job_start', 'job_check', 'job_stop'] }]);
  tools = new Map(loaded.tools.map((t) => [t.name, t]));
  catalog = new Catalog();
  for (const tool of loaded.tools) catalog.register(tool);
});
afterAll(async () => {
  for (const run of runs) run.abort();
  await rm(root, { recursive: true, force: true });
});

/** A run: its own runSignal, and a fresh call signal per call (each ends when the call returns). */
async function newRun(options: { sandbox?: boolean } = {}): Promise<{ call: (name: string, args: Record<string, unknown>) => Promise<{ text: string; isError: boolean }>; end: () => void }> {
  const run = new AbortController();
  runs.push(run);
  return {
    end: () => run.abort(),
    async call(name, args) {
      const checked = catalog.validate(name, JSON.stringify(args));
      if (!checked.ok) return { text: checked.message, isError: true };
      const callController = new AbortController();
      const ctx: ToolContext = await makeContext(work, { signal: callController.signal, runSignal: run.signal, sandbox: options.sandbox });
      try {
        const result = (await tools.get(name)!.execute(checked.args, ctx)) as ToolResult;
        return { text: result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), isError: result.isError === true };
      } finally {
        callController.abort(); // the call is over; its jobs must not care
      }
    },
  };
}

const idOf = (text: string) => /started job (j\d+)/.exec(text)![1]!;

/** Running or stopped, not a zombie: a killed child waits for its reaper, which may be slow in containers. */
async function alive(pidFile: string): Promise<boolean> {
  const pid = Number((await readFile(pidFile, 'utf8')).trim());
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat === null ? true : !/^\d+ \(.*\) Z/.test(stat);
}

async function until(check: () => Promise<boolean> | boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await Bun.sleep(25);
  }
  return false;
}

describe('jobs plugin', () => {
  test('a job outlives the call that started it; job_check waits for and pages its output', async () => {
    const { call } = await newRun();
    const started = await call('job_start', { command: 'echo one; sleep 0.4; echo two' });
    expect(started.isError).toBe(false);
    const id = idOf(started.text);
    expect(started.text).toContain(`job ${id}: running`);

    // Each check without an offset continues where the last stopped and waits for news or the end.
    // job_start already showed what came out in its first moment.
    let seen = started.text.split('\n').slice(3).join('\n');
    for (let i = 0; i < 10; i++) {
      const check = await call('job_check', { id, wait_seconds: 5 });
      seen += check.text.split('\n').slice(2).join('\n');
      if (check.text.includes('exited')) break;
    }
    expect(seen).toBe('one\ntwo\n');
    expect((await call('job_check', { id, offset: 0 })).text).toBe(`job ${id}: exited with code 0\noutput chars 0-8 of 8\none\ntwo\n`);
    expect((await call('job_check', { id, offset: 4, limit: 2 })).text).toBe(`job ${id}: exited with code 0\noutput chars 4-6 of 8; next_offset: 6\ntw`);
    // Without an offset, job_check continues where the previous one stopped.
    expect((await call('job_check', { id })).text).toBe(`job ${id}: exited with code 0\noutput chars 6-8 of 8\no\n`);
    expect((await call('job_check', { id })).text).toBe(`job ${id}: exited with code 0\noutput chars 8-8 of 8`);
  });

  test('a failing command reports its exit code; an unknown id lists the known ones', async () => {
    const { call } = await newRun();
    const id = idOf((await call('job_start', { command: 'echo bad >&2; exit 3' })).text);
    expect(await until(async () => !(await call('job_check', { id, wait_seconds: 1 })).text.includes('running'))).toBe(true);
    expect((await call('job_check', { id, offset: 0 })).text).toBe(`job ${id}: exited with code 3\noutput chars 0-4 of 4\nbad\n`);
    const unknown = await call('job_check', { id: 'j99' });
    expect(unknown).toEqual({ text: `no job 'j99' in this run (jobs end with the run that started them; in an editor, with that prompt); known jobs: ${id}`, isError: true });
  });

  test('job_stop kills the whole process group', async () => {
    const { call } = await newRun();
    const pidFile = join(work, `stop-${Date.now()}.pid`);
    const id = idOf((await call('job_start', { command: `sleep 30 & echo $! > ${pidFile}; while true; do echo tick; sleep 0.05; done` })).text);
    expect(await until(() => existsSync(pidFile))).toBe(true);
    expect(await alive(pidFile)).toBe(true);
    const stopped = await call('job_stop', { id });
    expect(stopped.isError).toBe(false);
    expect(stopped.text).toStartWith(`job ${id}: stopped\n`);
    expect(stopped.text).toContain('tick');
    expect(await until(async () => !(await alive(pidFile)))).toBe(true);
    expect((await call('job_stop', { id })).text).toStartWith(`job ${id}: stopped`);
  });

  test('the end of a run stops its jobs and only its jobs; ids are per run', async () => {
    const a = await newRun();
    const b = await newRun();
    const pidA = join(work, `a-${Date.now()}.pid`);
    const pidB = join(work, `b-${Date.now()}.pid`);
    const idA = idOf((await a.call('job_start', { command: `sleep 30 & echo $! > ${pidA}; wait` })).text);
    const idB = idOf((await b.call('job_start', { command: `sleep 30 & echo $! > ${pidB}; wait` })).text);
    expect(idA).toBe('j1');
    expect(idB).toBe('j1');
    expect(await until(() => existsSync(pidA) && existsSync(pidB))).toBe(true);

    a.end();
    expect(await until(async () => !(await alive(pidA)))).toBe(true);
    expect(await alive(pidB)).toBe(true);
    expect((await b.call('job_check', { id: idB })).text).toContain('running');
    expect((await b.call('job_stop', { id: idB })).text).toStartWith(`job ${idB}: stopped`);
  });

  test('the output buffer keeps the newest characters and says what was dropped', () => {
    const buffer = new OutputBuffer(10);
    buffer.append('0123456789');
    buffer.append('abcde');
    expect(buffer.total).toBe(15);
    expect(buffer.read(0, 100)).toEqual({ text: '56789abcde', from: 5, next: 15, skipped: 5 });
    expect(buffer.read(12, 2)).toEqual({ text: 'cd', from: 12, next: 14, skipped: 0 });
    expect(buffer.read(99, 2)).toEqual({ text: '', from: 15, next: 15, skipped: 0 });
  });

  test.skipIf(!sandbox.ok)('jobs run inside the sandbox: a write outside the workspace never reaches the host', async () => {
    const { call } = await newRun({ sandbox: true });
    const outside = join(root, `outside-${Date.now()}.txt`);
    const inside = join(work, `inside-${Date.now()}.txt`);
    const id = idOf((await call('job_start', { command: `echo ok > ${inside}; echo x > ${outside}` })).text);
    expect(await until(async () => !(await call('job_check', { id, wait_seconds: 1 })).text.includes('running'))).toBe(true);
    // Whether the write fails or lands in the sandbox's private /tmp, the host never sees it.
    expect(existsSync(inside)).toBe(true);
    expect(existsSync(outside)).toBe(false);
  });
});
