// The mount layout and bwrap's options are kept from one command to the next (command-template.ts),
// and what they depend on is read again for each command (real bwrap). A hidden path or a path made
// visible read-only that appears, goes or changes between two commands is what the second command
// sees; a kept layout would show the first command's world.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyFile } from '../../src/sandbox/hidden.ts';
import { canRun, fixture, sandboxed, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
});
afterEach(() => fx.cleanup());

describe.skipIf(!canRun)('a layout kept between commands', () => {
  test('a hidden file made after the first command is hidden from the second', async () => {
    const late = join(fx.ws, 'late.txt');
    expect((await sandboxed(fx, 'cat late.txt 2>/dev/null || echo ABSENT', { hidden: [late] })).stdout).toBe('ABSENT\n');
    writeFileSync(late, 'TOKEN=1\n');
    const second = await sandboxed(fx, 'cat late.txt; echo "[$?]"', { hidden: [late] });
    expect(second.stdout).toBe('[0]\n');
  });

  test('a hidden directory removed after the first command is not made again by the second', async () => {
    const keys = join(fx.ws, 'keys');
    mkdirSync(keys);
    writeFileSync(join(keys, 'a.pem'), 'KEY\n');
    expect((await sandboxed(fx, 'ls -A keys; echo "[$?]"', { hidden: [keys] })).stdout).toBe('[0]\n');
    rmSync(keys, { recursive: true });
    const second = await sandboxed(fx, 'ls -A keys 2>/dev/null || echo GONE', { hidden: [keys] });
    expect(second).toMatchObject({ code: 0, stdout: 'GONE\n' });
    expect(existsSync(keys)).toBe(false);
  });

  test('a hidden file turned into a directory is hidden as a directory', async () => {
    const secret = join(fx.ws, 'secret');
    writeFileSync(secret, 'TOKEN=1\n');
    expect((await sandboxed(fx, 'cat secret; echo "[$?]"', { hidden: [secret] })).stdout).toBe('[0]\n');
    unlinkSync(secret);
    mkdirSync(secret);
    writeFileSync(join(secret, 'inner'), 'TOKEN=2\n');
    const second = await sandboxed(fx, 'ls -A secret; cat secret/inner 2>/dev/null || echo NO-FILE', { hidden: [secret] });
    expect(second.stdout).toBe('NO-FILE\n');
  });

  test('a hidden file replaced by a link between commands: what the link points to is hidden', async () => {
    const secret = join(fx.ws, 'secret');
    writeFileSync(secret, 'TOKEN=1\n');
    writeFileSync(join(fx.ws, 'other'), 'TOKEN=2\n');
    expect((await sandboxed(fx, 'cat secret; echo "[$?]"', { hidden: [secret] })).stdout).toBe('[0]\n');
    unlinkSync(secret);
    symlinkSync(join(fx.ws, 'other'), secret);
    const second = await sandboxed(fx, 'cat secret other; echo "[$?]"', { hidden: [secret] });
    expect(second.stdout).toBe('[0]\n');
  });

  test('the empty file bound over hidden files is made again when it is removed between commands', async () => {
    const secret = join(fx.ws, 'secret.txt');
    writeFileSync(secret, 'TOKEN=1\n');
    expect((await sandboxed(fx, 'cat secret.txt; echo "[$?]"', { hidden: [secret] })).stdout).toBe('[0]\n');
    unlinkSync(emptyFile());
    const second = await sandboxed(fx, 'cat secret.txt; echo "[$?]"', { hidden: [secret] });
    expect(second).toMatchObject({ code: 0, stdout: '[0]\n' });
  });

  test('a read-only path that appears after the first command is visible to the second', async () => {
    const checkout = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sbx-late-')));
    try {
      const script = join(checkout, 'bin', 'server.js');
      const first = await sandboxed(fx, `cat ${script} 2>/dev/null || echo MISSING`, { readOnlyPaths: [script] });
      expect(first.stdout).toBe('MISSING\n');
      mkdirSync(join(checkout, 'bin'));
      writeFileSync(script, 'SCRIPT\n');
      const second = await sandboxed(fx, `cat ${script}; echo x > ${script} 2>/dev/null || echo WRITE-REFUSED`, { readOnlyPaths: [script] });
      expect(second.stdout).toBe('SCRIPT\nWRITE-REFUSED\n');
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
