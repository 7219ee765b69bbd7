// Where skills live, in precedence order (a later folder's skill overrides an earlier one of the same
// name): ~/.agents/skills, conch's own config folder, then the project's .agents/skills folders from
// the repository root down to the working directory, so the most specific one wins (as Codex does).
// Synchronous on purpose: a start does this before anything else can run, and a sync stat costs a
// few microseconds where an awaited one costs a thread-pool round trip (5x slower for 50 skills).
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repositoryChain } from '../workspace/repository-chain.ts';
import type { FileStamp } from './cache.ts';

export type SkillSource = 'user' | 'conch' | 'project';

export interface SkillRoot {
  source: SkillSource;
  dir: string;
}

export interface SkillCandidate {
  root: SkillRoot;
  /** The skill's directory name (what its `name` must equal). */
  dirName: string;
  dir: string;
  file: string;
  /** SKILL.md's stat, to tell whether the cached parse still holds. */
  stamp: FileStamp;
}

/** A bound on one folder's entries: a hostile repository must not make every start scan forever. */
export const MAX_SKILLS_PER_FOLDER = 500;

export function skillRoots(opts: { home: string; configDir: string; cwd: string }): SkillRoot[] {
  const roots: SkillRoot[] = [
    { source: 'user', dir: join(opts.home, '.agents', 'skills') },
    { source: 'conch', dir: join(opts.configDir, 'skills') },
  ];
  const cwd = real(opts.cwd);
  const seen = new Set(roots.map((r) => real(r.dir)));
  for (const dir of repositoryChain(cwd)) {
    const skills = join(dir, '.agents', 'skills');
    // Run from $HOME, the workspace's folder is the user's own: it is not a project's.
    if (seen.has(real(skills))) continue;
    roots.push({ source: 'project', dir: skills });
  }
  return roots;
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The skill folders of one root (each a directory, or a link to one, holding SKILL.md), sorted by name. */
export function scanRoot(root: SkillRoot): SkillCandidate[] {
  let entries;
  try {
    entries = readdirSync(root.dir, { withFileTypes: true });
  } catch {
    return []; // absent or unreadable: no skills from here
  }
  const names = entries
    .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink()))
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_SKILLS_PER_FOLDER);
  const found: SkillCandidate[] = [];
  for (const dirName of names) {
    const dir = join(root.dir, dirName);
    const file = join(dir, 'SKILL.md');
    // People link skill folders in from a shared checkout, so links are followed.
    let st;
    try {
      st = statSync(file, { throwIfNoEntry: false });
    } catch {
      continue; // unreadable folder: not a skill conch can use
    }
    if (!st?.isFile()) continue;
    found.push({ root, dirName, dir, file, stamp: { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino } });
  }
  return found;
}
