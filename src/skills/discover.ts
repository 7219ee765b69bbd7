// Where skills live, in precedence order (a later folder's skill overrides an earlier one of the same
// name): ~/.agents/skills, conch's own config folder, then the project's .agents/skills folders from
// the repository root down to the working directory, so the most specific one wins (as Codex does).
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

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
}

/** A bound on one folder's entries: a hostile repository must not make every start scan forever. */
export const MAX_SKILLS_PER_FOLDER = 500;

export async function skillRoots(opts: { home: string; configDir: string; cwd: string }): Promise<SkillRoot[]> {
  const roots: SkillRoot[] = [
    { source: 'user', dir: join(opts.home, '.agents', 'skills') },
    { source: 'conch', dir: join(opts.configDir, 'skills') },
  ];
  const cwd = await realpath(opts.cwd).catch(() => opts.cwd);
  const chain = await repositoryChain(cwd);
  const seen = new Set(await Promise.all(roots.map((r) => realpath(r.dir).catch(() => r.dir))));
  for (const dir of chain) {
    const skills = join(dir, '.agents', 'skills');
    // Run from $HOME, the workspace's folder is the user's own: it is not a project's.
    if (seen.has(await realpath(skills).catch(() => skills))) continue;
    roots.push({ source: 'project', dir: skills });
  }
  return roots;
}

/**
 * The directories from the repository root (the nearest ancestor holding `.git`) down to `cwd`;
 * just `cwd` outside a repository, so a stray folder above never joins in.
 */
async function repositoryChain(cwd: string): Promise<string[]> {
  const chain: string[] = [];
  for (let dir = cwd; ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (await exists(join(dir, '.git'))) return chain;
    if (dirname(dir) === dir) return [cwd];
  }
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** The skill folders of one root (each a directory, or a link to one, holding SKILL.md), sorted by name. */
export async function scanRoot(root: SkillRoot): Promise<SkillCandidate[]> {
  let entries;
  try {
    entries = await readdir(root.dir, { withFileTypes: true });
  } catch {
    return []; // absent or unreadable: no skills from here
  }
  const names = entries
    .filter((e) => !e.name.startsWith('.') && (e.isDirectory() || e.isSymbolicLink()))
    .map((e) => e.name)
    .sort()
    .slice(0, MAX_SKILLS_PER_FOLDER);
  const found = await Promise.all(
    names.map(async (dirName) => {
      const dir = join(root.dir, dirName);
      const file = join(dir, 'SKILL.md');
      // People link skill folders in from a shared checkout, so links are followed.
      const isSkill = await stat(file).then(
        (s) => s.isFile(),
        () => false,
      );
      return isSkill ? { root, dirName, dir, file } : null;
    }),
  );
  return found.filter((c): c is SkillCandidate => c !== null);
}
