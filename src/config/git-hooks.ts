// What git runs or obeys from outside .git, for the repository of the workspace and of each writable
// root, when it lies where the run can write. git runs hooks from .git/hooks (protected with .git)
// unless core.hooksPath names another folder, and husky and its kind set it to a tracked one
// (.husky/_, .githooks): a command could write a pre-commit hook there that the user's next
// `git commit` runs unsandboxed. Likewise a config file the repository's config includes
// (`include.path = ../.gitconfig`, shared settings kept in the tree): core.fsmonitor or an alias
// written there runs at the user's next git command. Those folders and files are protected like
// .git, in the workspace and in every --allow-write root (each root's own list: its globs are
// relative to it). Only git knows where they are (the repository's config, the user's, includes):
// it is asked, once per start, only where a repository may be.
import { closeSync, constants, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { canonical, isWithin } from '../core/paths.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import { START_MAX_DIRS, nestedRepositories } from '../workspace/nested-git.ts';
import type { MergedPolicy } from './layers.ts';

type Env = Record<string, string | undefined>;

async function git(cwd: string, env: Env, args: string[]): Promise<string | null> {
  const program = Bun.which('git', { PATH: env.PATH ?? '' });
  if (!program) return null;
  // rev-parse and config read configuration only: they run no hook, pager or fsmonitor.
  const child = Bun.spawn([program, '--no-pager', ...args], { cwd, env: { ...env, GIT_TERMINAL_PROMPT: '0' }, stdin: 'ignore', stdout: 'pipe', stderr: 'ignore' });
  const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  return code === 0 ? out : null;
}

/** Where git runs hooks from for `cwd` (absolute) and its work tree's top (null in a bare repository); null outside a repository or without git. */
async function repository(cwd: string, env: Env): Promise<{ hooks: string; top: string | null } | null> {
  if (!insideRepository(cwd)) return null;
  const both = (await git(cwd, env, ['rev-parse', '--git-path', 'hooks', '--show-toplevel']))?.split('\n');
  if (both?.[0] && both[1]) return { hooks: resolve(cwd, both[0]), top: both[1] };
  // A bare repository has no top: --show-toplevel fails, and with it the whole answer.
  const hooks = (await git(cwd, env, ['rev-parse', '--git-path', 'hooks']))?.replace(/\n$/, '');
  return hooks ? { hooks: resolve(cwd, hooks), top: null } : null;
}

/**
 * The files the configuration of the repository whose work tree's top is `top` includes
 * (include.path, includeIf.*.path), absolute, whether or not they exist yet. A relative one is taken
 * from the file that names it, as git does; git names the repository's own config relative to the
 * top, where it is asked from.
 */
async function gitIncludedFiles(top: string, env: Env): Promise<string[]> {
  const text = await git(top, env, ['config', '--show-origin', '-z', '--get-regexp', '^include(if\\..*)?\\.path$']);
  if (!text) return [];
  const home = env.HOME || homedir();
  const out: string[] = [];
  // -z: "file:ORIGIN\0KEY\nVALUE\0" for each entry.
  const fields = text.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i]!.startsWith('file:') ? fields[i]!.slice(5) : null;
    const value = fields[i + 1]!.split('\n').slice(1).join('\n');
    if (!value) continue;
    if (value === '~' || value.startsWith('~/')) out.push(join(home, value.slice(1)));
    else if (isAbsolute(value)) out.push(value);
    // From a blob or the command line there is no file to be relative to; git ignores those too.
    else if (origin) out.push(resolve(top, dirname(origin), value));
  }
  return out;
}

/**
 * The hooks git runs (githooks(5), git 2.39), by name. A hooks folder that is a tree's top (core.hooksPath
 * `.`) cannot be held whole without making the whole tree read-only: these names are held there instead.
 */
export const GIT_HOOK_NAMES = [
  'applypatch-msg', 'pre-applypatch', 'post-applypatch', 'pre-commit', 'pre-merge-commit', 'prepare-commit-msg',
  'commit-msg', 'post-commit', 'pre-rebase', 'post-checkout', 'post-merge', 'pre-push', 'pre-receive', 'update',
  'proc-receive', 'post-receive', 'post-update', 'reference-transaction', 'push-to-checkout', 'pre-auto-gc',
  'post-rewrite', 'sendemail-validate', 'fsmonitor-watchman', 'p4-changelist', 'p4-prepare-changelist',
  'p4-post-changelist', 'p4-pre-submit', 'post-index-change',
];

/**
 * One thing to hold: a folder (whole, or only the hooks git runs from it when it is a tree's top:
 * `hooks`; always only those when it is its repository's own top: `names`) or a file.
 */
interface Held {
  path: string;
  kind: 'hooks' | 'names' | 'dir' | 'file';
}

/** What to hold for one repository: its hooks folder (with husky's parent of `_`) and its included config files. */
async function heldPaths(cwd: string, env: Env): Promise<Held[]> {
  const repo = await repository(cwd, env);
  if (!repo) return [];
  // canonical() resolves what exists of it: a folder not made yet would still run the hooks written there.
  const dir = canonical(repo.hooks);
  // A nested repository's own top (core.hooksPath . there) is its work, not only hooks: held by name too.
  const held: Held[] = [{ path: dir, kind: repo.top !== null && canonical(repo.top) === dir ? 'names' : 'hooks' }];
  // husky 9 points git at .husky/_, whose stubs run the scripts beside it (.husky/pre-commit).
  if (basename(dir) === '_') held.push({ path: dirname(dir), kind: 'dir' });
  // A bare repository is all git dir, which commands and the file tools leave alone as a whole.
  if (repo.top) for (const file of await gitIncludedFiles(repo.top, env)) held.push({ path: canonical(file), kind: 'file' });
  return held;
}

/** The protected globs, relative to `tree`, that hold `item` when it lies in the tree (outside its .git); names escaped. */
function globsIn(tree: string, item: Held): string[] {
  if (!isWithin(item.path, tree) || isWithin(item.path, join(tree, '.git'))) return [];
  const names = item.kind === 'hooks' || item.kind === 'names';
  if (item.path === tree) return names ? GIT_HOOK_NAMES : [];
  const rel = escapeGlob(relative(tree, item.path));
  if (item.kind === 'names') return GIT_HOOK_NAMES.map((name) => `${rel}/${name}`);
  return item.kind === 'file' ? [rel] : [rel, `${rel}/**`];
}

/** .gitmodules bounds: far above any real one. Each submodule costs a git process at start. */
const GITMODULES_MAX_BYTES = 1024 * 1024;
const MAX_SUBMODULES = 64;

/**
 * Other repositories nested in the trees (`git init` in a folder, a clone), found by the bounded walk
 * of workspace/nested-git.ts (which skips node_modules): each costs git processes at start.
 */
const MAX_NESTED = 64;

/**
 * The submodules checked out in `tree` (absolute), from its .gitmodules: each is a repository of its
 * own, whose hooks folder (husky in a package) lies in the tree. Also found by the walk, unless in a
 * node_modules or past its bound.
 */
function submodules(tree: string): string[] {
  const text = readGitmodules(join(tree, '.gitmodules'));
  if (text === null) return [];
  const out: string[] = [];
  for (const match of text.matchAll(/^\s*path\s*=\s*(.+?)\s*$/gim)) {
    const path = resolve(tree, match[1]!.replace(/^"(.*)"$/, '$1'));
    if (isWithin(path, tree) && path !== tree && existsSync(join(path, '.git'))) out.push(path);
    if (out.length === MAX_SUBMODULES) break;
  }
  return out;
}

/**
 * The text of a .gitmodules that is a regular file of bounded size; null otherwise. Commands write
 * the tree: a FIFO left there would hang every start (open waits for a writer), a link to /dev/zero
 * would be read without end. git refuses to check out a .gitmodules that is a link.
 */
function readGitmodules(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return null; // none, a link, or not readable: no submodules to hold
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > GITMODULES_MAX_BYTES) return null;
    const text = readFileSync(fd, 'utf8');
    return text.length <= GITMODULES_MAX_BYTES ? text : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Protect the hooks folders and included config files of the workspace's repository and of each
 * writable root's (and of their submodules), in whichever of those trees they lie (outside its
 * .git, which is protected anyway). A tree's top itself is not held whole: that is a folder the user
 * chose to let the run write; when git takes its hooks from there, the hooks' names are held.
 */
export async function protectGitHooks(policy: MergedPolicy, cwd: string, env: Env): Promise<void> {
  const root = canonical(cwd);
  const roots = policy.workspace.writableRoots.map(canonical);
  const trees = [...new Set([root, ...roots])];
  // A read-only run writes none of them: the walk (a home run's can be long) is left out.
  const readOnly = policy.tools.readOnly && policy.sandbox.profile === 'read-only';
  const { repos: nested, partial } = readOnly ? { repos: [], partial: false } : nestedRepositories(trees);
  const unheld =
    nested.length > MAX_NESTED ? `${nested.length} repositories are nested in the workspace and writable roots, and only the first ${MAX_NESTED} are looked at`
    : partial ? `only the first ${START_MAX_DIRS} directories of the workspace and of each writable root are looked through for nested repositories`
    : null;
  if (unheld) {
    policy.warnings.push(
      `${unheld}: the hooks folders and included config files of the others are not protected. Start conch in a smaller folder, or review those repositories' hooks before committing there.`,
    );
  }
  const repos = [...trees.flatMap((tree) => [tree, ...submodules(tree)]), ...nested.slice(0, MAX_NESTED)];
  const held = (await inParallel([...new Set(repos)], (repo) => heldPaths(repo, env))).flat();
  for (const tree of [root, ...roots]) {
    const globs = held.flatMap((item) => globsIn(tree, item));
    if (globs.length === 0) continue;
    if (tree === root) {
      for (const list of [policy.workspace.protectedGlobs, policy.sandbox.protectedGlobs]) {
        for (const glob of globs) if (!list.includes(glob)) list.push(glob);
      }
      continue;
    }
    for (const settings of [policy.workspace, policy.sandbox]) {
      const byRoot = (settings.rootProtectedGlobs ??= {});
      const list = (byRoot[tree] ??= []);
      for (const glob of globs) if (!list.includes(glob)) list.push(glob);
    }
  }
}

/** Repositories asked at once: a start with many waits for a few git processes' time, not for each in turn. */
const GIT_AT_ONCE = 8;

async function inParallel<T, R>(items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(GIT_AT_ONCE, items.length) }, worker));
  return out;
}

/** A `.git` here or in a folder above: where git may find a repository. */
function insideRepository(cwd: string): boolean {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return true;
    if (dirname(dir) === dir) return false;
  }
}
