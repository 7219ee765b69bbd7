// One private directory per session: tmp/ is the sandbox's /tmp, logs/ (full output of truncated
// commands) stays out of the sandbox's reach.
import { mkdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeAtExit } from '../process/exit-cleanup.ts';

export interface RunDir {
  /** Private (0700): the network proxy's socket lives here, outside the sandbox's reach. */
  root: string;
  tmpDir: string;
  logDir: string;
  /** A further private, empty /tmp for a run that overlaps the others (host/session.ts lanes). */
  laneTmpDir(): string;
  remove(): Promise<void>;
}

export async function openRunDir(): Promise<RunDir> {
  const root = await mkdtemp(join(tmpdir(), 'conch-run-'));
  // Removed by remove(), or at exit on any path that never reaches it (a setup error, a second Ctrl-C).
  const keep = removeAtExit(root);
  const tmpDir = join(root, 'tmp');
  await mkdir(tmpDir, { mode: 0o700 });
  let lanes = 0;
  return {
    root,
    tmpDir,
    logDir: join(root, 'logs'),
    laneTmpDir() {
      const dir = join(root, `tmp-${++lanes}`);
      mkdirSync(dir, { mode: 0o700 });
      return dir;
    },
    async remove() {
      await rm(root, { recursive: true, force: true });
      keep();
    },
  };
}
