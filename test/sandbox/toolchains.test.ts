// Toolchains in the sandbox (real bwrap, real npm): with the per-user cache (caches.json) `npm
// install` of a local tarball and a local directory dependency, then `npm ci`, succeed while the
// real $HOME is read-only, and nothing is written under $HOME. Offline and without network: no
// registry is ever contacted.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareSandboxed } from '../../src/sandbox/index.ts';
import { cacheVariables } from '../../src/sandbox/caches.ts';
import { cleanEnv } from '../../src/process/spawn.ts';
import { canRun, fixture, snapshot, type Fixture } from './harness.ts';

const NPM = Bun.which('npm');
let fx: Fixture;
let home: string;
let cache: string;
beforeEach(() => {
  fx = fixture();
  // Under /var/tmp: visible (read-only) inside the sandbox, unlike the host's /tmp.
  home = join(fx.outside, 'home');
  cache = join(fx.outside, 'xdg-cache', 'conch', 'sandbox');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, '.profile'), '# untouched\n');
  // A directory dependency, and the same shape packed as a tarball (npm's package/ prefix).
  for (const [dir, name] of [[join(fx.ws, 'local-dep'), 'local-dep'], [join(fx.root, 'pack', 'package'), 'packed-dep']] as const) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(dir, 'index.js'), `module.exports = '${name} works';\n`);
  }
  Bun.spawnSync(['tar', '-czf', join(fx.ws, 'packed-dep-1.0.0.tgz'), '-C', join(fx.root, 'pack'), 'package']);
  writeFileSync(
    join(fx.ws, 'package.json'),
    JSON.stringify({ name: 'app', version: '1.0.0', private: true, dependencies: { 'local-dep': 'file:./local-dep', 'packed-dep': 'file:./packed-dep-1.0.0.tgz' } }),
  );
});
afterEach(() => fx.cleanup());

async function run(command: string, withCache: boolean, profile = 'workspace-write'): Promise<{ code: number; output: string }> {
  const prepared = await prepareSandboxed({
    profile,
    network: false,
    writableRoots: [],
    protectedGlobs: [],
    cwd: fx.ws,
    workspace: fx.ws,
    tmpDir: fx.tmp,
    command,
    ...(withCache ? { cacheDir: cache } : {}),
  });
  try {
    const child = Bun.spawn(prepared.argv, {
      cwd: fx.ws,
      env: { ...cleanEnv(process.env, {}, { tmpDir: fx.tmp }), HOME: home },
      stdio: ['ignore', 'pipe', 'pipe', ...prepared.extraFds],
    });
    const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
    return { code, output: out + err };
  } finally {
    await prepared.release();
  }
}

const NPM_FLAGS = '--offline --no-audit --no-fund --no-update-notifier';

describe.skipIf(!canRun || !NPM)('toolchains with the sandbox cache', () => {
  test('without the cache npm fails on the read-only home (the failure the cache fixes)', async () => {
    const result = await run(`npm install ${NPM_FLAGS}`, false);
    expect(result.code).not.toBe(0);
    // npm reports the read-only home as EROFS or (bwrap's read-only /var/tmp) ENOENT, at ~/.npm either way.
    expect(result.output).toContain(join(home, '.npm'));
  });

  test('npm install of a tarball and a directory dependency, then npm ci, succeed; nothing is written under $HOME', async () => {
    const before = snapshot(home);
    const install = await run(`npm install ${NPM_FLAGS} && node -e "console.log(require('local-dep'), require('packed-dep'))"`, true);
    expect(install.output).toContain('local-dep works packed-dep works');
    expect(install.code).toBe(0);
    expect(existsSync(join(fx.ws, 'package-lock.json'))).toBe(true);
    const ci = await run(`rm -rf node_modules && npm ci ${NPM_FLAGS} && node -e "console.log(require('packed-dep'))"`, true);
    expect(ci.output).toContain('packed-dep works');
    expect(ci.code).toBe(0);
    expect(snapshot(home)).toBe(before);
    // npm's cache went where npm_config_cache points, inside conch's cache directory.
    expect(readdirSync(join(cache, cacheVariables().npm_config_cache!)).length).toBeGreaterThan(0);
  });

  test('the variables point into the cache, which is writable while the rest of $HOME is not', async () => {
    const result = await run('echo "$npm_config_cache|$CARGO_HOME|$GOMODCACHE|$XDG_CACHE_HOME"; touch "$PIP_CACHE_DIR/x" && echo CACHE-WRITABLE; touch "$HOME/y" 2>/dev/null || echo HOME-READ-ONLY', true);
    expect(result.output).toContain(`${cache}/npm|${cache}/cargo|${cache}/go/mod|${cache}/xdg`);
    expect(result.output).toContain('CACHE-WRITABLE');
    expect(result.output).toContain('HOME-READ-ONLY');
    expect(readFileSync(join(cache, 'pip', 'x'), 'utf8')).toBe('');
  });
});

describe.skipIf(!canRun)('profiles without the cache', () => {
  test('a profile that says "caches": false (read-only) gets no cache directory and no variables', async () => {
    const probe = 'echo "npm=${npm_config_cache:-unset} cargo=${CARGO_HOME:-unset}"';
    expect((await run(probe, true)).output).toContain(`npm=${join(cache, 'npm')}`);
    rmSync(cache, { recursive: true, force: true });
    const readOnly = await run(probe, true, 'read-only');
    expect(readOnly.output).toContain('npm=unset cargo=unset');
    expect(existsSync(cache)).toBe(false);
  });
});
