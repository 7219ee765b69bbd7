// conch's own folders inside a workspace (conch run from $HOME). Its config and plugin cache hold
// code conch runs unsandboxed at the next start: when the workspace contains them, nothing in the
// run may write them. The session store holds the user's conversations: the tools may neither
// write nor read it (and the sandbox hides it from commands, see read-hidden.ts), nor the prompt
// history, which holds what the user typed. A writable root
// over any of them is refused. The --policy file is held alike where the run could write it.
import { basename, dirname, join, relative } from 'node:path';
import { canonical, isWithin } from '../core/paths.ts';
import { ConfigError } from '../core/errors.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import type { MergedPolicy } from './layers.ts';

export function protectOwnDirs(policy: MergedPolicy, cwd: string, own: { configDir: string; cacheDir: string; sessionsDir: string; historyFile: string }): void {
  const ownDirs = [own.configDir, own.cacheDir, own.sessionsDir, own.historyFile];
  const globs = ownDirGlobs(cwd, ownDirs);
  policy.workspace.protectedGlobs.push(...globs);
  policy.sandbox.protectedGlobs.push(...globs);
  policy.workspace.readDeny.push(...ownDirGlobs(cwd, [own.sessionsDir, own.historyFile]));
  refuseOwnDirRoots(policy.workspace.writableRoots, ownDirs);
}

/** Workspace-relative protected globs for the given directories that lie inside the workspace. */
function ownDirGlobs(cwd: string, dirs: string[]): string[] {
  const root = canonical(cwd);
  const globs: string[] = [];
  for (const dir of dirs.map(canonical)) {
    // Escaped: a folder named `cfg[1]` is that folder, not the glob matching `cfg1`.
    const rel = escapeGlob(relative(root, dir));
    if (dir !== root && isWithin(dir, root)) globs.push(rel, `${rel}/**`);
  }
  return globs;
}

/**
 * A writable root that contains (or lies in) conch's config or plugin cache would let a sandboxed
 * command plant code that the next start runs unsandboxed. Refuse it, naming a way out.
 */
function refuseOwnDirRoots(roots: string[], ownDirs: string[]): void {
  for (const root of roots) {
    const r = canonical(root);
    const hit = ownDirs.map(canonical).find((dir) => isWithin(dir, r) || isWithin(r, dir));
    if (hit) {
      throw new ConfigError(
        `writable root ${root} overlaps conch's own folder ${hit} (config, plugins, their cache or sessions), which holds code conch runs outside the sandbox or your conversations. Allow a narrower folder instead (e.g. a tool's own cache under it).`,
        undefined,
        '--allow-write',
      );
    }
  }
}

/**
 * The --policy file, where the run could write it (inside the workspace or a writable root), is
 * protected as conch's own folders are: it constrains the run, and a run that rewrote it (its command
 * rules lifted) would have the next one obey what it wrote, `conch -c` applying the recorded file
 * again. Both the name given and the file it leads to, as a link at the name could be replaced.
 */
export function protectPolicyFile(policy: MergedPolicy, cwd: string, file: string): void {
  const root = canonical(cwd);
  const names = [...new Set([join(canonical(dirname(file)), basename(file)), canonical(file)])];
  for (const tree of [root, ...policy.workspace.writableRoots.map(canonical)]) {
    const globs = names.filter((name) => name !== tree && isWithin(name, tree)).map((name) => relative(tree, name));
    if (globs.length === 0) continue;
    if (tree === root) {
      for (const list of [policy.workspace.protectedGlobs, policy.sandbox.protectedGlobs]) list.push(...globs.filter((g) => !list.includes(g)));
      continue;
    }
    for (const settings of [policy.workspace, policy.sandbox]) {
      const list = ((settings.rootProtectedGlobs ??= {})[tree] ??= []);
      list.push(...globs.filter((g) => !list.includes(g)));
    }
  }
}
