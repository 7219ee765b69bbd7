// The hooks folder of the workspace's repository, when it lies in the workspace. git runs hooks from
// .git/hooks (protected with .git) unless core.hooksPath names another folder, and husky and its
// kind set it to a tracked one (.husky/_, .githooks): a command could write a pre-commit hook there
// that the user's next `git commit` runs unsandboxed. That folder is protected like .git. Only git
// knows where its hooks are (the repository's config, the user's, includes): it is asked, once per
// start, only where a repository may be.
import { existsSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { canonical, isWithin } from '../core/paths.ts';
import type { MergedPolicy } from './layers.ts';

/** Where git runs hooks from for `cwd`, absolute; null outside a repository or without git. */
export function gitHooksDir(cwd: string, env: Record<string, string | undefined>): string | null {
  if (!insideRepository(cwd)) return null;
  const git = Bun.which('git', { PATH: env.PATH ?? '' });
  if (!git) return null;
  // rev-parse reads configuration only: it runs no hook, pager or fsmonitor.
  const answer = Bun.spawnSync([git, '--no-pager', 'rev-parse', '--git-path', 'hooks'], { cwd, env: { ...env, GIT_TERMINAL_PROMPT: '0' }, stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' });
  const path = answer.exitCode === 0 ? answer.stdout.toString().replace(/\n$/, '') : '';
  return path ? resolve(cwd, path) : null;
}

/** Protect the hooks folder when the run could write it: inside the workspace, outside its .git. */
export function protectGitHooks(policy: MergedPolicy, cwd: string, env: Record<string, string | undefined>): void {
  const hooks = gitHooksDir(cwd, env);
  if (!hooks) return;
  const root = canonical(cwd);
  // canonical() resolves what exists of it: a folder not made yet would still run the hooks written there.
  const dir = canonical(hooks);
  if (dir === root || !isWithin(dir, root) || isWithin(dir, join(root, '.git'))) return;
  // husky 9 points git at .husky/_, whose stubs run the scripts beside it (.husky/pre-commit).
  const held = basename(dir) === '_' && dirname(dir) !== root ? dirname(dir) : dir;
  const rel = relative(root, held);
  for (const globs of [policy.workspace.protectedGlobs, policy.sandbox.protectedGlobs]) {
    for (const glob of [rel, `${rel}/**`]) if (!globs.includes(glob)) globs.push(glob);
  }
}

/** A `.git` here or in a folder above: where git may find a repository. */
function insideRepository(cwd: string): boolean {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return true;
    if (dirname(dir) === dir) return false;
  }
}
