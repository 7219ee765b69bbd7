// The workspace's files as the map sees them: .gitignore honoured (every level, like git), .git and
// symlinked folders never entered, and every folder classified as code or one kind of noise.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { openVerified } from 'conch';

export interface WalkedFile {
  /** Workspace-relative, '/'-separated. */
  path: string;
  size: number;
  mtimeMs: number;
}

/** Folder names that fold into one summary line, by kind. */
const NOISE: Record<string, string> = {};
for (const [kind, names] of Object.entries({
  tests: ['test', 'tests', '__tests__', 'spec', 'specs', 'testdata', 'fixtures', '__fixtures__', 'e2e'],
  docs: ['docs', 'doc', 'documentation', 'examples'],
  vendored: ['vendor', 'vendors', 'third_party', 'third-party', 'thirdparty', 'node_modules', 'external', 'extern', 'deps'],
  ci: ['.github', '.gitlab', '.circleci', '.ci', 'ci', '.buildkite', '.husky'],
  generated: ['dist', 'build', 'out', 'generated', '__generated__', 'gen', 'target', 'coverage', '.next', '__pycache__'],
})) {
  for (const name of names) NOISE[name] = kind;
}

/** The kind of noise a folder name is, or null for a code folder. */
export function noiseKind(name: string): string | null {
  return NOISE[name.toLowerCase()] ?? null;
}

const MAX_FILES = 200_000;

/**
 * Every regular file under root that .gitignore does not exclude. `allowed` is the read policy: a
 * path it refuses is left out as if absent. Symlinks are not followed (a link could lead out).
 */
export async function walk(root: string, allowed: (path: string) => Promise<boolean>, signal?: AbortSignal): Promise<WalkedFile[]> {
  const files: WalkedFile[] = [];
  const rules: { base: string; ig: Ignore }[] = [];
  const visit = async (dir: string): Promise<void> => {
    signal?.throwIfAborted();
    const abs = join(root, dir);
    const local = await readRegular(join(abs, '.gitignore')).then((b) => b.toString('utf8'), () => null);
    const pushed = local !== null;
    if (pushed) rules.push({ base: dir, ig: ignore().add(local) });
    try {
      const entries = await readdir(abs, { withFileTypes: true }).catch(() => []);
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const subdirs: string[] = [];
      for (const entry of entries) {
        if (entry.name === '.git') continue;
        const rel = dir ? `${dir}/${entry.name}` : entry.name;
        const isDir = entry.isDirectory();
        if (!isDir && !entry.isFile()) continue;
        if (ignored(rules, rel, isDir)) continue;
        if (isDir) {
          subdirs.push(rel);
          continue;
        }
        if (files.length >= MAX_FILES || !(await allowed(rel))) continue;
        const stat = await lstat(join(root, rel)).catch(() => null);
        if (stat?.isFile()) files.push({ path: rel, size: stat.size, mtimeMs: stat.mtimeMs });
      }
      for (const sub of subdirs) await visit(sub);
    } finally {
      if (pushed) rules.pop();
    }
  };
  await visit('');
  return files;
}

/**
 * A regular file's bytes through a non-blocking descriptor: the model can make any name in the
 * workspace a FIFO (opened by path it would hang the call, and the thread under it, for good) or a
 * link. Throws with code EISDIR or ENOTREG for what is not a file, ELOOP/ECHANGED for a link.
 */
export async function readRegular(abs: string): Promise<Buffer> {
  const fh = await openVerified(abs);
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw Object.assign(new Error(`${abs} is a directory`), { code: 'EISDIR' });
    if (!st.isFile()) throw Object.assign(new Error(`${abs} is not a regular file`), { code: 'ENOTREG' });
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

function ignored(rules: { base: string; ig: Ignore }[], rel: string, isDir: boolean): boolean {
  // Later (deeper) files decide last, and a negation there can re-include, as in git.
  let result = false;
  for (const { base, ig } of rules) {
    const local = base ? rel.slice(base.length + 1) : rel;
    const verdict = ig.test(isDir ? `${local}/` : local);
    if (verdict.ignored) result = true;
    else if (verdict.unignored) result = false;
  }
  return result;
}
