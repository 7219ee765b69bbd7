import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalog } from '../../src/tools/catalog.ts';
import type { Tool, ToolContext } from '../../src/tools/define.ts';
import type { ToolResult } from '../../src/core/content.ts';
import { loadPlugins } from '../../src/plugins/load.ts';
import { probeSandbox } from '../../src/sandbox/index.ts';
import { makeContext } from '../support/plugin-context.ts';

let root: string;
let repo: string;
let tools: Map<string, Tool>;
let catalog: Catalog;
let ctx: ToolContext;

const sandbox = await probeSandbox();
if (!sandbox.ok) console.warn(`SKIPPING the sandboxed git test: the sandbox cannot run here: ${sandbox.detail}`);

async function sh(command: string, cwd = repo): Promise<string> {
  const proc = Bun.spawn(['/bin/sh', '-c', command], { cwd, stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`${command}: ${err}`);
  return out;
}

async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const checked = catalog.validate(name, JSON.stringify(args));
  if (!checked.ok) return { text: checked.message, isError: true };
  const result = (await tools.get(name)!.execute(checked.args, ctx)) as ToolResult;
  return { text: result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), isError: result.isError === true };
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'conch-git-'));
  const configDir = join(root, 'config');
  await mkdir(configDir);
  const loaded = await loadPlugins({
    configDir,
    cwd: root,
    settings: { enabled: true, dirs: [], firstParty: ['git'], projectTools: false, allowOverride: [] },
    reserved: new Map(),
    cacheDir: join(root, 'cache'),
  });
  expect(loaded.reports).toMatchObject([{ status: 'loaded', tools: ['git_status', 'git_diff', 'git_checkpoint', 'git_restore_paths'] }]);
  tools = new Map(loaded.tools.map((t) => [t.name, t]));
  catalog = new Catalog();
  for (const tool of loaded.tools) catalog.register(tool);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

beforeEach(async () => {
  repo = await mkdtemp(join(root, 'repo-'));
  await sh('git init -q -b main . && git config user.name T && git config user.email t@example.com && git config commit.gpgsign false');
  await writeFile(join(repo, 'a.txt'), 'a1\n');
  await writeFile(join(repo, 'b.txt'), 'b1\n');
  await writeFile(join(repo, 'd.txt'), 'd1\n');
  await writeFile(join(repo, "it's a file.txt"), 'q1\n');
  await sh('git add -A && git commit -q -m init');
  ctx = await makeContext(repo);
});

describe('git plugin', () => {
  test('git_status shows the branch and changes; outside a repository it is a tool error', async () => {
    expect((await call('git_status', {})).text).toBe('## main\n(no changes)');
    await writeFile(join(repo, 'a.txt'), 'a2\n');
    await writeFile(join(repo, 'new.txt'), 'n\n');
    const status = await call('git_status', {});
    expect(status.text.split('\n')).toEqual(['## main', ' M a.txt', '?? new.txt']);

    ctx = await makeContext(await mkdtemp(join(root, 'plain-')));
    const outside = await call('git_status', {});
    expect(outside.isError).toBe(true);
    expect(outside.text).toContain('not a git repository');
  });

  test('git_diff pages by lines, with next_offset until the end', async () => {
    await writeFile(join(repo, 'a.txt'), Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n');
    const first = await call('git_diff', { limit: 10 });
    const [header, ...body] = first.text.split('\n');
    const total = Number(/of (\d+)/.exec(header!)![1]);
    expect(total).toBeGreaterThan(30);
    expect(header).toBe(`lines 1-10 of ${total}; next_offset: 10`);
    expect(body).toHaveLength(10);
    expect(body[0]).toBe('diff --git a/a.txt b/a.txt');

    const full = await sh('git --no-pager diff --no-color');
    const pages: string[] = [];
    for (let offset = 0; ; ) {
      const page = (await call('git_diff', { offset, limit: 7 })).text.split('\n');
      pages.push(...page.slice(1));
      const next = /next_offset: (\d+)/.exec(page[0]!);
      if (!next) {
        expect(page[0]).toEndWith('(end)');
        break;
      }
      offset = Number(next[1]);
    }
    expect(pages.join('\n') + '\n').toBe(full);

    expect((await call('git_diff', { staged: true })).text).toBe('no staged changes');
    await sh('git add a.txt');
    expect((await call('git_diff', { staged: true, paths: ['a.txt'], limit: 1 })).text).toContain('diff --git a/a.txt b/a.txt');
    expect((await call('git_diff', { paths: ['b.txt'] })).text).toBe('no unstaged changes');
  });

  test('git_checkpoint commits exactly the named paths (new, changed, deleted) and nothing else', async () => {
    await writeFile(join(repo, 'a.txt'), 'a2\n');
    await writeFile(join(repo, 'b.txt'), 'b2\n');
    await sh('git add b.txt'); // someone else's staged change must stay staged and uncommitted
    await writeFile(join(repo, 'c.txt'), 'c\n');
    await rm(join(repo, 'd.txt'));
    const message = `fix: it's "quoted" $(touch pwned) \`touch pwned2\``;
    const result = await call('git_checkpoint', { message, paths: ['a.txt', 'c.txt', 'd.txt'] });
    expect(result.isError).toBe(false);
    expect(result.text).toStartWith('committed ');

    expect((await sh('git log -1 --format=%B')).trim()).toBe(message);
    expect((await sh('git show --name-status --format= HEAD')).trim().split('\n').sort()).toEqual(['A\tc.txt', 'D\td.txt', 'M\ta.txt']);
    expect((await sh('git status --short')).trim()).toBe('M  b.txt');
    expect(existsSync(join(repo, 'pwned'))).toBe(false);
    expect(existsSync(join(repo, 'pwned2'))).toBe(false);
  });

  test('git_checkpoint refuses an empty list, in the schema and in execute; nothing to commit is an error', async () => {
    const viaSchema = await call('git_checkpoint', { message: 'm', paths: [] });
    expect(viaSchema.isError).toBe(true);
    expect(viaSchema.text).toContain('paths');
    const direct = (await tools.get('git_checkpoint')!.execute({ message: 'm', paths: [] }, ctx)) as ToolResult;
    expect(direct).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringContaining('at least one path') }] });
    const nothing = await call('git_checkpoint', { message: 'm', paths: ['a.txt'] });
    expect(nothing.isError).toBe(true);
    expect((await sh('git rev-list --count HEAD')).trim()).toBe('1');
  });

  test('git_restore_paths restores only the named paths, names with quotes included', async () => {
    await writeFile(join(repo, 'a.txt'), 'changed\n');
    await writeFile(join(repo, "it's a file.txt"), 'changed\n');
    await writeFile(join(repo, 'b.txt'), 'keep me\n');
    await sh('git add a.txt');
    const result = await call('git_restore_paths', { paths: ['a.txt', "it's a file.txt"] });
    expect(result).toEqual({ text: 'restored 2 paths to HEAD', isError: false });
    expect(await readFile(join(repo, 'a.txt'), 'utf8')).toBe('a1\n');
    expect(await readFile(join(repo, "it's a file.txt"), 'utf8')).toBe('q1\n');
    expect(await readFile(join(repo, 'b.txt'), 'utf8')).toBe('keep me\n');
    expect((await sh('git status --short')).trim()).toBe('M b.txt');
  });

  test('paths outside the workspace are refused by the workspace policy before git runs', async () => {
    const result = await call('git_restore_paths', { paths: ['../elsewhere.txt'] });
    expect(result.isError).toBe(true);
    expect(result.text).toContain('../elsewhere.txt');
    const diff = await call('git_diff', { paths: ['/etc/passwd'] });
    expect(diff.isError).toBe(true);
  });

  test.skipIf(!sandbox.ok)('under the sandbox: git reads work, and a checkpoint fails on the read-only .git with a clear hint', async () => {
    ctx = await makeContext(repo, { sandbox: true });
    await writeFile(join(repo, 'a.txt'), 'a2\n');
    await writeFile(join(repo, '.env.preview'), 'REAL=1\n');
    const status = (await call('git_status', {})).text;
    expect(status).toContain(' M a.txt');
    // The sandbox's empty placeholders for absent protected names are not shown; real files are.
    expect(status).not.toContain('.env.local');
    expect(status).toContain('?? .env.preview');
    expect((await call('git_diff', {})).text).toContain('+a2');
    const checkpoint = await call('git_checkpoint', { message: 'm', paths: ['a.txt'] });
    expect(checkpoint.isError).toBe(true);
    expect(checkpoint.text).toContain("conch's sandbox keeps .git read-only");
    expect((await sh('git rev-list --count HEAD')).trim()).toBe('1');
  });
});
