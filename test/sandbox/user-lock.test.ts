// The per-user lock the placeholder bookkeeping runs under: two processes never hold it at once
// (flock through bun:ffi), so read-modify-write under it loses no update.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'conch-user-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(process.platform !== 'linux')('user lock', () => {
  test('two processes incrementing a counter under it lose no update', async () => {
    const counter = join(dir, 'counter');
    writeFileSync(counter, '0');
    const times = 150;
    const children = [0, 1].map(() =>
      Bun.spawn([process.execPath, join(import.meta.dir, 'user-lock-child.ts'), counter, String(times)], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: dir },
        stdout: 'pipe',
      }),
    );
    const outputs = await Promise.all(children.map((child) => new Response(child.stdout).text()));
    expect(await Promise.all(children.map((child) => child.exited))).toEqual([0, 0]);
    expect(outputs.map((out) => out.trim())).toEqual(['unlocked 0', 'unlocked 0']);
    expect(Number(readFileSync(counter, 'utf8'))).toBe(2 * times);
  }, 30_000);

  /** A child of this test with the shared state directory under `dir`. */
  const child = (args: string[]) =>
    Bun.spawn([process.execPath, join(import.meta.dir, 'user-lock-holder.ts'), ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: dir }, stdout: 'pipe', stderr: 'pipe' });

  async function holder() {
    const proc = child(['hold']);
    const reader = proc.stdout.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe('held\n');
    reader.releaseLock();
    return proc;
  }

  const output = async (proc: ReturnType<typeof child>) => {
    const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return JSON.parse(out);
  };
  const lockPath = () => join(dir, `conch-${process.getuid!()}`, 'placeholders.lock');

  test('held past its bound by a live process: the reason names the lock, the holder\'s pid and state, and that a retry is safe', async () => {
    const held = await holder();
    try {
      held.kill('SIGSTOP'); // as Ctrl-Z would
      const result = await output(child(['try']));
      expect(result.locked).toBe(false);
      expect(result.busy).toBe(true);
      expect(result.reason).toContain(lockPath());
      expect(result.reason).toContain(`process ${held.pid} (stopped`);
      expect(result.reason).toContain('safe to');
    } finally {
      held.kill('SIGKILL');
      await held.exited;
    }
  }, 30_000);

  test('a holder that was killed holds nothing: the next process takes the lock', async () => {
    const held = await holder();
    held.kill('SIGKILL');
    await held.exited;
    expect(await output(child(['try']))).toEqual({ locked: true, value: 'ran' });
  }, 30_000);

  test('a placeholder is not made without the lock: the command is refused, saying it is safe to retry', async () => {
    const ws = join(dir, 'ws');
    mkdirSync(ws);
    const held = await holder();
    try {
      const result = await output(child(['place', join(ws, '.git')]));
      expect(result.error).toContain(lockPath());
      expect(result.error).toContain(`process ${held.pid}`);
      expect(result.error).toContain('safe to');
      expect(existsSync(join(ws, '.git'))).toBe(false);
    } finally {
      held.kill('SIGKILL');
      await held.exited;
    }
    expect(await output(child(['place', join(ws, '.git')]))).toEqual({ held: [join(ws, '.git')] });
    expect(existsSync(join(ws, '.git'))).toBe(false);
  }, 30_000);
});
