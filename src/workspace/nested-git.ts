// Nested repositories made or changed by sandboxed commands. `git init sub` (or `mkdir -p sub/.git`)
// inside the workspace gives the user a repository whose config and hooks their own git obeys,
// unsandboxed, as soon as a git-aware prompt or editor looks at it: core.fsmonitor runs a command
// on `git status`, a post-index-change hook runs when status refreshes the index. A mount cannot hold
// `.git` at every depth, so the run's roots are walked instead: once before the run's first command
// (what the user already had), and once after the run. A git dir that is new or changed since, and
// holds anything a plain `git init` or clone does not write (a config key off the list below, a hook
// that is not a `.sample`, a `commondir`, a `.git` file), is neutralised: that part is renamed to
// NAME.conch-disabled and the user is told, with the path. The user's own repositories, as they
// were before the run, are never touched. A root that is a git dir itself (a bare repository as the
// workspace) is read-only for commands; one that became one during the run is checked the same way.
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, renameSync, existsSync, type Dirent } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { isWithin } from '../core/paths.ts';
import { isGitDir, rootIsGitDir } from '../core/git-dir.ts';

/** Config keys a plain init, clone or `git remote add` writes: nothing here runs a program. */
const SAFE_KEYS = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)$/,
  /^remote\.[^\n]*\.(url|fetch|pushurl)$/,
  /^branch\.[^\n]*\.(remote|merge)$/,
  /^user\.(name|email)$/,
  /^extensions\.objectformat$/,
];
/** A config larger than this is no plain one (git init writes ~100 bytes): disabled unread. */
const CONFIG_MAX_BYTES = 1024 * 1024;
/** Directories walked at most per root: past it the check says what it could not cover. */
const MAX_DIRS = 100_000;
const SUFFIX = '.conch-disabled';
/** Not walked: a nested repository there runs only in a shell that is inside it. */
const SKIPPED = 'node_modules';

interface Found {
  /** The git dir (a `.git` directory, a bare repository), or the `.git` file. */
  path: string;
  kind: 'dir' | 'file';
  stamp: string;
}

export interface NestedGitGuard {
  /** Record what exists now (before the run's first command); later calls do nothing until check(). */
  baseline(): void;
  /** After the run: neutralise what commands made dangerous; one line per thing done, for the user. */
  check(): string[];
  /**
   * Once MCP servers have stopped: check again against the last run's baseline. A server allowed
   * to write the workspace runs on after a run's check, and could write again what it neutralised.
   */
  again(): string[];
}

/**
 * `linked`: other folders commands write that are not walked (the sandbox's toolchain cache, kept
 * across runs): a repository there is checked when a link in the roots leads into it, since a
 * prompt that enters the link runs git in the repository (`ln -s <cache>/evil docs`).
 */
export function nestedGitGuard(roots: string[], linked: string[] = []): NestedGitGuard {
  let before: Map<string, string> | null = null;
  let last: Map<string, string> | null = null;
  const compare = (baseline: Map<string, string>): string[] => {
    const { found, notes } = scan(roots, bases());
    const lines = [...notes];
    for (const item of found) {
      if (baseline.get(item.path) === item.stamp) continue;
      lines.push(...neutralise(item, roots));
    }
    return lines;
  };
  // Looked up at each scan: the cache is made by the first command.
  const bases = () =>
    linked.flatMap((dir) => {
      try {
        return [realpathSync(dir)];
      } catch {
        return []; // not made yet: nothing there to link to
      }
    });
  return {
    baseline() {
      before ??= new Map(scan(roots, bases()).found.map((f) => [f.path, f.stamp]));
    },
    check() {
      if (!before) return [];
      const lines = compare(before);
      last = before;
      before = null;
      return lines;
    },
    again() {
      return last && !before ? compare(last) : [];
    },
  };
}

/**
 * Directories the start's walk looks through per root (about 0.1 s here): it runs at every start,
 * where the check's runs only around a run that ran a command.
 */
export const START_MAX_DIRS = 20_000;

/**
 * The repositories nested in `roots` as they are now (a `.git` below a root's top, a bare
 * repository), by the folder git is asked from: the check's walk, with a bound of its own
 * (`partial` when a root has more directories). For config/: their hooks folders and included
 * files may lie in the tree, and git obeys them at the user's next commit there.
 */
export function nestedRepositories(roots: string[]): { repos: string[]; partial: boolean } {
  const { found, notes } = scan(roots, [], { stamped: false, maxDirs: START_MAX_DIRS });
  return { repos: found.map((f) => (f.path.endsWith('/.git') ? dirname(f.path) : f.path)), partial: notes.length > 0 };
}

function scan(roots: string[], linked: string[], { stamped = true, maxDirs = MAX_DIRS } = {}): { found: Found[]; notes: string[] } {
  const found: Found[] = [];
  const seen = new Set<string>();
  const notes: string[] = [];
  for (const root of roots) {
    // Breadth first: past the bound, what is left unwalked is the deepest, where repositories are fewest.
    const queue = [root];
    for (let next = 0; next < queue.length; next++) {
      const dir = queue[next]!;
      if (next >= maxDirs) {
        notes.push(`nested repositories under ${root} were checked in its first ${maxDirs} directories only; review any a command made below them before using git there.`);
        break;
      }
      const entries = list(dir);
      const names = new Set(entries.map((e) => e.name));
      // A bare repository: git takes the directory itself for a git dir.
      if (dir !== root && isGitDir(names)) {
        found.push({ path: dir, kind: 'dir', stamp: stamped ? stampOf(dir) : '' });
        continue;
      }
      // A root that is one is read-only for commands while it is (sandbox/protected-paths.ts), but one
      // that became one during the run was not yet: checked like a nested one, and still walked.
      if (stamped && dir === root && rootIsGitDir(root)) found.push({ path: root, kind: 'dir', stamp: stampOf(root) });
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.name === '.git') {
          // The roots' own .git is read-only for commands (sandbox-profiles/protected.json).
          if (dir === root) continue;
          // A file or a link: either names a git dir elsewhere, where nothing is checked.
          if (entry.isDirectory()) found.push({ path, kind: 'dir', stamp: stamped ? stampOf(path) : '' });
          else found.push({ path, kind: 'file', stamp: stamped ? fileStamp(path) : '' });
          continue;
        }
        // node_modules is left out (editors' git integration skips it too): a JavaScript project's
        // holds tens of thousands of directories, a walk of a second before and after every run.
        if (entry.isDirectory() && entry.name !== SKIPPED) queue.push(path);
        else if (entry.isSymbolicLink() && linked.length > 0) {
          const git = linkedGitDir(path, linked);
          if (git && !seen.has(git.path)) {
            seen.add(git.path);
            found.push(git);
          }
        }
      }
    }
  }
  return { found, notes };
}

/** The git dir git finds from where `link` leads, when that is inside one of `linked` (up to its top). */
function linkedGitDir(link: string, linked: string[]): Found | null {
  let target: string;
  try {
    target = realpathSync(link);
  } catch {
    return null;
  }
  const base = linked.find((dir) => isWithin(target, dir));
  if (!base) return null;
  for (let dir = target; ; dir = dirname(dir)) {
    const git = join(dir, '.git');
    let info;
    try {
      info = lstatSync(git, { throwIfNoEntry: false });
    } catch {
      info = undefined;
    }
    if (info) return info.isDirectory() ? { path: git, kind: 'dir', stamp: stampOf(git) } : { path: git, kind: 'file', stamp: fileStamp(git) };
    const names = new Set(list(dir).map((e) => e.name));
    if (isGitDir(names)) return { path: dir, kind: 'dir', stamp: stampOf(dir) };
    if (dir === base) return null;
  }
}

function list(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

function fileStamp(path: string): string {
  try {
    const info = lstatSync(path);
    return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
  } catch {
    return '-';
  }
}

/** What decides whether a git dir runs anything: its config, commondir and hooks. */
function stampOf(gitDir: string): string {
  const hooks = list(join(gitDir, 'hooks')).map((e) => `${e.name}=${fileStamp(join(gitDir, 'hooks', e.name))}`);
  return [fileStamp(join(gitDir, 'config')), fileStamp(join(gitDir, 'commondir')), fileStamp(join(gitDir, 'hooks')), ...hooks.sort()].join('|');
}

/** Config lines past the safe list (or that cannot be read as plain key = value): null when none. */
export function unsafeConfig(text: string): string | null {
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]$/.exec(line);
    if (header) {
      section = header[2] === undefined ? header[1]!.toLowerCase() : `${header[1]!.toLowerCase()}.${header[2]}`;
      continue;
    }
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(=.*)?$/.exec(line);
    // Anything else (a continued value, an include, a key after a header on one line) counts as unsafe.
    if (!entry || line.endsWith('\\')) return line;
    const key = `${section}.${entry[1]!.toLowerCase()}`;
    if (!SAFE_KEYS.some((safe) => safe.test(key))) return key;
  }
  return null;
}

function neutralise(item: Found, roots: string[]): string[] {
  const shown = displayIn(item.path, roots);
  if (item.kind === 'file') {
    return disable(item.path, `${shown} (a .git file or link pointing git at a directory conch does not check)`, roots);
  }
  const whose = roots.includes(item.path) ? `left ${item.path === roots[0] ? 'the workspace' : `the writable root ${item.path}`}, itself a git dir, with the file` : 'made the nested repository file';
  const lines: string[] = [];
  const config = join(item.path, 'config');
  const read = readConfig(config);
  const bad = typeof read === 'string' ? (read === '' ? null : unsafeConfig(read)) : read.unsafe;
  if (bad) lines.push(...disable(config, `${displayIn(config, roots)} (it sets ${bad})`, roots, whose));
  if (existsSync(join(item.path, 'commondir'))) lines.push(...disable(join(item.path, 'commondir'), `${displayIn(join(item.path, 'commondir'), roots)} (it takes the config from elsewhere)`, roots, whose));
  const hooks = list(join(item.path, 'hooks')).filter((e) => !e.name.endsWith('.sample'));
  if (hooks.length > 0) lines.push(...disable(join(item.path, 'hooks'), `${displayIn(join(item.path, 'hooks'), roots)} (it holds ${hooks.map((h) => h.name).join(', ')})`, roots, whose));
  return lines;
}

/**
 * A git dir's config as text ('' when there is none), or why it is no plain config. A command made
 * it: a FIFO would block conch for good (an open of one waits for a writer, deaf to signals), a link
 * to /dev/zero or a huge file would fill its memory. A plain config is a small regular file.
 */
function readConfig(path: string): string | { unsafe: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return ''; // no config: nothing of it runs
    return { unsafe: code === 'ELOOP' ? 'a symbolic link' : `something conch cannot read (${code})` };
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { unsafe: 'no regular file' };
    if (info.size > CONFIG_MAX_BYTES) return { unsafe: `more than ${CONFIG_MAX_BYTES / 1024} KiB` };
    const buffer = Buffer.alloc(info.size + 1);
    let n = 0;
    for (let got; n < buffer.length && (got = readSync(fd, buffer, n, buffer.length - n, n)) > 0; ) n += got;
    // Grown since the stat: still a command's doing, and no plain config.
    if (n > info.size) return { unsafe: `more than ${CONFIG_MAX_BYTES / 1024} KiB` };
    return buffer.toString('utf8', 0, n);
  } catch (error) {
    return { unsafe: `something conch cannot read (${(error as NodeJS.ErrnoException).code})` };
  } finally {
    closeSync(fd);
  }
}

function disable(path: string, what: string, roots: string[], whose = 'made the nested repository file'): string[] {
  let target = `${path}${SUFFIX}`;
  for (let n = 2; existsSync(target); n++) target = `${path}${SUFFIX}-${n}`;
  try {
    renameSync(path, target);
  } catch (error) {
    return [`a command ${whose} ${what}, which your git would run unsandboxed, and conch could not disable it (${(error as Error).message}); remove it before using git there.`];
  }
  return [
    `a command ${whose} ${what}, which your git would run unsandboxed: conch renamed it to ${displayIn(target, roots)}; review it and rename it back only if you trust it.`,
  ];
}

function displayIn(path: string, roots: string[]): string {
  const root = roots.find((r) => path.startsWith(`${r}/`));
  return root === roots[0] && root ? relative(root, path) : path;
}
