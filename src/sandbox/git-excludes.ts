// Placeholders (placeholders.ts) are empty files at protected names that do not exist yet, ten
// `.env` names among them. Inside a work tree every sandboxed `git status` listed them as untracked,
// on every run, and a model took them for the project's own files (and tried to remove or commit
// them). Commands get git's core.excludesFile, set by GIT_CONFIG_COUNT (which outranks every config
// file), pointed at a file in the run's temp dir that holds the user's own global excludes and then
// one anchored pattern per placeholder: git in the sandbox ignores exactly those paths, and all it
// ignored before. Nothing of the user's repository or config is written, so the user's own git,
// outside the sandbox, still lists them while a run holds them.
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { workTreeTop } from '../core/git-dir.ts';
import { isWithin } from '../core/paths.ts';

/** More than any real excludes file; a larger one is left out rather than read whole. */
const MAX_EXCLUDES_BYTES = 1024 * 1024;

/**
 * `base` with git's core.excludesFile aimed at the placeholders' excludes, or `base` itself when
 * there is nothing to exclude (no placeholder file, no work tree) or the file could not be made.
 * The same object for the same inputs, command after command (a held sandbox compares them).
 */
export function withPlaceholderExcludes(
  base: Readonly<Record<string, string>>,
  input: { workspace: string; tmpDir: string; placeholders: string[]; unseen: () => string[] },
): Readonly<Record<string, string>> {
  if (input.placeholders.length === 0) return base;
  const top = workTreeTop(input.workspace);
  if (top === null) return base;
  const patterns = input.placeholders
    .filter((path) => isWithin(path, top) && path !== top && !/[\n\r]/.test(path))
    .sort()
    .map((path) => `/${escapePattern(relative(top, path))}`);
  if (patterns.length === 0) return base;
  const text = `${userExcludes(input.unseen)}\n# conch: its sandbox's placeholders for protected names (empty, read-only)\n${patterns.join('\n')}\n`;
  const file = join(input.tmpDir, `conch-git-excludes-${Bun.hash(text).toString(16)}`);
  let byFile = made.get(base);
  if (!byFile) made.set(base, (byFile = new Map()));
  const known = byFile.get(file);
  if (known) return known;
  try {
    // wx: a file of that name that conch did not write this run (a command may have made one) is not used.
    writeFileSync(file, text, { flag: 'wx', mode: 0o444 });
  } catch {
    return base;
  }
  const env = Object.freeze({ ...base, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.excludesFile', GIT_CONFIG_VALUE_0: file });
  byFile.set(file, env);
  return env;
}

const made = new WeakMap<Readonly<Record<string, string>>, Map<string, Readonly<Record<string, string>>>>();

/** A path as a gitignore pattern that matches it alone: every character git treats specially escaped. */
export function escapePattern(path: string): string {
  return path.replace(/[\\*?[\]! #]/g, (c) => `\\${c}`);
}

let globalExcludes: string | undefined;

/**
 * What the user's own global excludes file says, as git in the sandbox would have read it (their
 * core.excludesFile, else ~/.config/git/ignore); empty when there is none, when it is too large, or
 * when it is no file a command could read itself. The path may lead through a folder commands write
 * (a dotfiles --allow-write root): a link there to conch's /proc/PID/environ (its API keys), to the
 * host's /tmp or a hidden path would copy that into the sandbox's /tmp, and a FIFO would hang conch.
 * `unseen`: the paths where a command sees something else than the host (hidden, /proc, /tmp…).
 * Read once per process.
 */
function userExcludes(unseen: () => string[]): string {
  if (globalExcludes !== undefined) return globalExcludes;
  globalExcludes = '';
  const home = process.env.HOME;
  if (!home) return globalExcludes;
  const path = configuredExcludes(home) ?? join(home, '.config', 'git', 'ignore');
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return globalExcludes;
  }
  const visible = (file: string) => !unseen().some((h) => isWithin(file, h));
  if (!visible(real)) return globalExcludes;
  globalExcludes = readBounded(real, visible);
  return globalExcludes;
}

/** core.excludesFile from the user's global git config (includes followed, `~` expanded); null when unset. */
function configuredExcludes(home: string): string | null {
  const git = Bun.which('git', { PATH: '/usr/local/bin:/usr/bin:/bin' });
  if (!git) return null;
  // `git config` reads configuration only: no hook, pager or fsmonitor runs.
  const answer = Bun.spawnSync([git, '--no-pager', 'config', '--global', '--includes', '--type=path', '--get', 'core.excludesFile'], {
    cwd: home,
    env: { HOME: home, PATH: '/usr/local/bin:/usr/bin:/bin', GIT_TERMINAL_PROMPT: '0' },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'ignore',
  });
  const value = answer.exitCode === 0 ? answer.stdout.toString().replace(/\n$/, '') : '';
  return value === '' ? null : value.startsWith('/') ? value : join(home, value);
}

function readBounded(path: string, visible: (file: string) => boolean): string {
  let fd: number;
  try {
    // Non-blocking: a FIFO would otherwise wait for a writer; no link followed at the last step.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return '';
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile() || info.size > MAX_EXCLUDES_BYTES) return '';
    // What was opened, not what the path named a moment before: a command may swap a folder on
    // the way for a link between the check and the open.
    if (!visible(realpathSync(`/proc/self/fd/${fd}`))) return '';
    const text = readFileSync(fd, 'utf8');
    return text.length <= MAX_EXCLUDES_BYTES ? text : '';
  } catch {
    return '';
  } finally {
    closeSync(fd);
  }
}
