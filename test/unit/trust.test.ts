import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { chmod, chown, mkdir, mkdtemp, readFile, realpath, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFolder } from '../../src/plugins/snapshot.ts';
import { hashFolder, isTrusted, projectConfigTrust, trustedMcpHash, trustFilePath, trustState, trustWorkspace, workspaceTrusted } from '../../src/plugins/trust.ts';

let root: string;
beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'conch-trust-')));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function workspace(files: Record<string, string>): Promise<{ configDir: string; cwd: string }> {
  const base = await mkdtemp(join(root, 'ws-'));
  const cwd = join(base, 'work');
  for (const [rel, text] of Object.entries(files)) {
    const path = join(cwd, '.conch', 'tools', rel);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, text);
  }
  await mkdir(cwd, { recursive: true });
  return { configDir: join(base, 'config'), cwd };
}

describe('hashFolder', () => {
  test('is deterministic and changes with a name, a byte, or a new nested file', async () => {
    const a = await workspace({ 'a.ts': 'one', 'sub/index.ts': 'two' });
    const b = await workspace({ 'sub/index.ts': 'two', 'a.ts': 'one' });
    const ha = await hashFolder(join(a.cwd, '.conch', 'tools'));
    expect(ha.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(ha.files).toEqual(['a.ts', 'sub/index.ts']);
    expect((await hashFolder(join(b.cwd, '.conch', 'tools'))).hash).toBe(ha.hash);

    const variants: Record<string, string>[] = [{ 'a.ts': 'onE', 'sub/index.ts': 'two' }, { 'b.ts': 'one', 'sub/index.ts': 'two' }, { 'a.ts': 'one', 'sub/index.ts': 'two', 'sub/x.json': '' }];
    for (const files of variants) {
      const other = await workspace(files);
      expect((await hashFolder(join(other.cwd, '.conch', 'tools'))).hash).not.toBe(ha.hash);
    }
    // Content moved between files is not the same folder.
    const moved = await workspace({ 'a.ts': 'onetwo', 'sub/index.ts': '' });
    expect((await hashFolder(join(moved.cwd, '.conch', 'tools'))).hash).not.toBe(ha.hash);
  });

  test('a missing folder hashes as empty, and a symlink loop does not hang', async () => {
    const empty = await hashFolder(join(root, 'does-not-exist'));
    expect(empty.files).toEqual([]);
    const ws = await workspace({ 'a.ts': 'x' });
    await symlink('..', join(ws.cwd, '.conch', 'tools', 'loop'));
    const looped = await hashFolder(join(ws.cwd, '.conch', 'tools'));
    expect(looped.files).toEqual(['a.ts']);
  });

  test('a FIFO in the folder is named, not read (hashing never blocks on it)', async () => {
    const ws = await workspace({ 'a.ts': 'x' });
    const before = await hashFolder(join(ws.cwd, '.conch', 'tools'));
    const made = Bun.spawnSync(['mkfifo', join(ws.cwd, '.conch', 'tools', 'pipe.ts')]);
    expect(made.exitCode).toBe(0);
    const after = await hashFolder(join(ws.cwd, '.conch', 'tools'));
    expect(after.files).toEqual(['a.ts']);
    expect(after.hash).not.toBe(before.hash);
  });
});

describe('a folder far larger than plugins', () => {
  // A pull can add `.conch/tools/z -> /usr` (git keeps symlinks): read whole, that was 5 GB in memory
  // at every start in a trusted workspace. A sparse file stands for it here: huge, yet nothing on disk.
  async function bloated(): Promise<{ configDir: string; cwd: string; tools: string }> {
    const ws = await workspace({ 'a.ts': 'export default []' });
    const tools = join(ws.cwd, '.conch', 'tools');
    await mkdir(join(ws.cwd, 'outside'));
    await writeFile(join(ws.cwd, 'outside', 'big.bin'), '');
    await truncate(join(ws.cwd, 'outside', 'big.bin'), 8 * 1024 * 1024 * 1024);
    return { ...ws, tools };
  }

  test('is refused unread, naming the bound', async () => {
    const { tools } = await bloated();
    await symlink('../../outside', join(tools, 'z'));
    const e = await readFolder(tools).catch((error) => error);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).message).toContain('more than 64 MiB');
  });

  test('trusted before, it is a changed folder whose plugins are skipped; `conch trust` refuses it', async () => {
    const ws = await bloated();
    expect((await trustWorkspace(ws.configDir, ws.cwd)).ok).toBe(true);
    await symlink('../../outside', join(ws.tools, 'z'));
    expect((await trustState(ws.configDir, ws.cwd)).state).toBe('changed');
    expect(await projectConfigTrust(ws.configDir, ws.cwd, '')).toBe('untrusted');
    const again = await trustWorkspace(ws.configDir, ws.cwd);
    expect(again.ok).toBe(false);
    expect(again.ok ? '' : again.message).toContain('more than 64 MiB');
    // The record stays as it was: still not trusted for the bloated folder.
    expect((await trustState(ws.configDir, ws.cwd)).state).toBe('changed');
  });

  test('too many entries is refused too', async () => {
    const ws = await workspace({ 'a.ts': 'export default []' });
    const many = join(ws.cwd, 'many');
    await mkdir(many);
    await Promise.all(Array.from({ length: 10_001 }, (_, i) => writeFile(join(many, `f${i}`), '')));
    await symlink('../../many', join(ws.cwd, '.conch', 'tools', 'z'));
    const e = await readFolder(join(ws.cwd, '.conch', 'tools')).catch((error) => error);
    expect((e as Error).message).toContain('more than 10000 entries');
  });
});

describe('trust', () => {
  test('untrusted → trusted → changed → trusted again', async () => {
    const ws = await workspace({ 'tool.ts': 'export default 1;' });
    expect(await trustState(ws.configDir, ws.cwd)).toMatchObject({ state: 'untrusted', reason: expect.stringContaining('run `conch trust`') });
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(false);

    const trusted = await trustWorkspace(ws.configDir, ws.cwd);
    expect(trusted).toMatchObject({ ok: true, files: ['tool.ts'] });
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);
    const record = JSON.parse(await readFile(trustFilePath(ws.configDir), 'utf8'));
    expect(record.version).toBe(1);
    expect(record.workspaces[ws.cwd].hash).toBe((trusted as { hash: string }).hash);

    await writeFile(join(ws.cwd, '.conch', 'tools', 'added.ts'), 'export default 2;');
    expect(await trustState(ws.configDir, ws.cwd)).toMatchObject({ state: 'changed', reason: expect.stringContaining('changed since trusted') });
    await trustWorkspace(ws.configDir, ws.cwd);
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);
  });

  test('the project config is pinned to its text as trusted; a record from before config hashes counts as changed', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    const text = '{"model":"team/qwen"}';
    await writeFile(join(ws.cwd, '.conch', 'config.json'), text);
    expect(await projectConfigTrust(ws.configDir, ws.cwd, text)).toBe('untrusted');
    await trustWorkspace(ws.configDir, ws.cwd);
    expect(await projectConfigTrust(ws.configDir, ws.cwd, text)).toBe('trusted');
    expect(await projectConfigTrust(ws.configDir, ws.cwd, `${text}\n`)).toBe('changed');
    // A changed .conch/tools withdraws the trust as a whole.
    await writeFile(join(ws.cwd, '.conch', 'tools', 'added.ts'), 'y');
    expect(await projectConfigTrust(ws.configDir, ws.cwd, text)).toBe('untrusted');
    await trustWorkspace(ws.configDir, ws.cwd);
    const file = JSON.parse(await readFile(trustFilePath(ws.configDir), 'utf8'));
    delete file.workspaces[ws.cwd].config;
    await writeFile(trustFilePath(ws.configDir), JSON.stringify(file));
    expect(await projectConfigTrust(ws.configDir, ws.cwd, text)).toBe('changed');
  });

  test('the canonical path is recorded: a symlink to the workspace is the same workspace, a copy is not', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    const link = join(root, `link-${Date.now()}`);
    await symlink(ws.cwd, link);
    await trustWorkspace(ws.configDir, link);
    expect(Object.keys(JSON.parse(await readFile(trustFilePath(ws.configDir), 'utf8')).workspaces)).toEqual([ws.cwd]);
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);

    const copy = await workspace({ 'tool.ts': 'x' });
    expect(await isTrusted(ws.configDir, copy.cwd)).toBe(false);
  });

  test('trusting a workspace without .conch/tools, then adding one, needs trust again', async () => {
    const ws = await workspace({});
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: true, files: [] });
    await mkdir(join(ws.cwd, '.conch', 'tools'), { recursive: true });
    await writeFile(join(ws.cwd, '.conch', 'tools', 'late.ts'), 'x');
    expect((await trustState(ws.configDir, ws.cwd)).state).toBe('changed');
  });

  test('a corrupt trust file trusts nothing and says how to fix it; trust refuses to overwrite it', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    await mkdir(ws.configDir, { recursive: true });
    await writeFile(trustFilePath(ws.configDir), '{ not json');
    const state = await trustState(ws.configDir, ws.cwd);
    expect(state).toMatchObject({ state: 'untrusted', reason: expect.stringContaining(`${trustFilePath(ws.configDir)} is not a valid trust file`) });
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining('delete it') });
    expect(await readFile(trustFilePath(ws.configDir), 'utf8')).toBe('{ not json');
  });
});

const PLANT = 'another user could plant the plugins, MCP servers, model and skills';

describe('a folder another user could write is not trusted', () => {

  test('a world-writable workspace (sticky or not) is refused, naming it and the fix; nothing is recorded', async () => {
    for (const mode of [0o777, 0o1777]) {
      const ws = await workspace({ 'tool.ts': 'export default 1;' });
      await chmod(ws.cwd, mode);
      const result = await trustWorkspace(ws.configDir, ws.cwd);
      expect(result.ok).toBe(false);
      const message = (result as { message: string }).message;
      expect(message).toContain(`cannot trust ${ws.cwd}: ${ws.cwd} is writable by every user (mode ${mode.toString(8).padStart(4, '0')})`);
      expect(message).toContain(PLANT);
      expect(message).toContain('chmod o-w');
      expect(await readFile(trustFilePath(ws.configDir), 'utf8').catch(() => null)).toBeNull();
    }
  });

  test('below a folder anyone can rename entries in (world-writable, no sticky bit) is refused; below a sticky one (as /tmp) is not', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    const parent = join(ws.cwd, '..');
    await chmod(parent, 0o777);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining('a folder above it, is writable by every user without the sticky bit (mode 0777)') });
    await chmod(parent, 0o1777);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: true });
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);
  });

  test('a folder trusted before and opened up since is not trusted any more, saying why', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    const text = '{"model":"openai/x"}';
    await writeFile(join(ws.cwd, '.conch', 'config.json'), text);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: true });
    await writeFile(join(ws.cwd, '.mcp.json'), '{"mcpServers":{}}');
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);
    await chmod(ws.cwd, 0o777);
    const state = await trustState(ws.configDir, ws.cwd);
    expect(state).toMatchObject({ state: 'untrusted', reason: expect.stringContaining(`workspace trust ignored: ${ws.cwd} is writable by every user`) });
    expect(await workspaceTrusted(ws.configDir, ws.cwd)).toBe(false);
    expect(await projectConfigTrust(ws.configDir, ws.cwd, text)).toBe('untrusted');
    expect(await trustedMcpHash(ws.configDir, ws.cwd)).toBeNull();
    await chmod(ws.cwd, 0o755);
    expect(await isTrusted(ws.configDir, ws.cwd)).toBe(true);
  });

  test('a folder writable by its group is trusted when the group is the user\'s own (umask 002)', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    await chmod(ws.cwd, 0o775);
    await chmod(join(ws.cwd, '..'), 0o775);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: true });
  });

  test.skipIf(process.getuid?.() !== 0)('a folder writable by a shared group, or below one, is refused (as root: group 1001)', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    await chown(ws.cwd, 0, 1001);
    await chmod(ws.cwd, 0o775);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining(`${ws.cwd} is writable by the members of group 1001 (mode 0775)`) });
    await chmod(ws.cwd, 0o755);
    await chown(join(ws.cwd, '..'), 0, 1001);
    await chmod(join(ws.cwd, '..'), 0o770);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining('a folder above it, is writable by the members of group 1001 without the sticky bit (mode 0770)') });
    await chmod(join(ws.cwd, '..'), 0o1770);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: true });
  });

  test.skipIf(process.getuid?.() !== 0)('a folder owned by another user is refused (as root: owned by uid 1001)', async () => {
    const ws = await workspace({ 'tool.ts': 'x' });
    await chown(ws.cwd, 1001, 1001);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining(`${ws.cwd} is owned by another user (uid 1001)`) });
    await chown(ws.cwd, 0, 0);
    await chown(join(ws.cwd, '..'), 1001, 1001);
    expect(await trustWorkspace(ws.configDir, ws.cwd)).toMatchObject({ ok: false, message: expect.stringContaining('is owned by another user (uid 1001)') });
  });
});
