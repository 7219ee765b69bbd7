// A sandbox profile is a file: dropping one more *.json into sandbox-profiles/ makes its name valid
// for --profile, the config files and `conch sandbox run`, listed in the help and in the error for
// a wrong name, with no change to the code. Proved on a copy of the package (its src/ and
// sandbox-profiles/, the real node_modules linked in), run as the real CLI.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONCH, REPO } from '../support/cli.ts';
import { canRun } from './harness.ts';

let base: string;
let copy: string;
let ws: string;
let configHome: string;

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'conch-added-profile-')));
  copy = join(base, 'conch');
  for (const part of ['package.json', 'bin', 'src', 'sandbox-profiles', 'plugins']) cpSync(join(REPO, part), join(copy, part), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(copy, 'node_modules'));
  // "frozen": the read-only mounts under a new name, so a command shows which profile it got.
  const profile = JSON.parse(readFileSync(join(REPO, 'sandbox-profiles', 'read-only.json'), 'utf8'));
  writeFileSync(join(copy, 'sandbox-profiles', 'frozen.json'), JSON.stringify({ ...profile, description: 'Added by a test.' }));
  ws = join(base, 'ws');
  configHome = join(base, 'config');
  for (const d of [ws, join(configHome, 'conch'), join(base, 'home')]) mkdirSync(d, { recursive: true });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function conch(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([bin, ...args], {
    cwd: ws,
    // From source: the copy's bin/conch would otherwise find the real package's bundle through node_modules.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(base, 'home'), XDG_CONFIG_HOME: configHome, XDG_CACHE_HOME: join(base, 'cache'), TMPDIR: tmpdir(), NO_COLOR: '1', CONCH_FROM_SOURCE: '1' },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

const TOUCH = ['--', 'sh', '-c', 'touch made 2>/dev/null; echo "touch rc=$?"'];
const added = () => join(copy, 'bin', 'conch');

describe('a profile added as a file', () => {
  test('the help and the error for a wrong name list it', async () => {
    expect((await conch(added(), ['--help'])).stdout).toContain('Sandbox profile: workspace-write (default), frozen or read-only');
    const wrong = await conch(added(), ['tools', '--profile', 'frost']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--profile frost: unknown sandbox profile "frost"; available: frozen, read-only, workspace-write');
  });

  test('--profile and a config file accept it where the package without the file refuses it', async () => {
    expect((await conch(added(), ['tools', '--profile', 'frozen'])).code).toBe(0);
    const without = await conch(CONCH, ['tools', '--profile', 'frozen']);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain('unknown sandbox profile "frozen"');
    writeFileSync(join(configHome, 'conch', 'config.json'), JSON.stringify({ sandbox: { profile: 'frozen' } }));
    try {
      expect((await conch(added(), ['tools'])).code).toBe(0);
      const refused = await conch(CONCH, ['tools']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('"sandbox.profile" must be one of "workspace-write", "read-only", got "frozen"');
    } finally {
      rmSync(join(configHome, 'conch', 'config.json'));
    }
  });
});

describe.skipIf(!canRun)('a profile added as a file, in the sandbox', () => {
  test('commands run under its mounts, chosen by --profile or by the config', async () => {
    const flagged = await conch(added(), ['sandbox', 'run', '--profile', 'frozen', ...TOUCH]);
    expect(flagged.stdout).not.toContain('touch rc=0');
    expect(flagged.stdout).toContain('touch rc=');
    expect(existsSync(join(ws, 'made'))).toBe(false);
    writeFileSync(join(configHome, 'conch', 'config.json'), JSON.stringify({ sandbox: { profile: 'frozen' } }));
    try {
      const configured = await conch(added(), ['sandbox', 'run', ...TOUCH]);
      expect(configured.stdout).not.toContain('touch rc=0');
      expect(existsSync(join(ws, 'made'))).toBe(false);
    } finally {
      rmSync(join(configHome, 'conch', 'config.json'));
    }
    // The same command under the default profile writes: the refusal above was the added file's doing.
    expect((await conch(added(), ['sandbox', 'run', ...TOUCH])).stdout).toContain('touch rc=0');
    expect(existsSync(join(ws, 'made'))).toBe(true);
  });
});
