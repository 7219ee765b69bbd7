import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as conch from '../../src/index.ts';
import type { PluginSettings } from '../../src/config/types.ts';
import { Catalog } from '../../src/tools/catalog.ts';
import type { ToolContext } from '../../src/tools/define.ts';
import { loadPlugins, type PluginReport } from '../../src/plugins/load.ts';
import { trustWorkspace } from '../../src/plugins/trust.ts';

let root: string;
let cacheDir: string;
const kernel = new Map([
  ['bash', 'kernel'],
  ['read', 'kernel'],
]);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'conch-plugins-'));
  cacheDir = join(root, 'cache');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function settings(over: Partial<PluginSettings> = {}): PluginSettings {
  return { enabled: true, dirs: [], firstParty: [], projectTools: false, allowOverride: [], ...over };
}

/** A fresh config dir + workspace with the given files (paths relative to the case folder). */
async function fixture(files: Record<string, string>): Promise<{ configDir: string; cwd: string; base: string }> {
  const base = await mkdtemp(join(root, 'case-'));
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(dirname(join(base, rel)), { recursive: true });
    await writeFile(join(base, rel), text);
  }
  const configDir = join(base, 'config', 'conch');
  const cwd = join(base, 'work');
  await mkdir(configDir, { recursive: true });
  await mkdir(cwd, { recursive: true });
  return { configDir, cwd, base };
}

const ctx = { cwd: '/', signal: new AbortController().signal, runSignal: new AbortController().signal, callId: 't1' } as unknown as ToolContext;

function byFile(reports: PluginReport[], suffix: string): PluginReport {
  const found = reports.find((r) => r.path.endsWith(suffix));
  if (!found) throw new Error(`no report for ${suffix}: ${JSON.stringify(reports)}`);
  return found;
}

const GOOD_TYPEBOX = `
import { defineTool, Type } from 'conch';
export default defineTool({
  name: 'greet',
  description: 'Greet someone',
  parameters: Type.Object({ who: Type.String() }),
  async execute({ who }) { return 'hello ' + who; },
});
`;
const GOOD_JSON_SCHEMA = `
export default {
  name: 'add',
  description: 'Add two numbers',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  execute: ({ a, b }) => ({ sum: a + b }),
};
`;

describe('loadPlugins', () => {
  test('a default export that is a function gets its setup once and stands for the tools it returns; what it throws is the failure', async () => {
    const f = await fixture({
      'config/conch/tools/made.ts': `
import { defineTool, Type, type PluginSetup } from 'conch';
export default (setup: PluginSetup) => [defineTool({
  name: 'made', description: 'Made by a setup function', parameters: Type.Object({}),
  execute: () => JSON.stringify(setup),
})];`,
      'config/conch/tools/refuses.ts': `export default async () => { throw new Error('refuses.ts needs a setting: add it to your config'); };`,
    });
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(byFile(reports, 'made.ts')).toMatchObject({ status: 'loaded', tools: ['made'] });
    expect(byFile(reports, 'refuses.ts')).toMatchObject({ status: 'failed', reason: 'refuses.ts needs a setting: add it to your config' });
    // A user plugin gets no settings (they are for first-party plugins, plugins.NAME in the user config).
    expect(JSON.parse(String(await tools[0]!.execute({}, ctx)))).toEqual({ settings: {}, cwd: f.cwd, configFile: join(f.configDir, 'config.json') });
  });

  test('a TypeBox plugin and a plain JSON Schema plugin load, validate closed, and execute', async () => {
    const f = await fixture({ 'config/conch/tools/greet.ts': GOOD_TYPEBOX, 'config/conch/tools/add.mjs': GOOD_JSON_SCHEMA });
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(reports.map((r) => [r.path.split('/').pop(), r.status, r.tools])).toEqual([
      ['add.mjs', 'loaded', ['add']],
      ['greet.ts', 'loaded', ['greet']],
    ]);
    const catalog = new Catalog();
    for (const tool of tools) expect(catalog.register(tool)).toBeNull();
    expect(catalog.get('greet')!.source).toBe(join(f.configDir, 'tools', 'greet.ts'));

    const ok = catalog.validate('greet', '{"who":"ann"}');
    if (!ok.ok) throw new Error(ok.message);
    expect(await catalog.get('greet')!.execute(ok.args, ctx)).toBe('hello ann');
    expect(catalog.validate('greet', '{"who":"ann","extra":1}')).toMatchObject({ ok: false });
    expect(catalog.validate('add', '{"a":1,"b":2,"c":3}')).toMatchObject({ ok: false });
    expect(await catalog.get('add')!.execute({ a: 2, b: 3 }, ctx)).toEqual({ sum: 5 });
  });

  test('every broken plugin is reported with its path and reason while the good one still loads', async () => {
    const f = await fixture({
      'config/conch/tools/good.ts': GOOD_TYPEBOX,
      'config/conch/tools/syntax.ts': `const a = 1;\nexport default {\n  name: 'x',,\n};\n`,
      'config/conch/tools/throws.ts': `const a: number = 1;\nthrow new Error('no API key configured');\n`,
      'config/conch/tools/nodefault.ts': `export const tool = { name: 'nd' };\n`,
      'config/conch/tools/badname.ts': `export default { name: 'Bad-Name', description: 'd', parameters: { type: 'object', properties: {} }, execute() {} };\n`,
      'config/conch/tools/noname.ts': `export default { description: 'd', parameters: { type: 'object', properties: {} }, execute() {} };\n`,
      'config/conch/tools/badschema.ts': `export default { name: 'bs', description: 'd', parameters: { type: 'string' }, execute() {} };\n`,
      'config/conch/tools/kernel.ts': `export default { name: 'bash', description: 'mine', parameters: { type: 'object', properties: {} }, execute() {} };\n`,
      'config/conch/tools/empty.js': `export default [];\n`,
      'config/conch/tools/missingdep.ts': `import x from './not-there.ts';\nexport default x;\n`,
      'config/conch/tools/typo.ts': `import { Type } from 'conch';\nexport default { name: 'typo', description: 'd', parameters: Type.Object({ a: Type.Strin() }), execute() {} };\n`,
    });
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(tools.map((t) => t.name)).toEqual(['greet']);
    expect(byFile(reports, 'good.ts').status).toBe('loaded');
    for (const r of reports) if (!r.path.endsWith('good.ts')) expect(r).toMatchObject({ status: 'failed', tools: [] });

    expect(byFile(reports, 'syntax.ts').reason).toMatch(/^syntax error at line 3, column 13: /);
    expect(byFile(reports, 'throws.ts').reason).toMatch(/^threw while loading at line 2: .*no API key configured/);
    expect(byFile(reports, 'nodefault.ts').reason).toContain('no default export');
    expect(byFile(reports, 'nodefault.ts').reason).toContain('found named exports tool');
    expect(byFile(reports, 'nodefault.ts').reason).toContain('a helper that plugins import belongs in a subfolder, such as lib/nodefault.ts, which conch does not load as a tool');
    expect(byFile(reports, 'badname.ts').reason).toContain('invalid name "Bad-Name"');
    // As written in the file: not the name the transpiled import got (_conch.Type.Strin).
    expect(byFile(reports, 'typo.ts').reason).toMatch(/^threw while loading at line 2: Type\.Strin is not a function/);
    expect(byFile(reports, 'typo.ts').reason).not.toContain('_conch');
    expect(byFile(reports, 'noname.ts').reason).toBe('no name: give the tool a "name" matching ^[a-z][a-z0-9_]{0,63}$');
    expect(byFile(reports, 'badschema.ts').reason).toContain('parameters must be an object schema');
    const collision = byFile(reports, 'kernel.ts').reason!;
    expect(collision).toContain(`in ${join(f.configDir, 'tools', 'kernel.ts')} collides with 'bash' from kernel`);
    expect(collision).toContain('plugins.allowOverride');
    expect(byFile(reports, 'empty.js').reason).toContain('empty array');
    expect(byFile(reports, 'missingdep.ts').reason).toContain('not-there.ts');
  });

  test('an export whose getters or proxy traps throw is that file\'s failure, not the end of the start', async () => {
    const f = await fixture({
      'config/conch/tools/good.ts': GOOD_TYPEBOX,
      'config/conch/tools/getter.ts': `export default { get name() { throw new Error('getter boom'); } };\n`,
      'config/conch/tools/proxy.ts': `export default new Proxy({}, { get() { throw Object.create(null); } });\n`,
      'config/conch/tools/schema.ts': `export default { name: 'sg', description: 'd', parameters: { type: 'object', get properties() { throw new Error('schema boom'); } }, execute() {} };\n`,
    });
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(tools.map((t) => t.name)).toEqual(['greet']);
    expect(byFile(reports, 'getter.ts')).toMatchObject({ status: 'failed', reason: 'reading its default export threw: getter boom' });
    expect(byFile(reports, 'proxy.ts')).toMatchObject({ status: 'failed', reason: 'reading its default export threw: a value that cannot be shown as text' });
    expect(byFile(reports, 'schema.ts')).toMatchObject({ status: 'failed' });
    expect(byFile(reports, 'schema.ts').reason).toContain('schema boom');
  });

  test('plugin-vs-plugin collision names both files; allowOverride lets the later one win', async () => {
    const tool = (d: string) => `export default { name: 'dup', description: '${d}', parameters: { type: 'object', properties: {} }, execute: () => '${d}' };\n`;
    const f = await fixture({ 'config/conch/tools/a.ts': tool('first'), 'extra/b.ts': tool('second') });
    const dirs = [join(f.base, 'extra')];
    const refused = await loadPlugins({ ...f, settings: settings({ dirs }), reserved: kernel, cacheDir });
    expect(refused.tools.map((t) => t.description)).toEqual(['first']);
    const reason = byFile(refused.reports, 'b.ts').reason!;
    expect(reason).toContain(join(f.base, 'extra', 'b.ts'));
    expect(reason).toContain(join(f.configDir, 'tools', 'a.ts'));

    const allowed = await loadPlugins({ ...f, settings: settings({ dirs, allowOverride: ['dup'] }), reserved: kernel, cacheDir });
    expect(allowed.tools.map((t) => t.description)).toEqual(['second']);
    expect(byFile(allowed.reports, 'a.ts')).toMatchObject({ status: 'loaded', tools: [] });
    expect(byFile(allowed.reports, 'a.ts').reason).toContain('overridden by');
  });

  test('array exports, folder plugins with relative imports, and conch/typebox from a folder with no node_modules', async () => {
    const f = await fixture({
      'config/conch/tools/multi/index.ts': `
import { defineTool, Type, PolicyError } from 'conch';
import { Compile } from 'typebox/compile';
import { Type as T2 } from 'typebox';
import { shout } from './helper.ts';
const check = Compile(Type.Object({ n: Type.Number() }));
export default [
  defineTool({ name: 'shout', description: 'Shout', parameters: Type.Object({ s: Type.String() }), execute: ({ s }) => shout(s) }),
  defineTool({ name: 'same_instances', description: 'Identity', parameters: Type.Object({}),
    execute: () => ({ type: Type === T2, policy: new PolicyError('r', 'm') instanceof Error ? PolicyError.name : '', check: check.Check({ n: 1 }) }) }),
];`,
      'config/conch/tools/multi/helper.ts': `export const shout = (s: string): string => s.toUpperCase() + '!';\n`,
      'config/conch/tools/cjs.js': `module.exports = { name: 'cjs_tool', description: 'c', parameters: { type: 'object', properties: {} }, execute: () => 'cjs' };\n`,
    });
    expect(existsSync(join(f.base, 'node_modules'))).toBe(false);
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(reports.filter((r) => r.status !== 'loaded')).toEqual([]);
    const get = (n: string) => tools.find((t) => t.name === n)!;
    expect(await get('shout').execute({ s: 'hi' }, ctx)).toBe('HI!');
    expect(await get('same_instances').execute({}, ctx)).toEqual({ type: true, policy: 'PolicyError', check: true });
    expect(await get('cjs_tool').execute({}, ctx)).toBe('cjs');
    // The plugin's Type is conch's own instance, not a second copy.
    expect(get('shout').parameters).toBeDefined();
    expect(conch.Type).toBeDefined();
  });

  test('project plugins: never imported untrusted; loaded when trusted or with projectTools; changed → skipped', async () => {
    const marker = join(root, `marker-${Date.now()}`);
    const evil = `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\nexport default { name: 'proj', description: 'p', parameters: { type: 'object', properties: {} }, execute: () => 'p' };\n`;
    const f = await fixture({ 'work/.conch/tools/proj.ts': evil });
    const run = (over: Partial<PluginSettings> = {}) => loadPlugins({ ...f, settings: settings(over), reserved: kernel, cacheDir });

    const untrusted = await run();
    expect(untrusted.tools).toEqual([]);
    expect(untrusted.reports).toEqual([
      { path: join(f.cwd, '.conch', 'tools', 'proj.ts'), status: 'skipped', tools: [], reason: expect.stringContaining('workspace not trusted: run `conch trust`') },
    ]);
    expect(existsSync(marker)).toBe(false);

    expect((await trustWorkspace(f.configDir, f.cwd)).ok).toBe(true);
    const trusted = await run();
    expect(trusted.reports[0]).toMatchObject({ status: 'loaded', tools: ['proj'] });
    expect(existsSync(marker)).toBe(true);
    await rm(marker);

    await writeFile(join(f.cwd, '.conch', 'tools', 'proj.ts'), evil.replace("() => 'p'", "() => 'changed'"));
    const changed = await run();
    expect(changed.reports[0]).toMatchObject({ status: 'skipped', reason: expect.stringContaining('changed since trusted') });
    expect(existsSync(marker)).toBe(false);

    const forced = await run({ projectTools: true });
    expect(forced.reports[0]).toMatchObject({ status: 'loaded' });
    expect(await forced.tools[0]!.execute({}, ctx)).toBe('changed');
  });

  test('a plugin file another user could change (a link into a shared folder, a --tools-dir anyone may write) is not imported', async () => {
    // It would run their code as the user, unsandboxed: a link left to /tmp/x.ts, once that file is
    // gone, is one anyone can fill; a folder every user (or a team's group) may write, the same.
    const marker = join(root, `marker-shared-${Date.now()}`);
    const plant = `require('node:fs').writeFileSync(${JSON.stringify(marker)}, '1');\nexport default [];\n`;
    const f = await fixture({ 'shared/evil.ts': plant, 'open/tools/evil2.ts': plant, 'mine/good.ts': GOOD_TYPEBOX });
    await chmod(join(f.base, 'shared'), 0o777);
    await chmod(join(f.base, 'open', 'tools'), 0o777);
    await mkdir(join(f.configDir, 'tools'), { recursive: true });
    await symlink(join(f.base, 'shared', 'evil.ts'), join(f.configDir, 'tools', 'evil.ts'));
    await symlink(join(f.base, 'mine', 'good.ts'), join(f.configDir, 'tools', 'good.ts'));
    const { tools, reports } = await loadPlugins({ ...f, settings: settings({ dirs: [join(f.base, 'open', 'tools')] }), reserved: kernel, cacheDir });
    expect(existsSync(marker)).toBe(false);
    expect(tools.map((t) => t.name)).toEqual(['greet']);
    expect(byFile(reports, 'tools/evil.ts')).toMatchObject({ status: 'skipped', reason: expect.stringContaining(`${join(f.base, 'shared')}, a folder above it, is writable by every user without the sticky bit`) });
    expect(byFile(reports, 'evil2.ts')).toMatchObject({ status: 'skipped', reason: expect.stringContaining('another user could put their code there') });
    // A sticky folder such as /tmp is fine for a file of the user's own: nobody else can replace it.
    await chmod(join(f.base, 'shared'), 0o1777);
    await chmod(join(f.base, 'shared', 'evil.ts'), 0o644);
    const again = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir });
    expect(byFile(again.reports, "tools/evil.ts").status).not.toBe("skipped");
    expect(existsSync(marker)).toBe(true);
  });

  test('disabled plugins load nothing, not even the user folder', async () => {
    const marker = join(root, `marker-off-${Date.now()}`);
    const f = await fixture({ 'config/conch/tools/x.ts': `require('node:fs').writeFileSync(${JSON.stringify(marker)}, '1');\n` });
    expect(await loadPlugins({ ...f, settings: settings({ enabled: false }), reserved: kernel, cacheDir })).toEqual({ tools: [], reports: [] });
    expect(existsSync(marker)).toBe(false);
  });

  test('first-party plugins by name; an unknown name lists the available ones; a missing --tools-dir is reported', async () => {
    const f = await fixture({});
    const missing = join(f.base, 'nope');
    const { tools, reports } = await loadPlugins({ ...f, settings: settings({ firstParty: ['git', 'gti'], dirs: [missing] }), reserved: kernel, cacheDir });
    expect(tools.map((t) => t.name)).toEqual(['git_status', 'git_diff', 'git_checkpoint', 'git_restore_paths']);
    expect(byFile(reports, 'plugins/gti')).toMatchObject({ status: 'failed', reason: expect.stringMatching(/unknown first-party plugin 'gti'; available: .*git.*jobs/) });
    expect(byFile(reports, 'nope')).toMatchObject({ status: 'failed', reason: expect.stringContaining(`tools folder not found: ${missing}`) });
  });

  test('a plugin whose top-level await never settles is abandoned at the load deadline', async () => {
    const f = await fixture({
      'config/conch/tools/hang.ts': `await new Promise(() => {});\nexport default {};\n`,
      'config/conch/tools/good.ts': GOOD_TYPEBOX,
    });
    const { tools, reports } = await loadPlugins({ ...f, settings: settings(), reserved: kernel, cacheDir, loadTimeoutMs: 300 });
    expect(tools.map((t) => t.name)).toEqual(['greet']);
    expect(byFile(reports, 'hang.ts')).toMatchObject({ status: 'failed', reason: expect.stringContaining('did not finish loading within 300 ms') });
  });

  test('an unknown package import fails without Bun trying to install it from a registry', async () => {
    const requests: string[] = [];
    const registry = Bun.serve({ port: 0, fetch: (req) => (requests.push(req.url), new Response('not found', { status: 404 })) });
    try {
      const f = await fixture({
        'config/conch/tools/dep.ts': `import pad from 'zz-conch-no-such-package';\nexport default pad;\n`,
        'config/conch/tools/good.ts': GOOD_TYPEBOX,
      });
      const script = `
        import { loadPlugins } from ${JSON.stringify(join(import.meta.dir, '../../src/plugins/load.ts'))};
        const r = await loadPlugins({ configDir: ${JSON.stringify(f.configDir)}, cwd: ${JSON.stringify(f.cwd)}, reserved: new Map(), cacheDir: false,
          settings: { enabled: true, dirs: [], firstParty: [], projectTools: false, allowOverride: [] } });
        process.stdout.write(JSON.stringify(r.reports));`;
      const url = `http://127.0.0.1:${registry.port}/`;
      // Run from the plugin's folder: no node_modules above it, which is when Bun would auto-install.
      const child = Bun.spawn([process.execPath, '-e', script], {
        cwd: f.base,
        env: { ...process.env, BUN_CONFIG_REGISTRY: url, NPM_CONFIG_REGISTRY: url, npm_config_registry: url },
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
      expect(await child.exited).toBe(0);
      const reports = JSON.parse(out) as PluginReport[];
      expect(byFile(reports, 'dep.ts')).toMatchObject({ status: 'failed', reason: expect.stringContaining("Cannot find module 'zz-conch-no-such-package'") });
      expect(byFile(reports, 'good.ts').status).toBe('loaded');
      expect(requests).toEqual([]);
      expect(err).not.toContain('zz-conch-no-such-package@');
    } finally {
      registry.stop(true);
    }
  });
});
