// The workspace's AGENTS.md goes into the system prompt after the read policy approved it. What is
// read must be the file that was checked: the swap (a link to a denied file, a FIFO, a directory on
// the way replaced by a link) is made deterministic by running it right after the real check.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENTS_MD_MAX_BYTES, loadGuidance, PROJECT_AGENTS_MD_MAX_BYTES, systemPrompt } from '../../src/agent/prompt.ts';
import { Workspace } from '../../src/workspace/paths.ts';

let base: string;
let ws: string;
let config: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-agents-md-')));
  ws = join(base, 'ws');
  config = join(base, 'config');
  await mkdir(ws);
  await mkdir(config);
  await writeFile(join(base, 'secret.env'), 'hunter2\n');
  await writeFile(join(base, 'notes.md'), 'my private notes\n');
  await writeFile(join(ws, 'AGENTS.md'), 'Use tabs.\n');
});
afterEach(() => rm(base, { recursive: true, force: true }));

/** The workspace's guidance under a policy confined to the workspace, with `swap` run after the check. */
async function guidance(swap: () => Promise<void> = async () => {}) {
  const workspace = await Workspace.open({ root: ws, unrestricted: false, readRoots: [ws] });
  const found = await loadGuidance(
    config,
    ws,
    async (path) => {
      const approved = await workspace.resolve(path, 'read');
      await swap();
      return approved;
    },
    base,
  );
  return found.map((g) => g.text).join('\n');
}

async function replace(make: (tmp: string) => Promise<unknown>) {
  const tmp = join(ws, 'swap.tmp');
  await make(tmp);
  await rename(tmp, join(ws, 'AGENTS.md'));
}

test('unswapped, it is read', async () => {
  expect(await guidance()).toBe('Use tabs.\n');
});

test('swapped for a link to a file the policy denies after the check: not read', async () => {
  expect(await guidance(() => replace((tmp) => symlink(join(base, 'secret.env'), tmp)))).not.toContain('hunter2');
});

test('swapped for a FIFO after the check: no hang, not read', async () => {
  const text = await guidance(() => replace((tmp) => Bun.spawn(['mkfifo', tmp]).exited));
  expect(text).toBe('');
});

test('a link inside the workspace is followed; one out of it is not, even to a file the policy would let read open', async () => {
  await writeFile(join(ws, 'CLAUDE.md'), 'Answer briefly.\n');
  await rm(join(ws, 'AGENTS.md'));
  await symlink('CLAUDE.md', join(ws, 'AGENTS.md'));
  expect(await guidance()).toBe('Answer briefly.\n');
  await rm(join(ws, 'AGENTS.md'));
  await symlink(join(base, 'notes.md'), join(ws, 'AGENTS.md'));
  const workspace = await Workspace.open({ root: ws, unrestricted: false });
  const found = await loadGuidance(config, ws, (path) => workspace.resolve(path, 'read'), base);
  expect(found).toEqual([]);
});

// A run in a monorepo's package: the AGENTS.md files from the repository root down to the working
// directory, root first, each passing the same checks as the workspace's own.
describe('the repository chain', () => {
  let repo: string;
  let api: string;
  beforeEach(async () => {
    repo = join(base, 'repo');
    api = join(repo, 'packages', 'api');
    await mkdir(join(repo, '.git'), { recursive: true });
    await mkdir(api, { recursive: true });
    await writeFile(join(repo, 'AGENTS.md'), 'Root: run npm test.\n');
    await writeFile(join(api, 'AGENTS.md'), 'API: never touch the schema.\n');
  });

  /** Guidance for a run in `cwd` under the default policy plus the secret-file deny globs. */
  async function chain(cwd: string, home = join(base, 'home'), swap: (path: string) => Promise<void> = async () => {}) {
    const workspace = await Workspace.open({ root: cwd, unrestricted: false, denySecretFiles: true });
    return loadGuidance(
      config,
      cwd,
      async (path) => {
        const approved = await workspace.resolve(path, 'read');
        await swap(path);
        return approved;
      },
      home,
    );
  }

  test('root first, nearest last, each labelled by its path from the working directory', async () => {
    await writeFile(join(config, 'AGENTS.md'), 'User: tabs.\n');
    await writeFile(join(repo, 'packages', 'AGENTS.md'), 'Packages: one per folder.\n');
    expect(await chain(api)).toEqual([
      // Where the config folder is (XDG_CONFIG_HOME), not where it usually is.
      { label: join(config, 'AGENTS.md'), text: 'User: tabs.\n' },
      { label: '../../AGENTS.md', text: 'Root: run npm test.\n' },
      { label: '../AGENTS.md', text: 'Packages: one per folder.\n' },
      { label: 'AGENTS.md', text: 'API: never touch the schema.\n' },
    ]);
    const prompt = systemPrompt({ workspaceRoot: api, tools: [], unrestricted: false, network: false, readOnly: false, guidance: await chain(api) });
    expect(prompt.indexOf('# Guidance from ../../AGENTS.md')).toBeGreaterThan(0);
    expect(prompt.indexOf('# Guidance from ../../AGENTS.md')).toBeLessThan(prompt.indexOf('# Guidance from AGENTS.md'));
    expect(prompt).toContain('the later one wins');
  });

  test('a worktree (.git is a file) is a repository too', async () => {
    await rm(join(repo, '.git'), { recursive: true });
    await writeFile(join(repo, '.git'), 'gitdir: /elsewhere/.git/worktrees/repo\n');
    expect((await chain(api)).map((g) => g.label)).toEqual(['../../AGENTS.md', 'AGENTS.md']);
  });

  test('outside a repository only the working directory\'s is read', async () => {
    await rm(join(repo, '.git'), { recursive: true });
    expect((await chain(api)).map((g) => g.text)).toEqual(['API: never touch the schema.\n']);
  });

  test('the walk never climbs above home: a .git there does not make the folders above home the project\'s', async () => {
    const home = join(base, 'home');
    const project = join(home, 'project');
    await mkdir(project, { recursive: true });
    await mkdir(join(base, '.git'));
    await writeFile(join(base, 'AGENTS.md'), 'Above home.\n');
    await writeFile(join(home, 'AGENTS.md'), 'Home.\n');
    await writeFile(join(project, 'AGENTS.md'), 'Project.\n');
    expect((await chain(project, home)).map((g) => g.text)).toEqual(['Project.\n']);
    // A repository at home itself (dotfiles) is one: home is not above home.
    await mkdir(join(home, '.git'));
    expect((await chain(project, home)).map((g) => g.text)).toEqual(['Home.\n', 'Project.\n']);
  });

  test('a nested AGENTS.md linking to a denied file in the repository, or to a file outside it, is left out', async () => {
    await writeFile(join(repo, '.env'), 'API_TOKEN=hunter2\n');
    await rm(join(api, 'AGENTS.md'));
    await symlink('../../.env', join(api, 'AGENTS.md'));
    expect((await chain(api)).map((g) => g.text)).toEqual(['Root: run npm test.\n']);
    await rm(join(api, 'AGENTS.md'));
    await symlink(join(base, 'notes.md'), join(api, 'AGENTS.md'));
    expect((await chain(api)).map((g) => g.text)).toEqual(['Root: run npm test.\n']);
    // A link inside the repository is its own guidance, and the same file is given once.
    await rm(join(api, 'AGENTS.md'));
    await symlink('../../AGENTS.md', join(api, 'AGENTS.md'));
    expect(await chain(api)).toEqual([{ label: 'AGENTS.md', text: 'Root: run npm test.\n' }]);
  });

  test('the root\'s AGENTS.md swapped for a link to a denied file after its check is not read', async () => {
    await writeFile(join(repo, '.env'), 'API_TOKEN=hunter2\n');
    const found = await chain(api, join(base, 'home'), async (path) => {
      if (path !== join(repo, 'AGENTS.md')) return;
      await symlink('.env', join(repo, 'swap.tmp'));
      await rename(join(repo, 'swap.tmp'), path);
    });
    expect(found.map((g) => g.text)).toEqual(['API: never touch the schema.\n']);
  });

  test('together they are bounded: the nearest are kept whole, the farthest cut, then left out', async () => {
    const big = (c: string) => c.repeat(AGENTS_MD_MAX_BYTES - 1000);
    const deep = join(api, 'src');
    await mkdir(deep);
    await writeFile(join(repo, 'AGENTS.md'), big('r'));
    await writeFile(join(repo, 'packages', 'AGENTS.md'), big('p'));
    await writeFile(join(api, 'AGENTS.md'), big('a'));
    await writeFile(join(deep, 'AGENTS.md'), big('d'));
    const found = await chain(deep);
    expect(found.map((g) => g.label)).toEqual(['../../AGENTS.md', '../AGENTS.md', 'AGENTS.md']);
    expect(found[2]!.text).toBe(big('d'));
    expect(found[1]!.text).toBe(big('a'));
    expect(found[0]!.text).toStartWith('p'.repeat(PROJECT_AGENTS_MD_MAX_BYTES - 2 * (AGENTS_MD_MAX_BYTES - 1000)) + '\n[');
    expect(found[0]!.text).toContain('limited to');
    const bytes = found.reduce((n, g) => n + Buffer.byteLength(g.text.replace(/\n\[AGENTS.md truncated[^\]]*\]$/, '')), 0);
    expect(bytes).toBe(PROJECT_AGENTS_MD_MAX_BYTES);
  });
});
