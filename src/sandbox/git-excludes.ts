// Placeholders (placeholders.ts) are empty files at protected names that do not exist yet, ten
// `.env` names among them. Inside a work tree every sandboxed `git status` listed them as untracked,
// on every run, and a model took them for the project's own files (and tried to remove or commit
// them). Commands get git's core.excludesFile, set by GIT_CONFIG_COUNT (which outranks every config
// file), pointed at a file in the run's temp dir that holds the user's own global excludes and then
// one anchored pattern per placeholder: git in the sandbox ignores exactly those paths, and all it
// ignored before. Nothing of the user's repository or config is written, so the user's own git,
// outside the sandbox, still lists them while a run holds them.
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
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
  input: { workspace: string; tmpDir: string; placeholders: string[]; visible: (file: string) => boolean },
): Readonly<Record<string, string>> {
  if (input.placeholders.length === 0) return base;
  const top = workTreeTop(input.workspace);
  if (top === null) return base;
  const patterns = input.placeholders
    .filter((path) => isWithin(path, top) && path !== top && !/[\n\r]/.test(path))
    .sort()
    .map((path) => `/${escapePattern(relative(top, path))}`);
  if (patterns.length === 0) return base;
  const text = `${userExcludes(top, input.visible)}\n# conch: its sandbox's placeholders for protected names (empty, read-only)\n${patterns.join('\n')}\n`;
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

/** What the user's excludes say, by work tree top (a relative core.excludesFile is taken from there). */
const excludesByTop = new Map<string, string>();

/**
 * What the user's own global excludes file says, as their git reads it for the work tree at `top`
 * (their core.excludesFile, else $XDG_CONFIG_HOME/git/ignore or ~/.config/git/ignore); empty when
 * there is none, when it is too large, or when it is no file a command could read itself. The path
 * may lead through a folder commands write (a dotfiles --allow-write root, the work tree itself): a
 * link there to conch's /proc/PID/environ (its API keys), to the host's /tmp or a hidden path would
 * copy that into the sandbox's /tmp, and a FIFO would hang conch. `visible`: whether a command sees
 * a host file as it is (not hidden, not under /proc or the run's /tmp…). Read once per process and top.
 */
function userExcludes(top: string, visible: (file: string) => boolean): string {
  const known = excludesByTop.get(top);
  if (known !== undefined) return known;
  const text = readUserExcludes(top, visible);
  excludesByTop.set(top, text);
  return text;
}

function readUserExcludes(top: string, visible: (file: string) => boolean): string {
  const home = process.env.HOME;
  if (!home) return '';
  const configured = configuredExcludes(home, top);
  // git opens a relative one from where it works: the work tree's top, wherever it was started.
  const path = configured === null ? defaultExcludes(home) : isAbsolute(configured) ? configured : join(top, configured);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return '';
  }
  return visible(real) ? readBounded(real, visible) : '';
}

/** git's default excludes file: $XDG_CONFIG_HOME/git/ignore, or ~/.config/git/ignore when that is unset or empty. */
function defaultExcludes(home: string): string {
  const xdg = process.env.XDG_CONFIG_HOME;
  return xdg ? join(xdg, 'git', 'ignore') : join(home, '.config', 'git', 'ignore');
}

/**
 * core.excludesFile from the user's global git config (includes followed, `~` expanded), as given:
 * null when unset. Global as git takes it: GIT_CONFIG_GLOBAL, else $XDG_CONFIG_HOME/git/config
 * (~/.config/git/config) and ~/.gitconfig; asked from the work tree, where an includeIf.gitdir
 * of it applies.
 */
function configuredExcludes(home: string, top: string): string | null {
  const git = Bun.which('git', { PATH: '/usr/local/bin:/usr/bin:/bin' });
  if (!git) return null;
  const env: Record<string, string> = { HOME: home, PATH: '/usr/local/bin:/usr/bin:/bin', GIT_TERMINAL_PROMPT: '0' };
  for (const name of ['XDG_CONFIG_HOME', 'GIT_CONFIG_GLOBAL'] as const) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  // `git config` reads configuration only: no hook, pager or fsmonitor runs.
  const answer = Bun.spawnSync([git, '--no-pager', 'config', '--global', '--includes', '--type=path', '--get', 'core.excludesFile'], {
    cwd: top,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'ignore',
  });
  const value = answer.exitCode === 0 ? answer.stdout.toString().replace(/\n$/, '') : '';
  return value === '' ? null : value;
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
