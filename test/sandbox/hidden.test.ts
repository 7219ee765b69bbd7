// SandboxSettings.hidden: read-denied paths hidden from commands (real bwrap). A hidden file reads as
// empty, a hidden directory lists as empty; neither can be written, removed or renamed away, and the
// host copies stay as they were.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxRequestError } from '../../src/sandbox/index.ts';
import { canRun, fixture, sandboxed, snapshotAll, type Fixture } from './harness.ts';

let fx: Fixture;
beforeEach(() => {
  fx = fixture();
  mkdirSync(join(fx.ws, 'keys'));
  writeFileSync(join(fx.ws, 'keys', 'server.pem'), 'PRIVATE-KEY\n');
});
afterEach(() => fx.cleanup());

describe.skipIf(!canRun)('hidden paths', () => {
  test('a hidden file reads as empty and cannot be written, removed or renamed', async () => {
    const secret = join(fx.ws, 'secret.txt');
    writeFileSync(secret, 'TOKEN=1\n');
    const before = snapshotAll(fx);
    const result = await sandboxed(
      fx,
      'cat secret.txt; echo "[$(wc -c < secret.txt)]"; echo x > secret.txt || echo WRITE-REFUSED; ' +
        'rm -f secret.txt || echo RM-REFUSED; mv secret.txt moved || echo MV-REFUSED; cat secret.txt',
      { hidden: [secret] },
    );
    expect(result.stdout).toBe('[0]\nWRITE-REFUSED\nRM-REFUSED\nMV-REFUSED\n');
    expect(result.stdout).not.toContain('TOKEN');
    expect(snapshotAll(fx)).toBe(before);
  });

  test('a hidden directory lists as empty and stays empty', async () => {
    const before = snapshotAll(fx);
    const result = await sandboxed(
      fx,
      'ls -A keys; echo "[$(ls -A keys | wc -l)]"; cat keys/server.pem 2>/dev/null || echo NO-FILE; ' +
        'echo x > keys/new 2>/dev/null || echo CREATE-REFUSED; rm -rf keys 2>/dev/null; mv keys k2 2>/dev/null || echo MV-REFUSED; ls -A keys',
      { hidden: [join(fx.ws, 'keys')] },
    );
    expect(result.stdout).toBe('[0]\nNO-FILE\nCREATE-REFUSED\nMV-REFUSED\n');
    expect(snapshotAll(fx)).toBe(before);
  });

  test('the secret files the read tool refuses stay unreadable for bash too when passed as hidden', async () => {
    const result = await sandboxed(fx, 'cat keys/server.pem .env; echo "[$?]"', { hidden: [join(fx.ws, 'keys'), join(fx.ws, '.env')] });
    expect(result.stdout).not.toContain('PRIVATE-KEY');
    expect(result.stdout).not.toContain('SECRET=1');
    expect(readFileSync(join(fx.ws, '.env'), 'utf8')).toBe('SECRET=1\n');
  });

  test('a directory above a hidden path cannot be renamed away: the next command still sees it hidden', async () => {
    // mv ~/.docker ~/.d in one command, cat ~/.d/config.json in the next: the name hidden no longer held it.
    mkdirSync(join(fx.ws, 'dot', 'docker'), { recursive: true });
    writeFileSync(join(fx.ws, 'dot', 'docker', 'config.json'), 'DOCKER-TOKEN\n');
    const hidden = [join(fx.ws, 'dot', 'docker', 'config.json'), join(fx.ws, 'keys')];
    const moved = await sandboxed(fx, 'mv dot/docker dot/d2 2>/dev/null || echo REFUSED; mv dot moved 2>/dev/null || echo REFUSED', { hidden });
    expect(moved.stdout).toBe('REFUSED\nREFUSED\n');
    const read = await sandboxed(fx, 'cat moved/d2/config.json dot/d2/config.json dot/docker/config.json 2>/dev/null', { hidden });
    expect(read.stdout).not.toContain('DOCKER-TOKEN');
    expect(readFileSync(join(fx.ws, 'dot', 'docker', 'config.json'), 'utf8')).toBe('DOCKER-TOKEN\n');
    // Still writable: only the names stay where they are.
    expect((await sandboxed(fx, 'touch dot/new && echo MADE', { hidden })).stdout).toBe('MADE\n');
  });

  test('a protected path that is also hidden: empty, and still read-only', async () => {
    const result = await sandboxed(fx, 'cat .env; echo STOLEN=1 > .env || echo REFUSED', { hidden: [join(fx.ws, '.env')] });
    expect(result.stdout).toBe('REFUSED\n');
    expect(readFileSync(join(fx.ws, '.env'), 'utf8')).toBe('SECRET=1\n');
  });

  test('a protected path inside a hidden directory does not show through it', async () => {
    const result = await sandboxed(fx, 'cat keys/server.pem 2>/dev/null || echo NO-FILE', {
      hidden: [join(fx.ws, 'keys')],
      protectedGlobs: ['keys/server.pem'],
    });
    expect(result.stdout).toBe('NO-FILE\n');
  });

  test('a symlink is followed: what it points to is hidden', async () => {
    symlinkSync(join(fx.outside, 'file'), join(fx.ws, 'link'));
    const result = await sandboxed(fx, `cat link; cat ${fx.outside}/file; echo "[$?]"`, { hidden: [join(fx.ws, 'link')] });
    expect(result.stdout).toBe('[0]\n');
  });

  test('outside the workspace: a hidden directory shows empty', async () => {
    const result = await sandboxed(fx, `ls -A ${fx.outside}; cat ${fx.outside}/file 2>/dev/null || echo NO-FILE`, { hidden: [fx.outside] });
    expect(result.stdout).toBe('NO-FILE\n');
  });

  test('a hidden directory around the workspace hides the rest and leaves the workspace and temp dir usable', async () => {
    writeFileSync(join(fx.root, 'sibling'), 'SIBLING\n');
    const result = await sandboxed(
      fx,
      `cat ${fx.root}/sibling 2>/dev/null || echo NO-SIBLING; cat src/main.txt; echo w > src/new && cat src/new; ` +
        `echo t > /tmp/t && cat /tmp/t; echo evil > .git/config || echo GIT-PROTECTED`,
      { hidden: [fx.root] },
    );
    expect(result.stdout).toBe('NO-SIBLING\nhello\nw\nt\nGIT-PROTECTED\n');
    expect(readFileSync(join(fx.ws, 'src', 'new'), 'utf8')).toBe('w\n');
  });

  test('absent hidden paths are skipped and nothing is created for them', async () => {
    const result = await sandboxed(fx, 'echo ran', { hidden: [join(fx.ws, 'nope'), join(fx.ws, 'keys', 'nope.pem')] });
    expect(result.stdout).toBe('ran\n');
    expect(existsSync(join(fx.ws, 'nope'))).toBe(false);
    expect(existsSync(join(fx.ws, 'keys', 'nope.pem'))).toBe(false);
  });

  test('a relative hidden path, or the root directory, is a request error naming it', async () => {
    await expect(sandboxed(fx, 'true', { hidden: ['keys'] })).rejects.toThrow(SandboxRequestError);
    await expect(sandboxed(fx, 'true', { hidden: ['keys'] })).rejects.toThrow(/hidden path "keys" must be absolute/);
    await expect(sandboxed(fx, 'true', { hidden: ['/'] })).rejects.toThrow(/hidden path "\/" is the root directory/);
  });
});
