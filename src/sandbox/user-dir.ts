// conch's per-user state directory on the host: <tmpdir>/conch-<uid>, mode 0700, owned by this user
// (checked, since /tmp is shared and someone else may have created the name first). It holds the
// seccomp program (seccomp-fd.ts) and the placeholder records (placeholder-records.ts). Inside the
// sandbox /tmp is the run's own temp dir, so no command sees it.
//
// When the shared name is unusable (someone else's, or not private), a private directory for this
// process is used instead and removed at exit; what is kept there is then not shared with other
// conch processes (`shared: false`).
import { lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface UserDir {
  path: string;
  /** The per-user directory other conch processes of this user find too. */
  shared: boolean;
}

let cached: UserDir | null = null;

export function userStateDir(): UserDir {
  if (cached) return cached;
  const uid = process.getuid?.() ?? 0;
  const shared = join(tmpdir(), `conch-${uid}`);
  try {
    mkdirSync(shared, 0o700);
  } catch {
    // exists already (ours from an earlier run, or someone else's: checked next)
  }
  try {
    const info = lstatSync(shared);
    if (info.isDirectory() && info.uid === uid && (info.mode & 0o077) === 0) return (cached = { path: shared, shared: true });
  } catch {
    // fall through to a private directory
  }
  const made = mkdtempSync(join(tmpdir(), 'conch-state-'));
  process.on('exit', () => rmSync(made, { recursive: true, force: true }));
  return (cached = { path: made, shared: false });
}

/** The directory vanished (a temp cleaner during a long run): look again on next use. */
export function forgetUserStateDir(): void {
  cached = null;
}
