// `conch trust` and `conch tools new` write into conch's config folder. When it cannot be written
// (a read-only folder, a file where a folder should be), each says which path, why in words and the
// fix, exits 2 (a setup error), prints no errno text or stack, and leaves what was there as it was.
import { describe, expect, test } from 'bun:test';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();
const isRoot = process.getuid?.() === 0;

function expectClean(r: { code: number; stdout: string; stderr: string }, path: string, why: string) {
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`conch: cannot write ${path} (${why})`);
  expect(r.stderr).toContain('XDG_CONFIG_HOME');
  expect(r.stderr).not.toMatch(/EACCES|ENOTDIR|EPERM|\n\s+at |Error:/);
  expect(r.stdout).toBe('');
}

describe('a config folder conch cannot write', () => {
  test('a file where the config folder should be: trust and tools new say so, exit 2', async () => {
    const blocked = join(harness.dirs.home, 'config-file');
    await writeFile(blocked, 'not a folder\n');
    const env = { XDG_CONFIG_HOME: blocked };
    const trust = await runConch({ dirs: harness.dirs, args: ['trust'], env });
    expectClean(trust, join(blocked, 'conch', 'trusted.json'), 'a file is in the way');
    const tool = await runConch({ dirs: harness.dirs, args: ['tools', 'new', 'greet'], env });
    expectClean(tool, join(blocked, 'conch', 'tools', 'greet.ts'), 'a file is in the way');
    expect(await readFile(blocked, 'utf8')).toBe('not a folder\n');
  });

  // Root writes through any permission bits: this half runs as an ordinary user (conchtest in CI).
  test.skipIf(isRoot)('a read-only config folder: trust and tools new say permission denied, exit 2, and leave the folder as it was', async () => {
    const dir = join(harness.dirs.configHome, 'conch');
    await writeFile(join(dir, 'trusted.json'), '{"version":1,"workspaces":{}}\n');
    await chmod(dir, 0o555);
    try {
      const trust = await runConch({ dirs: harness.dirs, args: ['trust'] });
      expectClean(trust, join(dir, 'trusted.json'), 'permission denied');
      const tool = await runConch({ dirs: harness.dirs, args: ['tools', 'new', 'greet'] });
      expectClean(tool, join(dir, 'tools', 'greet.ts'), 'permission denied');
      expect((await readdir(dir)).sort()).toEqual(['trusted.json']);
      expect(await readFile(join(dir, 'trusted.json'), 'utf8')).toBe('{"version":1,"workspaces":{}}\n');
    } finally {
      await chmod(dir, 0o755);
    }
  });
  if (isRoot) console.error('config-unwritable.test.ts: the read-only folder case is skipped as root (root ignores permissions); run it as an ordinary user');
});
