// The workspace policy: where write/edit may touch, what read may see, and how paths are shown.
// Every decision is made on canonical paths (symlinks resolved through the nearest existing
// ancestor), so a link or a symlinked directory cannot smuggle a write out of the workspace.
import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import picomatch from 'picomatch';
import { PolicyError } from '../core/errors.ts';
import { secretFor, type SecretLocation } from './secrets.ts';
import { isWithin } from '../core/paths.ts';
import { GIT_DIR_NAMES, gitDirAround, isGitDir } from '../core/git-dir.ts';

export interface WorkspaceAccess {
  /** Canonical workspace root. */
  readonly root: string;
  /**
   * Resolve a path for reading or writing under the active policy. Async: `await` it; the promise
   * itself handed to fs fails with "path must be a string". Resolves to the canonical absolute
   * path, or rejects with a PolicyError naming the rule.
   */
  resolve(path: string, mode: 'read' | 'write'): Promise<string>;
  /** The workspace-relative display form of an absolute path (absolute if outside). */
  display(absolutePath: string): string;
}

export interface WorkspaceOptions {
  /** The working directory at start; canonicalised (realpath) by open(). */
  root: string;
  /** Bypass containment and protected-path checks (the run header says so). */
  unrestricted: boolean;
  /** Extra protected globs (workspace-relative, picomatch) added to the defaults; never removes them. */
  protectedGlobs?: string[];
  /** Extra writable roots outside the workspace (absolute). */
  writableRoots?: string[];
  /** Extra protected globs of a writable root, relative to it, by the root (its repository's hooks folder); added to the defaults it gets. */
  rootProtectedGlobs?: Record<string, string[]>;
  /** When set, reads are confined to these roots (absolute or workspace-relative). */
  readRoots?: string[];
  /** Globs whose matches may not be read. */
  readDeny?: string[];
  /** Switch on the secret-file read deny globs (**\/.env*, **\/*.pem, **\/*.key, **\/id_*). */
  denySecretFiles?: boolean;
  /** Paths a policy denied, by rule id. Enforced even under --unrestricted: that flag never re-opens them. */
  denied?: { mode: 'read' | 'write'; rule: string; root?: string; glob?: string }[];
  /** Credential locations the read tool refuses (workspace/secrets.ts); also held under --unrestricted. */
  secrets?: SecretLocation[];
  /**
   * conch's own directories of this process (its sandbox state, the run's temp dir): write and edit
   * never touch them, wherever they lie (the workspace holds TMPDIR when conch runs in /tmp).
   */
  ownDirs?: string[];
}

/** Each name with what may lie inside it: a .env or HEAD made a directory is no less protected (commands see it read-only). */
export const DEFAULT_PROTECTED_GLOBS = ['.git', '.git/**', '.conch', '.conch/**', '.env', '.env/**', '.env.*', '.env.*/**', 'HEAD', 'HEAD/**'];
/**
 * A repository's git dir at any depth, for the file tools only: a nested repository's config or
 * hooks (core.fsmonitor, post-index-change) run in the user's own git, unsandboxed, the moment a
 * git-aware prompt or editor looks at it. Shell commands are checked after the run instead
 * (nested-git.ts): a mount cannot hold names at every depth.
 */
export const NESTED_GIT_GLOBS = ['**/.git', '**/.git/**'];
export const SECRET_FILE_GLOBS = ['**/.env*', '**/*.pem', '**/*.key', '**/id_*'];

/**
 * A process's environment. conch's own holds the provider keys and tokens that commands never see
 * (their environment is cleaned), and the read tool runs in conch's process.
 */
const PROCESS_ENVIRON = /^\/proc\/(?:\d+|self|thread-self)(?:\/task\/\d+)?\/environ$/;

/** Symlink hops followed while canonicalising before giving up (the kernel's own limit is 40). */
const MAX_LINK_HOPS = 40;

interface GlobRule {
  glob: string;
  test: (path: string) => boolean;
}

function compileGlobs(globs: string[]): GlobRule[] {
  // Case-insensitive file systems would otherwise let `.GIT/config` past a `.git/**` rule, and Linux
  // has them too (WSL's /mnt/c, vfat and exfat mounts, ext4 casefold folders): always case-insensitive.
  return [...new Set(globs)].map((glob) => ({ glob, test: picomatch(glob, { dot: true, nocase: true }) }));
}


function isFsError(error: unknown, ...codes: string[]): boolean {
  return typeof error === 'object' && error !== null && codes.includes((error as { code?: string }).code ?? '');
}

/**
 * The canonical form of a path that may not exist yet: realpath of the nearest existing ancestor,
 * with the missing tail appended. A dangling symlink is followed to where it points, because
 * creating a file "at" the link would create it at the link's target.
 */
export async function canonicalize(path: string): Promise<string> {
  let head = resolve(path);
  const tail: string[] = [];
  for (let hops = 0; ; ) {
    try {
      return join(await realpath(head), ...tail);
    } catch (error) {
      if (!isFsError(error, 'ENOENT', 'ENOTDIR')) {
        // EACCES and the like: we cannot look further, and neither can the operation that follows,
        // which will fail with the same error and be reported as such.
        if (isFsError(error, 'EACCES', 'EPERM')) return join(head, ...tail);
        throw error;
      }
    }
    const link = await lstat(head).catch(() => null);
    if (link?.isSymbolicLink()) {
      if (++hops > MAX_LINK_HOPS) throw Object.assign(new Error(`too many symbolic links at ${head}`), { code: 'ELOOP' });
      head = resolve(dirname(head), await readlink(head));
      continue;
    }
    const parent = dirname(head);
    if (parent === head) return join(head, ...tail);
    tail.unshift(basename(head));
    head = parent;
  }
}

/** A path the file system cannot resolve, named as the model gave it: the error's own message holds an absolute path. */
function unresolvable(given: string, error: unknown): unknown {
  const code = (error as { code?: string } | null)?.code;
  const why =
    code === 'ELOOP' ? 'too many levels of symbolic links (a link loop?)'
    : code === 'ENAMETOOLONG' ? 'a name in it is longer than the file system allows (255 bytes), or the whole path is (4096)'
    : null;
  if (why === null) return error;
  return Object.assign(new Error(`'${given}' cannot be resolved: ${why}; give another path.`), { code });
}

export class Workspace implements WorkspaceAccess {
  private readonly protectedRules: GlobRule[];
  /** The defaults, for paths in a writable root outside the workspace (its own .git, .env …), and each root's own globs. */
  private readonly rootProtectedRules: Map<string, GlobRule[]>;
  private readonly readDenyRules: GlobRule[];
  private readonly policyDenials: { mode: 'read' | 'write'; rule: string; root?: string; test?: (path: string) => boolean }[];

  private constructor(
    readonly root: string,
    readonly options: WorkspaceOptions,
    private readonly writableRoots: string[],
    private readonly readRoots: string[] | null,
    private readonly ownDirs: string[],
    rootGlobs: Map<string, string[]>,
    /** device:inode of the workspace and each writable root when opened (see checkTrees). */
    private readonly identities: Map<string, string>,
  ) {
    this.rootProtectedRules = new Map(writableRoots.map((r) => [r, compileGlobs([...DEFAULT_PROTECTED_GLOBS, ...NESTED_GIT_GLOBS, ...(rootGlobs.get(r) ?? [])])]));
    this.protectedRules = compileGlobs([...DEFAULT_PROTECTED_GLOBS, ...NESTED_GIT_GLOBS, ...(options.protectedGlobs ?? [])]);
    this.readDenyRules = compileGlobs([...(options.readDeny ?? []), ...(options.denySecretFiles ? SECRET_FILE_GLOBS : [])]);
    this.policyDenials = (options.denied ?? []).map((d) => ({
      mode: d.mode,
      rule: d.rule,
      root: d.root ? resolve(root, d.root) : undefined,
      test: d.glob ? compileGlobs([d.glob])[0]!.test : undefined,
    }));
  }

  static async open(options: WorkspaceOptions): Promise<Workspace> {
    const root = await realpath(resolve(options.root));
    const writable = await Promise.all((options.writableRoots ?? []).map((r) => canonicalize(resolve(root, r))));
    const readRoots = options.readRoots ? await Promise.all(options.readRoots.map((r) => canonicalize(resolve(root, r)))) : null;
    const ownDirs = await Promise.all((options.ownDirs ?? []).map((d) => canonicalize(d)));
    const rootGlobs = new Map<string, string[]>();
    for (const [given, globs] of Object.entries(options.rootProtectedGlobs ?? {})) {
      const real = await canonicalize(resolve(root, given));
      rootGlobs.set(real, [...(rootGlobs.get(real) ?? []), ...globs]);
    }
    const identities = new Map<string, string>();
    for (const tree of [root, ...writable]) {
      const info = await stat(tree).catch(() => null);
      if (info) identities.set(tree, `${info.dev}:${info.ino}`);
    }
    return new Workspace(root, options, writable, readRoots, ownDirs, rootGlobs, identities);
  }

  get unrestricted(): boolean {
    return this.options.unrestricted;
  }

  /** The absolute, lexically normalised form of what the model wrote (`~` is the home directory). */
  absolute(path: string): string {
    if (path === '~' || path.startsWith('~/')) return join(homedir(), path.slice(1));
    return isAbsolute(path) ? resolve(path) : resolve(this.root, path);
  }

  async resolve(path: string, mode: 'read' | 'write'): Promise<string> {
    // Node's own refusal quotes the absolute path and speaks of arguments the model never saw.
    if (path.includes('\0')) {
      throw new Error(`path ${JSON.stringify(path)} contains a NUL byte, which no file name can hold; give the path without it.`);
    }
    const lexical = this.absolute(path);
    const canonical = await canonicalize(lexical).catch((error: unknown) => {
      throw unresolvable(path, error);
    });
    this.checkPolicyDenials(mode, lexical, canonical);
    if (mode === 'read') this.checkRead(path, lexical, canonical);
    else if (!this.options.unrestricted) {
      await this.checkTrees();
      this.checkWrite(path, lexical, canonical);
      await this.checkGitDir(lexical, canonical);
    }
    return canonical;
  }

  /** Workspace-relative form ('.' for the root), or the absolute path when outside. */
  display(absolutePath: string): string {
    const rel = this.relative(absolutePath);
    return rel === null ? absolutePath : rel === '' ? '.' : rel;
  }

  /** Workspace-relative path ('' for the root), or null when outside the workspace. */
  relative(absolutePath: string): string | null {
    if (!isWithin(absolutePath, this.root)) return null;
    return relative(this.root, absolutePath).split(sep).join('/');
  }

  /** The protected glob a canonical path matches, if any (workspace-relative globs). */
  protectedBy(absolutePath: string): string | null {
    const rel = this.relative(absolutePath);
    if (rel === null || rel === '') return null;
    return this.protectedRules.find((r) => r.test(rel))?.glob ?? null;
  }

  /** The default protected glob a path matches relative to the writable root holding it, if any. */
  private rootProtectedBy(absolutePath: string): string | null {
    for (const root of this.writableRoots) {
      if (!isWithin(absolutePath, root) || absolutePath === root) continue;
      const rel = relative(root, absolutePath).split(sep).join('/');
      const hit = this.rootProtectedRules.get(root)?.find((r) => r.test(rel));
      if (hit) return hit.glob;
    }
    return null;
  }

  private checkPolicyDenials(mode: 'read' | 'write', lexical: string, canonical: string): void {
    for (const d of this.policyDenials) {
      if (d.mode !== mode) continue;
      const hit = [canonical, lexical].some((abs) => {
        if (d.root) return isWithin(abs, d.root);
        const rel = this.relative(abs);
        return rel !== null && rel !== '' && d.test!(rel);
      });
      if (hit) throw new PolicyError(d.rule, `'${this.display(canonical)}' may not be ${mode === 'read' ? 'read' : 'written'}: the policy denies it (rule '${d.rule}'); --unrestricted does not lift policy denials.`);
    }
  }

  private checkWrite(given: string, lexical: string, canonical: string): void {
    const inside = isWithin(canonical, this.root);
    if (!inside && !this.writableRoots.some((r) => isWithin(canonical, r))) {
      // Outside paths are named as the model wrote them, not as absolute paths of this machine.
      const shown = isWithin(lexical, this.root) ? this.display(lexical) : given;
      const why =
        isWithin(lexical, this.root) || this.writableRoots.some((r) => isWithin(lexical, r))
          ? `'${shown}' resolves through a symbolic link to a location outside the workspace`
          : `'${shown}' is outside the workspace`;
      throw new PolicyError(
        'workspace.outside',
        `${why}; write and edit are confined to the workspace (and --allow-write roots). Work inside the workspace; only the user can lift this (conch --unrestricted).`,
      );
    }
    if (this.ownDirs.some((d) => isWithin(canonical, d) || isWithin(lexical, d))) {
      throw new PolicyError(
        'workspace.own',
        `'${this.display(isWithin(lexical, this.root) ? lexical : canonical)}' is in conch's own directory (the sandbox's state and this run's temporary files, under TMPDIR); ` +
          'write and edit never touch it. Write somewhere else in the workspace.',
      );
    }
    // Check the path as written too: `.git` may itself be a file or link that canonicalises elsewhere.
    // A writable root is a tree of its own (a sibling repository): its .git and .env are protected too.
    const glob =
      this.protectedBy(canonical) ??
      (isWithin(lexical, this.root) ? this.protectedBy(lexical) : null) ??
      this.rootProtectedBy(canonical) ??
      this.rootProtectedBy(lexical);
    if (glob) {
      throw new PolicyError(
        'workspace.protected',
        `'${this.display(isWithin(lexical, this.root) ? lexical : canonical)}' is protected (matches '${glob}'); ` +
          `conch does not modify protected paths (.git, .conch, .env files, keys, shell start-up files, git's config and skills in a home directory, and what the config protects). Leave it as it is; only the user can lift this (conch --unrestricted).`,
      );
    }
  }

  /**
   * The workspace and the writable roots are still the directories they were when opened. A command
   * in a writable root above one can move it away (with a folder between them) and make another at
   * its path: its .git is then held by nothing, and names the policy protects only by their place
   * (a hooks folder) lie writable where it went.
   */
  private async checkTrees(): Promise<void> {
    for (const [tree, id] of this.identities) {
      const info = await stat(tree).catch(() => null);
      if (info && `${info.dev}:${info.ino}` === id) continue;
      const which = tree === this.root ? 'the workspace' : `the writable root ${tree}`;
      throw new PolicyError(
        'workspace.moved',
        `${which} is no longer the directory it was when the run started: something moved it away${info ? ' and made another in its place' : ''}, so what protects it may now lie elsewhere. ` +
          'conch writes nothing more in this session; tell the user, who should find where it went, check its .git (hooks, config) and put it back.',
      );
    }
  }

  /**
   * A git dir needs no `.git`: a folder holding HEAD, objects and refs (a bare repository), or HEAD
   * and a commondir, is one, and the user's git runs its config. So a folder that is one, or that
   * this write would make one, is protected like a nested .git. So is the tree's top when it is one
   * itself (conch started in a bare repository) or lies inside one (in .git/hooks), and then as a
   * whole: git reads names all over a git dir (config, hooks, commondir, info, modules, worktrees …),
   * and it has no work tree.
   */
  private async checkGitDir(lexical: string, canonical: string): Promise<void> {
    const top = [this.root, ...this.writableRoots].filter((r) => isWithin(canonical, r)).sort((a, b) => b.length - a.length)[0];
    if (top === undefined) return;
    let child = canonical;
    for (let dir = dirname(canonical); dir !== top && isWithin(dir, top); child = dir, dir = dirname(dir)) {
      const present = await Promise.all(GIT_DIR_NAMES.map((name) => lstat(join(dir, name)).then(() => true, () => false)));
      const names = new Set([basename(child), ...GIT_DIR_NAMES.filter((_, i) => present[i])]);
      if (!isGitDir(names)) continue;
      throw new PolicyError(
        'workspace.protected',
        `'${this.display(isWithin(lexical, this.root) ? lexical : canonical)}' is protected: ${this.display(dir)} is a git dir without a .git (HEAD with objects and refs, or with a commondir), or writing this would make it one, ` +
          "and the user's own git would run its config and hooks unsandboxed. conch does not modify git dirs; leave it as it is. Only the user can lift this (conch --unrestricted).",
      );
    }
    const around = canonical === top ? null : gitDirAround(top, basename(child));
    if (around !== null) {
      const which = top === this.root ? 'the workspace' : `the writable root ${top}`;
      const what = around === top ? `${which} is itself a git dir` : `${which} lies inside the git dir '${top === this.root ? relative(top, around) : around}'`;
      throw new PolicyError(
        'workspace.protected',
        `'${this.display(isWithin(lexical, this.root) ? lexical : canonical)}' is protected: ${what} (a bare repository, a .git, or a worktree's admin dir: HEAD with objects and refs, or with a commondir, and no .git), or writing this would make it one, ` +
          "and the user's own git would run its config and hooks unsandboxed. conch does not modify git dirs, so write and edit leave all of it as it is (shell commands see it read-only). Only the user can lift this (conch --unrestricted).",
      );
    }
  }

  // Read narrowing is opt-in configuration, so it holds even under --unrestricted.
  private checkRead(given: string, lexical: string, canonical: string): void {
    if (this.readRoots && !this.readRoots.some((r) => isWithin(canonical, r))) {
      const roots = this.readRoots.map((r) => this.display(r)).join(', ');
      throw new PolicyError('read.roots', `'${this.display(canonical)}' is outside the configured read roots (${roots}); reading it is not allowed.`);
    }
    const secret = secretFor(this.options.secrets ?? [], [canonical, lexical]);
    if (secret) {
      throw new PolicyError(
        `read.secret:${secret.name}`,
        `'${this.display(canonical)}' is hidden by policy: it is a credential location (built-in rule read.secret:${secret.name}, ${secret.path}), ` +
          `unreadable to the read tool and shown empty to shell commands. Do not try to read it another way; only the user can lift this ` +
          `(read.allowSecret: ["${secret.name}"] in their user config).`,
      );
    }
    if (process.platform === 'linux' && [canonical, lexical].some((p) => PROCESS_ENVIRON.test(p))) {
      throw new PolicyError(
        'read.environ',
        `'${given}' is a process's environment: conch's own holds the API keys and tokens that shell commands never see, so the read tool does not read it. ` +
          'Do not try to read it another way; to learn a setting, ask the user.',
      );
    }
    if (this.readDenyRules.length === 0) return;
    const candidates = new Set([canonical, lexical, given]);
    for (const abs of [canonical, lexical]) {
      const rel = this.relative(abs);
      if (rel) candidates.add(rel);
    }
    for (const rule of this.readDenyRules) {
      if ([...candidates].some((c) => rule.test(c))) {
        throw new PolicyError('read.deny', `'${this.display(canonical)}' matches the read deny glob '${rule.glob}'; reading it is not allowed.`);
      }
    }
  }
}
