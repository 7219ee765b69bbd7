// A run reuses its protected plan while the workspace root is unchanged (src/sandbox/plan-memo.ts).
// What must never happen: a protection that a fresh plan would give missing from a command because
// an old plan was reused. Each test lets the plan settle (its stamp is kept only once the root's
// times are safely in the past), changes the workspace on the host as a user would, and checks the
// very next command.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bashExecutor, canRun, useFixtureScope } from './harness.ts';

const current = useFixtureScope();

const runExecutor = (protectedGlobs: string[] = []) => bashExecutor(current.fx, current.scope, protectedGlobs);

/** Commands until the plan is kept: the root's times must be older than the racy window. */
async function settle(run: (command: string) => Promise<unknown>) {
  await run('true');
  await Bun.sleep(250);
  await run('true');
  await run('true');
}

describe.skipIf(!canRun || process.platform !== 'linux')('the protected plan of a run', () => {
  test('a protected name the user creates between two commands is read-only in the next one', async () => {
    const run = await runExecutor();
    await settle(run);
    writeFileSync(join(current.fx.ws, '.env.preview'), 'KEY=1\n');
    const result = await run('echo changed > .env.preview; rm -f .env.preview; cat .env.preview');
    expect(result.output).toContain('KEY=1');
    expect(readFileSync(join(current.fx.ws, '.env.preview'), 'utf8')).toBe('KEY=1\n');
  });

  test('a .git that stops being a repository (an empty .git/HEAD) gets HEAD masked in the next command', async () => {
    const run = await runExecutor();
    await settle(run);
    // .git/HEAD is written in place: the workspace root itself does not change.
    writeFileSync(join(current.fx.ws, '.git', 'HEAD'), '');
    await run('echo "ref: refs/heads/x" > HEAD');
    expect(existsSync(join(current.fx.ws, 'HEAD')) ? readFileSync(join(current.fx.ws, 'HEAD'), 'utf8') : '').toBe('');
  });

  test('a root that becomes a git dir (its .git stops being a repository, HEAD, objects and refs beside it) is read-only in the next command', async () => {
    const { mkdirSync } = await import('node:fs');
    const ws = current.fx.ws;
    for (const dir of ['objects', 'refs', '.git/objects', '.git/refs']) mkdirSync(join(ws, dir));
    writeFileSync(join(ws, 'HEAD'), 'ref: refs/heads/main\n');
    const run = await runExecutor();
    await settle(run);
    expect((await run('echo "[core]" > config')).exitCode).toBe(0);
    writeFileSync(join(ws, '.git', 'HEAD'), '');
    const result = await run('echo "[core] fsmonitor = touch x" > config');
    expect(result.exitCode).not.toBe(0);
    expect(readFileSync(join(ws, 'config'), 'utf8')).toBe('[core]\n');
  });

  test('a protected path the user removes and makes again as a symbolic link is refused, as it would be fresh', async () => {
    const run = await runExecutor();
    await settle(run);
    rmSync(join(current.fx.ws, '.env'));
    const { symlinkSync } = await import('node:fs');
    symlinkSync(current.fx.outside, join(current.fx.ws, '.env'));
    const result = await run('true');
    expect(result.exitCode).toBeNull();
    expect(result.output).toContain('protected path ".env" is a symbolic link');
  });

  test('a nested protected folder (a home run\'s .config/systemd) replaced by a link inside its parent is refused, the root unchanged', async () => {
    const { mkdirSync, renameSync, statSync, symlinkSync } = await import('node:fs');
    mkdirSync(join(current.fx.ws, '.config', 'systemd'), { recursive: true });
    const run = await runExecutor(['.config/systemd/**']);
    await settle(run);
    const root = statSync(current.fx.ws);
    renameSync(join(current.fx.ws, '.config', 'systemd'), join(current.fx.ws, '.config', 'systemd-old'));
    symlinkSync(current.fx.outside, join(current.fx.ws, '.config', 'systemd'));
    expect(statSync(current.fx.ws).mtimeMs).toBe(root.mtimeMs);
    const result = await run('true');
    expect(result.exitCode).toBeNull();
    expect(result.output).toContain('protected path ".config/systemd" is a symbolic link');
  });
});
