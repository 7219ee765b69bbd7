// bin/conch picks the Bun to run on. These run the real script in a fake install tree whose
// node_modules/.bin/bun is one of: Bun's postinstall placeholder, a working Bun, or nothing.
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { chmod, copyFile, link, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONCH } from '../support/cli.ts';

let base: string;
/** A PATH holding only what bin/conch itself needs, so no Bun installed on this machine interferes. */
let tools: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-bin-')));
  tools = join(base, 'tools');
  await mkdir(tools);
  for (const name of ['dirname', 'readlink', 'head', 'grep', 'find']) {
    await symlink(Bun.which(name, { PATH: '/usr/bin:/bin' })!, join(tools, name));
  }
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

// The start of the placeholder the bun package ships (bin/bun.exe before its postinstall ran).
const PLACEHOLDER = `echo "Error: Bun's postinstall script was not run." >&2
echo "" >&2
echo "This occurs when using --ignore-scripts during installation, or when using a" >&2
exit 1
`;

const fakeBun = (label: string) => `#!/bin/sh\necho ${label} "$@"\n`;

async function executable(path: string, text: string): Promise<void> {
  await writeFile(path, text);
  await chmod(path, 0o755);
}

/** A clone-like tree: bin/conch and, depending on `bun`, a node_modules/.bin with bun and bunx. */
async function tree(name: string, bun: 'placeholder' | 'linked' | 'copied' | 'none'): Promise<string> {
  const root = join(base, name);
  await mkdir(join(root, 'bin'), { recursive: true });
  await copyFile(CONCH, join(root, 'bin', 'conch'));
  await chmod(join(root, 'bin', 'conch'), 0o755);
  if (bun === 'none') return root;
  const pkg = join(root, 'node_modules', 'bun', 'bin');
  await mkdir(pkg, { recursive: true });
  await mkdir(join(root, 'node_modules', '.bin'));
  const text = bun === 'placeholder' ? PLACEHOLDER : fakeBun('local-bun');
  await executable(join(pkg, 'bun.exe'), text);
  // After the postinstall the two are one file; a placeholder install has two separate copies.
  if (bun === 'linked') await link(join(pkg, 'bun.exe'), join(pkg, 'bunx.exe'));
  else await executable(join(pkg, 'bunx.exe'), text);
  await symlink('../bun/bin/bun.exe', join(root, 'node_modules', '.bin', 'bun'));
  await symlink('../bun/bin/bunx.exe', join(root, 'node_modules', '.bin', 'bunx'));
  return root;
}

async function run(root: string, path: string[] = [tools]) {
  const proc = Bun.spawn([join(root, 'bin', 'conch'), '--version'], { cwd: root, env: { PATH: path.join(':') }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}

test("Bun's placeholder (install scripts skipped) is reported with the command that fixes it", async () => {
  const root = await tree('placeholder', 'placeholder');
  const r = await run(root);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toContain(`conch: Bun's postinstall script did not run (npm install --ignore-scripts, or a package manager that skips install scripts), so ${root}/node_modules/.bin/bun is only a placeholder.`);
  expect(r.stderr).toContain(`Run it now: (cd '${root}/node_modules/bun' && node install.js)`);
  expect(r.stderr).not.toContain('Error: Bun');

  // Inside `npm run`, node_modules/.bin is on PATH: the placeholder found there is no way out.
  const viaNpm = await run(root, [join(root, 'node_modules', '.bin'), tools]);
  expect(viaNpm.code).toBe(2);
  expect(viaNpm.stderr).toContain('Run it now:');
});

test('with the placeholder, a Bun on PATH is used instead', async () => {
  const root = await tree('placeholder-path', 'placeholder');
  const elsewhere = join(base, 'elsewhere');
  await mkdir(elsewhere);
  await executable(join(elsewhere, 'bun'), fakeBun('path-bun'));
  const r = await run(root, [elsewhere, tools]);
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe(`path-bun --no-install --no-env-file --config=/dev/null --tsconfig-override=/dev/null ${root}/src/cli/main.ts -- --version\n`);
});

test('an installed Bun runs conch, whether the postinstall linked or copied it', async () => {
  for (const kind of ['linked', 'copied'] as const) {
    const root = await tree(kind, kind);
    const r = await run(root);
    expect(r.stdout).toBe(`local-bun --no-install --no-env-file --config=/dev/null --tsconfig-override=/dev/null ${root}/src/cli/main.ts -- --version\n`);
    expect(r.code).toBe(0);
  }
});

test('no Bun at all says to run npm install', async () => {
  const root = await tree('none', 'none');
  const r = await run(root);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(`conch: Bun not found; run 'npm install' in ${root}\n`);
});

test("Bun starts with conch's JIT settings, and a setting of the user's own wins", async () => {
  const root = await tree('jit', 'linked');
  const bun = join(root, 'node_modules', 'bun', 'bin', 'bun.exe');
  await executable(bun, '#!/bin/sh\necho "$BUN_JSC_useDFGJIT $BUN_JSC_useFTLJIT $BUN_JSC_thresholdForJITAfterWarmUp $BUN_JSC_thresholdForJITSoon"\n');
  const start = async (env: Record<string, string>) => {
    const proc = Bun.spawn([join(root, 'bin', 'conch'), '--version'], { cwd: root, env: { PATH: tools, ...env }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(0);
    return stdout;
  };
  expect(await start({})).toBe('0 0 20000 400\n');
  expect(await start({ BUN_JSC_useDFGJIT: '1', BUN_JSC_useFTLJIT: '1', BUN_JSC_thresholdForJITSoon: '100' })).toBe('1 1 20000 100\n');
});
