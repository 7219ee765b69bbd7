// A workspace that is, or contains, the user's home directory (conch started in ~ or in /). There a
// restricted run could write ~/.ssh/authorized_keys or append to ~/.profile, and so act outside
// every later run's sandbox. Such a run is read-only unless the user opts in (--allow-home-writes),
// and even then the files that log a user in or run at each shell start stay protected like .git.
import { lstatSync } from 'node:fs';
import { join, relative } from 'node:path';
import { canonical, isWithin } from '../core/paths.ts';
import { effectiveProfile } from '../sandbox/effective-profile.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import type { MergedPolicy } from './layers.ts';

/**
 * Home-relative paths a run in the home directory never writes. The rule: code that runs outside
 * every sandbox without the user asking for it — at the next login, at a shell's start, or at the
 * next ordinary use of a common tool — and the credentials those tools send. Absent ones are held
 * too (placeholders in the sandbox), since each is read at its name by a program already there.
 *
 * In, and why:
 * - keys and credentials: .ssh (authorized_keys, config's ProxyCommand), .gnupg, .netrc,
 *   .git-credentials, .pypirc, .aws (credential_process runs a program), .kube (exec plugins),
 *   .config/gh (tokens; `!` aliases run a shell), .docker/config.json (credsStore runs a helper);
 * - login: the shells' login files, .pam_environment, .config/environment.d (systemd's user
 *   environment: PATH, LD_PRELOAD), .config/systemd and .local/share/systemd (user units, timers),
 *   .config/autostart (XDG autostart), .config/plasma-workspace (KDE sources env/*.sh), the X
 *   session scripts (.xprofile, .xsession, .xsessionrc, .xinitrc, .xserverrc), user-tmpfiles.d (at
 *   login it may replace ~/.bashrc by a link), .local/share/dbus-1 (a session service's Exec runs
 *   when a program first asks for its name), .forward (`|program` runs at the next mail);
 * - PATH: bin and .local/bin (Debian's and Ubuntu's ~/.profile put them first once they exist, so a
 *   `git` there shadows /usr/bin/git);
 * - shell start: the rc files, .bashrc.d (Fedora's ~/.bashrc sources each file in it),
 *   .bash_completion and .local/share/bash-completion (bash-completion sources the one at each
 *   interactive start, the other's files at the first Tab on a command), .config/fish;
 * - common tools: git's config (core.pager, core.fsmonitor, `!` aliases), .npmrc (node-options,
 *   script-shell), .yarnrc/.yarnrc.yml (yarnPath runs a file), bun's global bunfig (preload), pip's
 *   config (.config/pip, .pip: index-url serves the next install's code), .local/lib (python's user
 *   site: a .pth runs at every python start), .docker/cli-plugins, less (.lessfilter runs through
 *   Debian's lesspipe for each file; lesskey's #env sets LESSOPEN; less is git's pager), tmux and
 *   screen (run-shell, exec), gdb (.gdbinit), the editors' start-up files and plugin folders (vim,
 *   neovim, emacs), .local/share/applications (a .desktop there replaces the system one's Exec),
 *   and where installed, VS Code's extensions and user settings (.vscode, .config/Code/User);
 * - conch's own: .config/conch, and the user's skills (.agents/skills: every later run follows them).
 *
 * Out, and why: what another file must name before it runs (nvm, pyenv, oh-my-zsh, ~/.cargo/env:
 * a protected rc file names them) is in `installed` below, held only where it exists; tools that
 * are not the base of a developer's machine (mutt, psql, JetBrains IDEs, i3/sway/openbox configs,
 * other shells' rc files); data that a program reads but never runs (.Xresources, mimeapps.list,
 * which names only .desktop entries, held above, .curlrc, .wgetrc, fontconfig); caches
 * (.cache, .npm), which a run must write to build anything.
 */
export const HOME_PROTECTED = {
  dirs: [
    '.ssh', '.gnupg', '.aws', '.kube', '.config/gh', '.docker/cli-plugins',
    '.config/conch', '.config/fish', '.config/git', '.agents/skills',
    'bin', '.local/bin', '.local/lib', '.bashrc.d', '.local/share/bash-completion',
    '.config/systemd', '.local/share/systemd', '.config/environment.d', '.config/autostart', '.config/plasma-workspace',
    '.config/user-tmpfiles.d', '.local/share/user-tmpfiles.d', '.local/share/dbus-1',
    '.local/share/applications', '.config/pip', '.pip', '.config/tmux', '.vim', '.config/nvim', '.emacs.d', '.config/emacs',
  ],
  files: [
    '.gitconfig', '.git-credentials', '.netrc', '.pypirc', '.docker/config.json',
    '.profile', '.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.bash_aliases', '.bash_completion',
    '.zshenv', '.zshrc', '.zprofile', '.zlogin', '.zlogout',
    '.login', '.logout', '.cshrc', '.tcshrc', '.kshrc', '.mkshrc', '.inputrc', '.pam_environment',
    '.xprofile', '.xsession', '.xsessionrc', '.xinitrc', '.xserverrc', '.forward',
    '.npmrc', '.yarnrc', '.yarnrc.yml', '.bunfig.toml', '.config/.bunfig.toml',
    '.lessfilter', '.lesskey', '.less', '.config/lesskey', '.tmux.conf', '.screenrc', '.gdbinit',
    '.vimrc', '.gvimrc', '.exrc', '.emacs', '.emacs.el',
  ],
  /**
   * Installed tools' folders: what runs from them runs because a start-up file or PATH names it, so
   * they matter once they exist. The sandbox holds the named entries (a folder ends in /, '' is the folder whole) of
   * a folder there at the start, placeholders for the missing ones, and no placeholder at all
   * where the tool is not installed (a ~/.cargo made by the run is named by nothing); the file
   * tools refuse them always.
   */
  installed: {
    '.cargo': ['bin/', 'env', 'config.toml', 'config', 'credentials.toml', 'credentials'],
    '.bun': ['bin/', 'install/global/'],
    '.deno': ['bin/'],
    '.nvm': [''],
    '.pyenv': [''],
    '.oh-my-zsh': [''],
    '.config/direnv': [''],
    '.local/share/direnv': [''],
    '.vscode': [''],
    '.config/Code': ['User/'],
  } as Record<string, readonly string[]>,
} as const;

const KEPT =
  "~/.ssh, ~/.gnupg, the shell start-up files, git's config, your skills and ~/.config/conch stay protected, " +
  'as do what runs at your next login or command (~/.local/bin, systemd units, autostart, editors\' and tools\' start-up files) and credentials';

export interface HomeGuard {
  /** Workspace-relative protected globs for the paths above, for the file tools. */
  globs: string[];
  /** Those the sandbox holds (installed tools' folders only where they are). */
  sandboxGlobs: string[];
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
  const { files: globs, sandbox: sandboxGlobs } = homeGlobs(rel, h);
  const where = rel ? `contains your home directory ${h}` : 'is your home directory';
  if (flags.allowHomeWrites) {
    return { globs, sandboxGlobs, readOnlyWhy: null, warning: `the workspace ${where}; writes are allowed (--allow-home-writes), but ${KEPT}.` };
  }
  return {
    globs,
    sandboxGlobs,
    readOnlyWhy: `the workspace ${where}`,
    warning: `the workspace ${where}, so this run is read-only. Pass --allow-home-writes to let it write (${KEPT}), or start conch in a project folder.`,
  };
}

/**
 * The protected globs of HOME_PROTECTED for a home at `rel` in a tree ('' for the tree's top): all
 * of them for the file tools, and for the sandbox those of `installed` only where its folder is.
 */
function homeGlobs(rel: string, home: string): { files: string[]; sandbox: string[] } {
  const at = (p: string) => (rel ? `${escapeGlob(rel)}/${p}` : p);
  const dir = (d: string) => [at(d), `${at(d)}/**`];
  const always = [...HOME_PROTECTED.dirs.flatMap(dir), ...HOME_PROTECTED.files.map(at)];
  const files = [...always];
  const sandbox = [...always];
  for (const [folder, names] of Object.entries(HOME_PROTECTED.installed)) {
    const globs = names.flatMap((name) => (name.endsWith('/') || !name ? dir(`${folder}/${name}`.replace(/\/+$/, '')) : [at(`${folder}/${name}`)]));
    files.push(...globs);
    if (isDirectory(join(home, folder))) sandbox.push(...globs);
  }
  return { files, sandbox };
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The protected globs, relative to `tree`, of the HOME_PROTECTED paths strictly inside a tree that
 * lies in the home (a run started in ~/.config holds ~/.config/git and ~/.config/fish there, whose
 * config git and fish obey unsandboxed at their next start). Names escaped.
 */
function homePathGlobs(tree: string, home: string): { files: string[]; sandbox: string[] } {
  const files: string[] = [];
  const sandbox: string[] = [];
  // `held`: asked only for a path in the tree (a project folder holds none: no lstat at its start).
  const add = (name: string, dir: boolean, held: () => boolean) => {
    const path = join(home, name);
    if (path === tree || !isWithin(path, tree)) return;
    const rel = escapeGlob(relative(tree, path));
    const globs = dir ? [rel, `${rel}/**`] : [rel];
    files.push(...globs);
    if (held()) sandbox.push(...globs);
  };
  const always = () => true;
  for (const name of HOME_PROTECTED.dirs) add(name, true, always);
  for (const name of HOME_PROTECTED.files) add(name, false, always);
  for (const [folder, names] of Object.entries(HOME_PROTECTED.installed)) {
    const present = () => isDirectory(join(home, folder));
    for (const name of names) add(`${folder}/${name}`.replace(/\/+$/, ''), name.endsWith('/') || !name, present);
  }
  return { files, sandbox };
}

function addGlobs(list: string[], globs: string[]): void {
  list.push(...globs.filter((g) => !list.includes(g)));
}

/**
 * A writable root (--allow-write) that is or contains the home directory: outside the workspace the
 * home is read-only for the run, and in such a root it would be writable as a whole, ~/.bashrc and
 * ~/.ssh/authorized_keys included. The same paths as in a home run stay protected there (the root's
 * own globs, for the file tools and commands), and the run says so. A root inside the home holds
 * those of them that lie in it (~/.config: ~/.config/git).
 */
export function protectHomeInRoots(policy: MergedPolicy, home: string, warnings: string[]): void {
  if (!home) return;
  const h = canonical(home);
  for (const root of policy.workspace.writableRoots.map(canonical)) {
    const contains = isWithin(h, root);
    const globs = contains ? homeGlobs(relative(root, h), h) : homePathGlobs(root, h);
    if (globs.files.length === 0) continue;
    for (const [settings, kept] of [[policy.workspace, globs.files], [policy.sandbox, globs.sandbox]] as const) addGlobs(((settings.rootProtectedGlobs ??= {})[root] ??= []), kept);
    if (contains) warnings.push(`the writable root ${root} ${root === h ? 'is' : 'contains'} your home directory; ${KEPT}.`);
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
  if (!homeRun) {
    // A workspace inside the home holding some of those paths (started in ~/.config) holds them too.
    if (flags.unrestricted || !home) return null;
    const globs = homePathGlobs(canonical(cwd), canonical(home));
    for (const [list, kept] of [[policy.workspace.protectedGlobs, globs.files], [policy.sandbox.protectedGlobs, globs.sandbox]] as const) addGlobs(list, kept);
    return null;
  }
  for (const [globs, kept] of [[policy.workspace.protectedGlobs, homeRun.globs], [policy.sandbox.protectedGlobs, homeRun.sandboxGlobs]] as const) {
    globs.push(...kept.filter((g) => !globs.includes(g)));
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
