// The per-user lock the placeholder bookkeeping runs under: two processes never hold it at once
// (flock through bun:ffi), so read-modify-write under it loses no update.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
});
