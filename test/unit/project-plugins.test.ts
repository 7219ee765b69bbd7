// Project plugins (./.conch/tools) run only bytes that were trusted: they are imported from a private
// snapshot of the folder, and their imports cannot leave it. Real files, real jiti, no mocks.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { PluginSettings } from '../../src/config/types.ts';
import type { ToolContext } from '../../src/tools/define.ts';
import { CONFINED_RULE } from '../../src/plugins/confine.ts';
import { loadPlugins, type PluginReport } from '../../src/plugins/load.ts';
import { materialize, readFolder } from '../../src/plugins/snapshot.ts';
import { trustWorkspace } from '../../src/plugins/trust.ts';

let root: string;
beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'conch-project-plugins-')));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const ctx = { cwd: '/', signal: new AbortController().signal, runSignal: new AbortController().signal, callId: 't1' } as unknown as ToolContext;

interface Case {
  base: string;
  configDir: string;
  cwd: string;
  tools: string;
  cacheDir: string;
  /** A marker file the workspace's outside code writes when it runs. */
  marker: (tag: string) => string;
  load: (over?: Partial<PluginSettings>) => ReturnType<typeof loadPlugins>;
}

/** A fresh workspace: `files` are relative to it; every case gets its own config and cache folders. */
async function workspace(files: Record<string, string>): Promise<Case> {
  const base = await mkdtemp(join(root, 'case-'));
  const cwd = join(base, 'work');
  const configDir = join(base, 'config');
  const cacheDir = join(base, 'cache');
  await mkdir(join(cwd, '.conch', 'tools'), { recursive: true });
  await mkdir(configDir, { recursive: true });
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(dirname(join(cwd, rel)), { recursive: true });
    await writeFile(join(cwd, rel), text);
  }
  const settings = (over: Partial<PluginSettings> = {}): PluginSettings => ({ enabled: true, dirs: [], firstParty: [], projectTools: false, allowOverride: [], ...over });
  return {
    base,
    configDir,
    cwd,
    cacheDir,
    tools: join(cwd, '.conch', 'tools'),
    marker: (tag) => join(base, `ran-${tag}`),
    load: (over) => loadPlugins({ configDir, cwd, settings: settings(over), reserved: new Map(), cacheDir }),
  };
}

/** Source that records that it ran (a file outside the trusted folder must never get to do this). */
const ran = (path: string) => `require('node:fs').writeFileSync(${JSON.stringify(path)}, 'ran');\n`;

const tool = (name: string, body: string) =>
  `export default defineTool({ name: '${name}', description: '${name}', parameters: Type.Object({}), execute: ${body} });\n`;
const HEAD = "import { defineTool, Type } from 'conch';\n";

function byFile(reports: PluginReport[], suffix: string): PluginReport {
  const found = reports.find((r) => r.path.endsWith(suffix));
  if (!found) throw new Error(`no report for ${suffix}: ${JSON.stringify(reports)}`);
  return found;
}

/** Outside code of every kind a plugin could reach: a relative file, a package, an "imports" alias. */
async function outsideCode(c: Case): Promise<void> {
  const files: Record<string, string> = {
    'lib/fmt.ts': `${ran(c.marker('relative'))}export const fmt = (s: string) => s.toUpperCase();\n`,
    'lib/util.ts': `${ran(c.marker('imports'))}export const util = 1;\n`,
    'node_modules/tinyfmt/package.json': JSON.stringify({ name: 'tinyfmt', main: 'index.js' }),
    'node_modules/tinyfmt/index.js': `${ran(c.marker('node_modules'))}exports.pad = (s) => s;\n`,
    '.conch/tools/node_modules/inner/package.json': JSON.stringify({ name: 'inner', main: 'index.js' }),
    '.conch/tools/node_modules/inner/index.js': `${ran(c.marker('inner'))}exports.x = 1;\n`,
    'package.json': JSON.stringify({ name: 'ws', type: 'module', imports: { '#util': './lib/util.ts' } }),
  };
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(dirname(join(c.cwd, rel)), { recursive: true });
    await writeFile(join(c.cwd, rel), text);
  }
}

describe('trusted project plugins: imports cannot leave .conch/tools', () => {
  test('a relative path out, a workspace package, an "imports" alias, an absolute path, a data: URL and an in-folder node_modules package are each refused by name', async () => {
    const c = await workspace({});
    await outsideCode(c);
    const plugins: Record<string, string> = {
      'relative.ts': `${HEAD}import { fmt } from '../../lib/fmt.ts';\n${tool('rel', '() => fmt("x")')}`,
      'package.ts': `${HEAD}import { pad } from 'tinyfmt';\n${tool('pkg', '() => pad("x")')}`,
      'alias.ts': `${HEAD}import { util } from '#util';\n${tool('alias', '() => util')}`,
      'absolute.ts': `${HEAD}import { fmt } from ${JSON.stringify(join(c.cwd, 'lib', 'fmt.ts'))};\n${tool('abs', '() => fmt("x")')}`,
      'dataurl.ts': `${HEAD}const m = await import('data:text/javascript,export default 1');\n${tool('data', '() => m')}`,
      'inner.ts': `${HEAD}import { x } from 'inner';\n${tool('inner', '() => x')}`,
      'good.ts': `${HEAD}${tool('good', '() => "fine"')}`,
    };
    for (const [name, text] of Object.entries(plugins)) await writeFile(join(c.tools, name), text);
    expect((await trustWorkspace(c.configDir, c.cwd)).ok).toBe(true);

    const { tools, reports } = await c.load();
    expect(tools.map((t) => t.name)).toEqual(['good']);
    const expectRefused = (file: string, spec: string, why: string) => {
      const r = byFile(reports, `/${file}`);
      expect(r.status).toBe('failed');
      expect(r.reason).toStartWith(`cannot import '${spec}'`);
      expect(r.reason).toContain(why);
      expect(r.reason).toContain(CONFINED_RULE);
      expect(r.reason).not.toContain(c.cacheDir);
    };
    expectRefused('relative.ts', '../../lib/fmt.ts', 'resolves outside .conch/tools');
    expectRefused('package.ts', 'tinyfmt', 'packages (node_modules) are not loaded');
    expectRefused('alias.ts', '#util', 'package.json "imports" aliases are not followed');
    expectRefused('absolute.ts', join(c.cwd, 'lib', 'fmt.ts'), 'an absolute path outside .conch/tools');
    expectRefused('dataurl.ts', 'data:text/javascript,export default 1', 'data: URLs are not loaded');
    expectRefused('inner.ts', 'inner', 'packages (node_modules) are not loaded');
    for (const tag of ['relative', 'imports', 'node_modules', 'inner']) expect(existsSync(c.marker(tag))).toBe(false);
  });

  test('require() with a computed name, .mjs and CommonJS plugins (which jiti would hand to Bun natively) are held to the same rule', async () => {
    const c = await workspace({});
    await outsideCode(c);
    await writeFile(join(c.tools, 'computed.ts'), `${HEAD}const name = ['tiny', 'fmt'].join('');\nconst m = require(name);\n${tool('computed', '() => m.pad("x")')}`);
    await writeFile(join(c.tools, 'native.mjs'), `import { pad } from 'tinyfmt';\nexport default { name: 'native', description: 'n', parameters: { type: 'object', properties: {} }, execute: () => pad('x') };\n`);
    await writeFile(join(c.tools, 'common.js'), `const { fmt } = require('../../lib/fmt.ts');\nmodule.exports = { name: 'common', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => fmt('x') };\n`);
    await writeFile(join(c.tools, 'lazy.ts'), `${HEAD}${tool('lazy', 'async () => (await import("tiny" + "fmt")).pad("x")')}`);
    await trustWorkspace(c.configDir, c.cwd);

    const { tools, reports } = await c.load();
    expect(byFile(reports, '/computed.ts').reason).toStartWith("cannot import 'tinyfmt'");
    expect(byFile(reports, '/native.mjs').reason).toStartWith("cannot import 'tinyfmt'");
    expect(byFile(reports, '/common.js').reason).toStartWith("cannot import '../../lib/fmt.ts'");
    // An import made later, inside execute, is refused the same way.
    const lazy = tools.find((t) => t.name === 'lazy')!;
    expect(lazy.execute({}, ctx)).rejects.toThrow(CONFINED_RULE);
    expect(existsSync(c.marker('relative'))).toBe(false);
    expect(existsSync(c.marker('node_modules'))).toBe(false);
  });

  test('a refused import in a helper names the helper; an outside file that does resolve is still not run', async () => {
    const c = await workspace({});
    await outsideCode(c);
    await mkdir(join(c.tools, 'multi'));
    await writeFile(join(c.tools, 'multi', 'index.ts'), `${HEAD}import { pad } from './pad.ts';\n${tool('multi', '() => pad("x")')}`);
    await writeFile(join(c.tools, 'multi', 'pad.ts'), `export { pad } from 'tinyfmt';\n`);
    // The snapshot sits at <cache>/snapshots/<hash>/: this relative path leaves it and lands on a
    // real file, so only the check on what is about to run stops it.
    await mkdir(c.cacheDir, { recursive: true });
    await writeFile(join(c.cacheDir, 'planted.ts'), `${ran(c.marker('planted'))}export const p = 1;\n`);
    await writeFile(join(c.tools, 'planted.ts'), `${HEAD}import { p } from '../../planted.ts';\n${tool('planted', '() => p')}`);
    await trustWorkspace(c.configDir, c.cwd);

    const { reports } = await c.load();
    expect(byFile(reports, '/multi/index.ts').reason).toStartWith("cannot import 'tinyfmt' in .conch/tools/multi/pad.ts: packages");
    expect(byFile(reports, '/planted.ts')).toMatchObject({ status: 'failed', reason: expect.stringContaining(CONFINED_RULE) });
    expect(existsSync(c.marker('planted'))).toBe(false);
    expect(existsSync(c.marker('node_modules'))).toBe(false);
  });

  test('a change outside .conch/tools between runs cannot reach a trusted plugin', async () => {
    const c = await workspace({
      'lib/fmt.ts': 'export const fmt = (s: string) => s;\n',
      'node_modules/tinyfmt/package.json': JSON.stringify({ name: 'tinyfmt', main: 'index.js' }),
      'node_modules/tinyfmt/index.js': 'exports.pad = (s) => s;\n',
      'shared/fmt.ts': `export const fmt = (s: string) => 'original ' + s;\n`,
    });
    await writeFile(join(c.tools, 'shout.ts'), `${HEAD}import { fmt } from '../../lib/fmt.ts';\nimport { pad } from 'tinyfmt';\n${tool('shout', '() => pad(fmt("x"))')}`);
    // A link inside the folder is followed when hashing: its target's bytes are what was trusted.
    await symlink(join(c.cwd, 'shared', 'fmt.ts'), join(c.tools, 'linked-fmt.ts'));
    await writeFile(join(c.tools, 'linked.ts'), `${HEAD}import { fmt } from './linked-fmt.ts';\n${tool('linked', '() => fmt("x")')}`);
    await trustWorkspace(c.configDir, c.cwd);

    const first = await c.load();
    expect(byFile(first.reports, '/shout.ts').reason).toContain(CONFINED_RULE);
    expect(await first.tools.find((t) => t.name === 'linked')!.execute({}, ctx)).toBe('original x');

    // What the sandboxed model may do in run 1: rewrite ordinary workspace files.
    await writeFile(join(c.cwd, 'lib', 'fmt.ts'), `${ran(c.marker('relative'))}export const fmt = (s: string) => s;\n`);
    await writeFile(join(c.cwd, 'node_modules', 'tinyfmt', 'index.js'), `${ran(c.marker('node_modules'))}exports.pad = (s) => s;\n`);
    const second = await c.load();
    expect(byFile(second.reports, '/shout.ts').reason).toContain(CONFINED_RULE);
    expect(await second.tools.find((t) => t.name === 'linked')!.execute({}, ctx)).toBe('original x');

    // Changing the link's target changes the folder's hash: nothing of it loads until trusted again.
    await writeFile(join(c.cwd, 'shared', 'fmt.ts'), `${ran(c.marker('linked'))}export const fmt = (s: string) => 'changed ' + s;\n`);
    const third = await c.load();
    expect(third.tools).toEqual([]);
    expect(byFile(third.reports, '/linked.ts')).toMatchObject({ status: 'skipped', reason: expect.stringContaining('changed since trusted') });
    for (const tag of ['relative', 'node_modules', 'linked']) expect(existsSync(c.marker(tag))).toBe(false);
  });

  test('a file swapped in .conch/tools after the hash, during the import or before a lazy import is not what runs', async () => {
    const c = await workspace({});
    const helper = join(c.tools, 'helper.ts');
    const late = join(c.tools, 'late.ts');
    await writeFile(helper, `export const v = 'trusted helper';\n`);
    await writeFile(late, `export const v = 'trusted late';\n`);
    // The plugin itself swaps its helper in the workspace while it is loading, the way a concurrent
    // process could between conch's hash and the import, then imports it.
    const swap = (path: string, tag: string) => `writeFileSync(${JSON.stringify(path)}, ${JSON.stringify(`${ran(c.marker(tag))}export const v = 'swapped';\n`)});\n`;
    await writeFile(
      join(c.tools, 'a.ts'),
      `${HEAD}import { writeFileSync } from 'node:fs';\n${swap(helper, 'helper')}const { v } = await import('./helper.ts');\n` +
        tool('a', `async () => [v, (await import('./late.ts')).v]`),
    );
    await trustWorkspace(c.configDir, c.cwd);

    const { tools, reports } = await c.load();
    expect(byFile(reports, '/a.ts')).toMatchObject({ status: 'loaded', tools: ['a'] });
    await writeFile(late, `${ran(c.marker('late'))}export const v = 'swapped';\n`);
    expect(await tools[0]!.execute({}, ctx)).toEqual(['trusted helper', 'trusted late']);
    expect(existsSync(c.marker('helper'))).toBe(false);
    expect(existsSync(c.marker('late'))).toBe(false);
  });

  test('the snapshot holds exactly the bytes that were hashed, even when the folder changes right after reading', async () => {
    const c = await workspace({ '.conch/tools/a.ts': 'original', '.conch/tools/sub/b.ts': 'bee', '.conch/tools/empty/.keep': '' });
    const content = await readFolder(c.tools);
    await writeFile(join(c.tools, 'a.ts'), 'swapped');
    await mkdir(c.cacheDir, { recursive: true, mode: 0o700 });
    const dir = await materialize(content, c.cacheDir);
    expect(dir.endsWith(content.hash.replace('sha256:', ''))).toBe(true);
    expect(await readFile(join(dir, 'a.ts'), 'utf8')).toBe('original');
    // The folder's name is the hash of what is in it.
    expect((await readFolder(dir)).hash).toBe(content.hash);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, 'a.ts'))).mode & 0o777).toBe(0o600);

    // The same content again reuses the folder without rewriting it; new content gets its own.
    const before = (await stat(join(dir, 'sub', 'b.ts'))).ino;
    expect(await materialize(await readFolder(dir), c.cacheDir)).toBe(dir);
    expect((await stat(join(dir, 'sub', 'b.ts'))).ino).toBe(before);
    const other = await materialize(await readFolder(c.tools), c.cacheDir);
    expect(other).not.toBe(dir);
    expect((await readdir(c.cacheDir)).sort()).toEqual([basename(dir), basename(other)].sort());
  });

  test('writing a snapshot prunes ones unused for a month (and copies a dead conch left half-done), keeps recent ones', async () => {
    const c = await workspace({ '.conch/tools/a.ts': 'one' });
    await mkdir(c.cacheDir, { recursive: true, mode: 0o700 });
    const old = await materialize({ hash: 'sha256:old', entries: [{ rel: 'x.ts', bytes: Buffer.from('x') }] }, c.cacheDir);
    const recent = await materialize({ hash: 'sha256:recent', entries: [] }, c.cacheDir);
    const stale = join(c.cacheDir, '.incoming-dead');
    await mkdir(stale);
    const longAgo = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    await utimes(old, longAgo, longAgo);
    await utimes(stale, longAgo, longAgo);
    const fresh = await materialize(await readFolder(c.tools), c.cacheDir);
    expect((await readdir(c.cacheDir)).sort()).toEqual([basename(fresh), basename(recent)].sort());
  });
});

describe('trusted project plugins still work', () => {
  test('relative imports between files inside .conch/tools, JSON, dotfiles, built-ins, import.meta; reports and sources name the workspace files', async () => {
    const c = await workspace({
      '.conch/tools/multi/index.ts': `${HEAD}import { shout } from './lib/shout.ts';\nimport data from '../data.json';\nimport { join } from 'node:path';\nimport { Compile } from 'typebox/compile';\n` +
        `const check = Compile(Type.Object({ n: Type.Number() }));\n` +
        tool('multi', `() => [shout(data.word), join('a', 'b'), check.Check({ n: 1 }), typeof import.meta.url]`),
      '.conch/tools/multi/lib/shout.ts': `import { bang } from '../../.shared.ts';\nexport const shout = (s: string) => bang(s.toUpperCase());\n`,
      '.conch/tools/.shared.ts': `export const bang = (s: string) => s + '!';\n`,
      '.conch/tools/data.json': JSON.stringify({ word: 'hi' }),
      '.conch/tools/cjs.js': `const { bang } = require('./.shared.ts');\nmodule.exports = { name: 'cjs', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => bang('cjs') };\n`,
      '.conch/tools/esm.mjs': `import { bang } from './.shared.ts';\nexport default { name: 'esm', description: 'e', parameters: { type: 'object', properties: {} }, execute: () => bang('esm') };\n`,
      '.conch/tools/broken.ts': `import { nope } from './missing.ts';\nexport default nope;\n`,
    });
    await trustWorkspace(c.configDir, c.cwd);
    const { tools, reports } = await c.load();
    expect(reports.filter((r) => r.status === 'loaded').map((r) => r.path)).toEqual(
      ['cjs.js', 'esm.mjs', 'multi/index.ts'].map((f) => join(c.tools, f)),
    );
    const get = (n: string) => tools.find((t) => t.name === n)!;
    expect(await get('multi').execute({}, ctx)).toEqual(['HI!', 'a/b', true, 'string']);
    expect(await get('cjs').execute({}, ctx)).toBe('cjs!');
    expect(await get('esm').execute({}, ctx)).toBe('esm!');
    expect(get('multi').source).toBe(join(c.tools, 'multi', 'index.ts'));
    const broken = byFile(reports, '/broken.ts');
    expect(broken.reason).toContain('missing.ts');
    expect(broken.reason).not.toContain(c.cacheDir);
  });

  test('--project-tools loads from a snapshot too (no trust asked), under the same import rule', async () => {
    const c = await workspace({
      '.conch/tools/where.ts': `${HEAD}${tool('where', '() => import.meta.url')}`,
      '.conch/tools/escape.ts': `${HEAD}import { fmt } from '../../lib/fmt.ts';\n${tool('escape', '() => fmt')}`,
      'lib/fmt.ts': `export const fmt = 1;\n`,
    });
    const untrusted = await c.load();
    expect(untrusted.reports.map((r) => r.status)).toEqual(['skipped', 'skipped']);
    const { tools, reports } = await c.load({ projectTools: true });
    expect(byFile(reports, '/escape.ts').reason).toContain(CONFINED_RULE);
    const url = String(await tools[0]!.execute({}, ctx));
    expect(url).toStartWith(`file://${c.cacheDir}/snapshots/`);
    expect(url).not.toContain(c.cwd);
  });
});

describe('user plugins keep their reach', () => {
  test('a user plugin still imports a package next to it and a file outside its folder', async () => {
    const c = await workspace({});
    const files: Record<string, string> = {
      'config/tools/node_modules/userpkg/package.json': JSON.stringify({ name: 'userpkg', main: 'index.js' }),
      'config/tools/node_modules/userpkg/index.js': `exports.twice = (s) => s + s;\n`,
      'config/shared.ts': `export const prefix = 'u:';\n`,
      'config/tools/mine.ts': `${HEAD}import { twice } from 'userpkg';\nimport { prefix } from '../shared.ts';\n${tool('mine', '() => prefix + twice("x")')}`,
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(dirname(join(c.base, rel)), { recursive: true });
      await writeFile(join(c.base, rel), text);
    }
    const { tools, reports } = await c.load();
    expect(reports).toEqual([{ path: join(c.configDir, 'tools', 'mine.ts'), status: 'loaded', tools: ['mine'] }]);
    expect(await tools[0]!.execute({}, ctx)).toBe('u:xx');
    expect(existsSync(join(c.cacheDir, 'snapshots'))).toBe(false);
  });
});
