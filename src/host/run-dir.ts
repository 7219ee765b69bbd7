// One private directory per session: tmp/ is the sandbox's /tmp, logs/ (full output of truncated
// commands) stays out of the sandbox's reach. Its name carries the process's identity, so that the
// directory of a conch that could not clean up (SIGKILL, the OOM killer, a crash) is removed by the
// next conch of the user instead of staying in /tmp for good with whatever its commands left there.
import { lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeAtExit } from '../process/exit-cleanup.ts';
import { rememberLogDir } from '../process/output.ts';
import { rememberDirectory } from '../sandbox/index.ts';
import { recoverLeftovers } from '../sandbox/placeholders.ts';
import { liveness, selfTag } from '../process/identity.ts';

const PREFIX = 'conch-run-';
const TAGGED = /^conch-run-(\d+)-(\d+)-(\d+)-[^/]+$/;

/** mkdtemp's prefix for a run directory of this process (in TMPDIR). */
export function runDirPrefix(): string {
  const me = selfTag();
  return join(tmpdir(), me ? `${PREFIX}${me.ns}-${me.pid}-${me.start}-` : PREFIX);
}

let swept = false;

/**
 * Remove the run directories of this user's conch processes that are gone, once per process. Only
 * directories (never links) owned by this user, named for a process of this pid namespace that no
 * longer runs; anything else (another user's, another container's, a live run's) is left alone.
 */
export function sweepStaleRunDirs(dir: string = tmpdir()): Promise<void> {
  if (swept) return Promise.resolve();
  swept = true;
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return Promise.resolve();
  }
  const stale = names.filter((name) => {
    const m = TAGGED.exec(name);
    if (!m || liveness({ ns: m[1]!, pid: Number(m[2]), start: m[3]! }) !== 'dead') return false;
    try {
      const info = lstatSync(join(dir, name));
      return info.isDirectory() && (uid === undefined || info.uid === uid);
    } catch {
      return false;
    }
  });
  return Promise.all(stale.map((name) => rm(join(dir, name), { recursive: true, force: true }).catch(() => {}))).then(() => {});
}

export interface RunDir {
  /** Private (0700): the network proxy's socket lives here, outside the sandbox's reach. */
  root: string;
  tmpDir: string;
  logDir: string;
  /** A further private, empty /tmp: for a run that overlaps the others (host/session.ts lanes), and for each MCP server. */
  laneTmpDir(): string;
  remove(): Promise<void>;
}

export async function openRunDir(): Promise<RunDir> {
  // In the background: a start never waits for a dead run's files to go. The end does: conch ends
  // with process.exit, which would cut a removal still under way and leave the directory half gone.
  const sweeping = sweepStaleRunDirs();
  const root = await mkdtemp(runDirPrefix());
  // Removed by remove(), or at exit on any path that never reaches it (a setup error, a second Ctrl-C).
  const keep = removeAtExit(root);
  const tmpDir = join(root, 'tmp');
  await mkdir(tmpDir, { mode: 0o700 });
  // The sandbox mounts it writable: what it leads to now is what every command gets (sandbox/index.ts).
  rememberDirectory(tmpDir);
  const logDir = join(root, 'logs');
  rememberLogDir(logDir);
  let lanes = 0;
  return {
    root,
    tmpDir,
    logDir,
    laneTmpDir() {
      const dir = join(root, `tmp-${++lanes}`);
      mkdirSync(dir, { mode: 0o700 });
      rememberDirectory(dir);
      return dir;
    },
    async remove() {
      // A killed run's placeholders too (empty .git, HEAD, .env.* in its workspace), not only at a
      // shell command: a run may run none. At the end, where it costs the start nothing.
      recoverLeftovers();
      await Promise.all([rm(root, { recursive: true, force: true }), sweeping]);
      keep();
    },
  };
}
