// conch's own folders inside a workspace (conch run from $HOME). Its config and plugin cache hold
// code conch runs unsandboxed at the next start: when the workspace contains them, nothing in the
// run may write them. The session store holds the user's conversations: the tools may neither
// write nor read it (and the sandbox hides it from commands, see read-hidden.ts), nor the prompt
// history, which holds what the user typed. A writable root
// over any of them is refused.
import { relative } from 'node:path';
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
