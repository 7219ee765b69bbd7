// The per-workspace "latest session" entries -c goes by (sessions/latest.ts): kept out of the store,
// followed while valid, and rebuilt by a scan when missing, stale, corrupt or forged; whole under
// two writers at once and after a killed one.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { lstatSync, lutimesSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { LatestIndex } from '../../src/sessions/latest.ts';
import { narrowConfig, openRecording, planSession, policyFlags } from '../../src/sessions/open.ts';
import { latestIndexDir } from '../../src/sessions/dir.ts';
import type { Outcome } from '../../src/agent/outcome.ts';

let root: string;
let ws: string;
let other: string;
let dir: string;
let indexDir: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-slatest-')));
  ws = join(root, 'ws');
  other = join(root, 'other');
  dir = join(root, 'state', 'conch', 'sessions');
  indexDir = join(root, 'cache', 'conch', 'sessions');
  for (const d of [ws, other, join(root, 'home')]) mkdirSync(d, { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const done: Outcome = {
  status: 'completed', output: 'ok', stopReason: 'end_turn',
  usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null },
  counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 }, durationMs: 1,
};

async function oneRun(choice = {}, cwd = ws) {
  const plan = planSession(choice, cwd, dir, indexDir);
  const config = await loadConfig({ cwd, env: { HOME: join(root, 'home'), XDG_CONFIG_HOME: join(root, 'xdg'), XDG_STATE_HOME: join(root, 'state') }, flags: policyFlags(plan, {}) });
  const recording = openRecording(plan, config, narrowConfig(plan, config));
  const journal = recording.begin('run', { name: 'anthropic', model: 'm' });
  journal?.message({ role: 'user', content: [{ type: 'text', text: 'task' }] });
  recording.finish(done);
  recording.close();
  return recording.id!;
}

const latest = (cwd = ws) => planSession({ continue: true }, cwd, dir, indexDir).loaded!.header.id;
const entries = () => readdirSync(indexDir);
const index = () => new LatestIndex(indexDir, dir);
/** Make a session file look older than every other (the scan goes by mtime). */
const age = (id: string, minutes: number) => {
  const t = new Date(Date.now() - minutes * 60_000);
  utimesSync(join(dir, `${id}.jsonl`), t, t);
};

describe('the latest-session index', () => {
  test('lives in conch cache folder, outside the store, one entry per workspace', async () => {
    expect(latestIndexDir({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/u' })).toBe('/x/cache/conch/sessions');
    expect(latestIndexDir({ HOME: '/home/u' })).toBe('/home/u/.cache/conch/sessions');
    const a = await oneRun();
    const b = await oneRun({}, other);
    expect(readdirSync(dir).sort()).toEqual([`${a}.jsonl`, `${b}.jsonl`].sort());
    expect(entries()).toHaveLength(2);
    expect(index().read(ws)).toBe(a);
    expect(index().read(other)).toBe(b);
  });

  test('-c follows the entry while it names a session of this workspace, without a scan', async () => {
    const a = await oneRun();
    const b = await oneRun();
    expect(latest()).toBe(b);
    // A scan (by mtime) would now pick a; the entry still names b, and b is valid.
    age(b, 10);
    expect(latest()).toBe(b);
  });

  test('every run names its session the latest: after --resume of an older one, -c continues that one', async () => {
    const a = await oneRun();
    const b = await oneRun();
    expect(latest()).toBe(b);
    await oneRun({ resume: a });
    expect(latest()).toBe(a);
    await oneRun({ resume: b, fork: true });
    const forked = index().read(ws)!;
    expect([a, b]).not.toContain(forked);
    expect(latest()).toBe(forked);
  });

  test('an entry naming a removed session (pruned, rm, or a run killed before its file was made) is rebuilt by a scan', async () => {
    const a = await oneRun();
    const b = await oneRun();
    age(a, 10);
    unlinkSync(join(dir, `${b}.jsonl`));
    expect(latest()).toBe(a);
    expect(index().read(ws)).toBe(a);
    // A run killed between naming its new session and making its file leaves just this.
    index().write(ws, '0123456789abcdef');
    expect(latest()).toBe(a);
    expect(index().read(ws)).toBe(a);
  });

  test('a workspace whose last session is gone: -c says so, and its entry goes', async () => {
    const a = await oneRun();
    unlinkSync(join(dir, `${a}.jsonl`));
    expect(() => planSession({ continue: true }, ws, dir, indexDir)).toThrow('no earlier session in');
    expect(entries()).toEqual([]);
  });

  test('a malformed, foreign-version or forged entry, or anything but a link there, is ignored and rewritten', async () => {
    const a = await oneRun();
    const b = await oneRun({}, other);
    const [entry] = entries().filter((name) => readlinkSync(join(indexDir, name)) === `v1:${a}`);
    const path = join(indexDir, entry!);
    const bad: (() => void)[] = [
      ...['not an entry', `v1:${a.slice(0, 10)}`, `v2:${a}`, `v1:../../../etc/passwd`, `v1:${a}x`].map((text) => () => symlinkSync(text, path)),
      // Names a real session, of another workspace: refused (it is checked against the file's header).
      () => symlinkSync(`v1:${b}`, path),
      // A regular file or a FIFO in its place: not read (readlink refuses them), so nothing can hang.
      () => writeFileSync(path, `v1:${a}`),
      () => Bun.spawnSync(['mkfifo', path]),
      () => mkdirSync(path),
    ];
    for (const make of bad) {
      rmSync(path, { recursive: true, force: true });
      make();
      expect(latest()).toBe(a);
      if (!lstatSync(path).isDirectory()) expect(readlinkSync(path)).toBe(`v1:${a}`);
    }
  });

  test('two writers at once: every read sees a whole entry of one of them, and no temporary file stays', async () => {
    const a = await oneRun();
    const b = await oneRun();
    const writer = (id: string) =>
      Bun.spawn([process.execPath, '-e', `
        const { LatestIndex } = await import(${JSON.stringify(join(import.meta.dir, '../../src/sessions/latest.ts'))});
        const index = new LatestIndex(${JSON.stringify(indexDir)}, ${JSON.stringify(dir)});
        for (let i = 0; i < 300; i++) index.write(${JSON.stringify(ws)}, ${JSON.stringify(id)});
      `], { stdout: 'ignore', stderr: 'inherit' });
    const writers = [writer(a), writer(b)];
    const seen = new Set<string | null>();
    let running = true;
    const done = Promise.all(writers.map((w) => w.exited)).then((codes) => {
      running = false;
      return codes;
    });
    while (running) {
      seen.add(index().read(ws));
      await Bun.sleep(1);
    }
    expect(await done).toEqual([0, 0]);
    for (const id of seen) expect([a, b]).toContain(id!);
    expect([a, b]).toContain(latest());
    expect(entries()).toHaveLength(1);
  });

  test('a temporary file a killed writer left is removed once old, by the next scan', async () => {
    const a = await oneRun();
    const orphan = join(indexDir, '.tmp-0123456789ab');
    const fresh = join(indexDir, '.tmp-ba9876543210');
    symlinkSync(`v1:${a}`, orphan);
    symlinkSync(`v1:${a}`, fresh);
    const hourAgo = new Date(Date.now() - 3_600_000);
    lutimesSync(orphan, hourAgo, hourAgo);
    unlinkSync(join(indexDir, entries().find((n) => !n.startsWith('.'))!));
    expect(latest()).toBe(a);
    expect(() => lstatSync(orphan)).toThrow();
    expect(lstatSync(fresh).isSymbolicLink()).toBe(true);
  });

  test('an index folder that cannot be written costs nothing but the scan', async () => {
    mkdirSync(join(root, 'cache', 'conch'), { recursive: true });
    writeFileSync(indexDir, 'a file where the folder should be');
    const a = await oneRun();
    expect(latest()).toBe(a);
  });
});
