// The read policy, translated for the shell sandbox. The read tool checks every path it is given;
// a sandboxed command gets the same policy as far as mounts can express it without scanning the
// workspace: denied roots, and the workspace's top-level entries that a read-deny glob matches, are
// hidden (empty) inside the sandbox, and so are the credential locations (secrets.ts). Deeper glob matches are not hidden for commands (documented).
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import picomatch from 'picomatch';
import { SECRET_FILE_GLOBS } from './paths.ts';
import { secretPathsToHide, type SecretLocation } from './secrets.ts';

/** The parts of the run's Config this reads (a Config is one); the workspace sits below config. */
export interface ReadPolicy {
  policy: { denied?: { mode: 'read' | 'write'; root?: string }[] };
  sessions: { dir: string };
  /** The prompt history (absent: a Config built by hand, without one). */
  history?: { file: string };
  workspace: { readDeny: string[]; denySecretFiles?: boolean; secrets?: SecretLocation[] };
}

export async function hiddenForCommands(config: ReadPolicy, workspaceRoot: string): Promise<string[]> {
  const hidden = new Set<string>(secretPathsToHide(config.workspace.secrets ?? []));
  for (const d of config.policy.denied ?? []) if (d.mode === 'read' && d.root) hidden.add(d.root);
  // The session store is the user's conversations: no command reads or rewrites it, wherever it is.
  hidden.add(config.sessions.dir);
  // So is what the user typed at the interactive prompt. Its folder too: trimming renames a new
  // file over the old one, and a rename on the host detaches the mount that covered the old one
  // from a sandbox already running (another conch process trims while this one's command waits).
  if (config.history) hidden.add(dirname(config.history.file)).add(config.history.file);
  const globs = [...config.workspace.readDeny, ...(config.workspace.denySecretFiles ? SECRET_FILE_GLOBS : [])];
  if (globs.length > 0) {
    const matches = picomatch(globs, { dot: true });
    const names = await readdir(workspaceRoot).catch(() => [] as string[]);
    for (const name of names) if (matches(name)) hidden.add(join(workspaceRoot, name));
  }
  return [...hidden];
}
