// A workspace that is, or contains, the user's home directory (conch started in ~ or in /). There a
// restricted run could write ~/.ssh/authorized_keys or append to ~/.profile, and so act outside
// every later run's sandbox. Such a run is read-only unless the user opts in (--allow-home-writes),
// and even then the files that log a user in or run at each shell start stay protected like .git.
import { relative } from 'node:path';
import { canonical, isWithin } from '../core/paths.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import type { MergedPolicy } from './layers.ts';

/**
 * Home-relative paths a run in the home directory never writes: keys, what shells run at start,
 * git's own config (core.pager, core.fsmonitor, `!` aliases run programs at the next git command),
 * and the user's skills (every later run in every workspace takes them as the user's instructions).
 */
export const HOME_PROTECTED = {
  dirs: ['.ssh', '.gnupg', '.config/conch', '.config/fish', '.config/git', '.agents/skills'],
  files: [
    '.gitconfig',
    '.profile', '.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.bash_aliases',
    '.zshenv', '.zshrc', '.zprofile', '.zlogin', '.zlogout',
    '.login', '.logout', '.cshrc', '.tcshrc', '.kshrc', '.mkshrc', '.inputrc', '.pam_environment',
  ],
} as const;

const KEPT = "~/.ssh, ~/.gnupg, the shell start-up files, git's config, your skills and ~/.config/conch stay protected";

export interface HomeGuard {
  /** Workspace-relative protected globs for the paths above. */
  globs: string[];
  /** Why the run is read-only (for the header and a warning), or null when writes are allowed. */
  readOnlyWhy: string | null;
  warning: string;
}

/** null when the workspace does not contain the home directory (or the run is unrestricted). */
export function homeGuard(cwd: string, home: string, flags: { unrestricted?: boolean; allowHomeWrites?: boolean }): HomeGuard | null {
  if (flags.unrestricted || !home) return null;
  const root = canonical(cwd);
  const h = canonical(home);
  if (!isWithin(h, root)) return null;
  const rel = relative(root, h);
  const globs = homeGlobs(rel);
  const where = rel ? `contains your home directory ${h}` : 'is your home directory';
  if (flags.allowHomeWrites) {
    return { globs, readOnlyWhy: null, warning: `the workspace ${where}; writes are allowed (--allow-home-writes), but ${KEPT}.` };
  }
  return {
    globs,
    readOnlyWhy: `the workspace ${where}`,
    warning: `the workspace ${where}, so this run is read-only. Pass --allow-home-writes to let it write (${KEPT}), or start conch in a project folder.`,
  };
}

/** The protected globs of HOME_PROTECTED for a home at `rel` in a tree ('' for the tree's top). */
function homeGlobs(rel: string): string[] {
  const at = (p: string) => (rel ? `${escapeGlob(rel)}/${p}` : p);
  return [...HOME_PROTECTED.dirs.flatMap((d) => [at(d), `${at(d)}/**`]), ...HOME_PROTECTED.files.map(at)];
}

/**
 * A writable root (--allow-write) that is or contains the home directory: outside the workspace the
 * home is read-only for the run, and in such a root it would be writable as a whole, ~/.bashrc and
 * ~/.ssh/authorized_keys included. The same paths as in a home run stay protected there (the root's
 * own globs, for the file tools and commands), and the run says so.
 */
export function protectHomeInRoots(policy: MergedPolicy, home: string, warnings: string[]): void {
  if (!home) return;
  const h = canonical(home);
  for (const root of policy.workspace.writableRoots.map(canonical)) {
    if (!isWithin(h, root)) continue;
    const globs = homeGlobs(relative(root, h));
    for (const settings of [policy.workspace, policy.sandbox]) {
      const list = ((settings.rootProtectedGlobs ??= {})[root] ??= []);
      list.push(...globs.filter((g) => !list.includes(g)));
    }
    warnings.push(`the writable root ${root} ${root === h ? 'is' : 'contains'} your home directory; ${KEPT}.`);
  }
}

/**
 * The guard applied to the merged policy: its protected paths, its warning, and when writes are not
 * allowed a read-only run, saying so when that overrode a --profile typed now.
 */
export function applyHomeGuard(
  policy: MergedPolicy,
  cwd: string,
  home: string,
  flags: { unrestricted?: boolean; allowHomeWrites?: boolean; profile?: string },
  warnings: string[],
): HomeGuard | null {
  const homeRun = homeGuard(cwd, home, flags);
  if (!homeRun) return null;
  for (const globs of [policy.workspace.protectedGlobs, policy.sandbox.protectedGlobs]) {
    globs.push(...homeRun.globs.filter((g) => !globs.includes(g)));
  }
  warnings.push(homeRun.warning);
  if (homeRun.readOnlyWhy) {
    const took = flags.profile !== undefined && flags.profile === policy.sandbox.profile;
    policy.tools.readOnly = true;
    policy.sandbox.profile = effectiveProfile({ chosen: [policy.sandbox.profile], readOnly: policy.tools.readOnly });
    if (took && flags.profile !== policy.sandbox.profile) {
      warnings.push(`--profile ${flags.profile} ignored: ${homeRun.readOnlyWhy}, so shell commands run under the "${policy.sandbox.profile}" profile (--allow-home-writes lets the run write).`);
    }
  }
  return homeRun;
}
