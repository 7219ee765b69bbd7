import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PluginSettings } from '../../src/config/types.ts';
import { toolsList, toolsNew, trustCommand, type CommandIO } from '../../src/cli/tools-command.ts';
import { Catalog } from '../../src/tools/catalog.ts';
import { pluginTsconfig, TSCONFIG_MARK } from '../../src/cli/tools-tsconfig.ts';
import { loadPlugins } from '../../src/plugins/load.ts';
import { defineTool, Type } from '../../src/index.ts';
import type { Tool } from '../../src/tools/define.ts';
import { normalizeResult } from '../../src/tools/truncate.ts';
import { makeContext } from '../support/plugin-context.ts';

let root: string;
let configDir: string;
let cwd: string;
let cacheDir: string;

const bash: Tool = {
  ...defineTool({ name: 'bash', description: 'Run a shell command', parameters: Type.Object({ command: Type.String() }), execute: () => '' }),
  source: 'kernel',
};
const settings = (over: Partial<PluginSettings> = {}): PluginSettings => ({ enabled: true, dirs: [], firstParty: [], projectTools: false, allowOverride: [], ...over });

function capture(): CommandIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return { out: (t) => void (out += t), err: (t) => void (err += t), stdout: () => out, stderr: () => err };
}

/** What a session does: kernel first, then plugins, into one catalog; then list it. */
async function list(over: Partial<PluginSettings>, json: boolean, io: CommandIO): Promise<number> {
  const s = settings(over);
  const catalog = new Catalog();
  catalog.register(bash);
  const { tools, reports } = s.enabled
    ? await loadPlugins({ configDir, cwd, settings: s, reserved: new Map([['bash', 'kernel']]), cacheDir })
    : { tools: [], reports: [] };
  for (const tool of tools) catalog.register(tool);
  return toolsList({ catalog, reports, workspace: cwd, json, pluginsEnabled: s.enabled, io });
}

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'conch-tools-cmd-')));
  configDir = join(root, 'config', 'conch');
  cwd = join(root, 'work');
  cacheDir = join(root, 'cache');
  await mkdir(join(configDir, 'tools'), { recursive: true });
  await mkdir(join(cwd, '.conch', 'tools'), { recursive: true });
  await writeFile(
    join(configDir, 'tools', 'greet.ts'),
    `import { defineTool, Type } from 'conch';
console.log('plugin chatter at load');
export default defineTool({ name: 'greet', description: 'Greet someone\\nsecond line', parameters: Type.Object({ who: Type.String(), loud: Type.Optional(Type.Boolean()), mode: Type.Union([Type.Literal('a'), Type.Literal('b')]) }), execute: () => 'hi' });\n`,
  );
  await writeFile(join(configDir, 'tools', 'broken.ts'), 'export default {\n  name: "x",,\n};\n');
  await writeFile(join(cwd, '.conch', 'tools', 'proj.ts'), 'export default 1;\n');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('conch tools', () => {
  test('--json: the catalog as the model sees it plus every plugin file with its status', async () => {
    const io = capture();
    const code = await list({}, true, io);
    expect(code).toBe(1); // a plugin failed
    const doc = JSON.parse(io.stdout());
    expect(doc.tools.map((t: { name: string; source: string }) => [t.name, t.source])).toEqual([
      ['bash', 'kernel'],
      ['greet', join(configDir, 'tools', 'greet.ts')],
    ]);
    const greet = doc.tools[1];
    expect(greet.parameters).toMatchObject({ type: 'object', additionalProperties: false, required: ['who', 'mode'] });
    expect(doc.plugins).toEqual([
      { path: join(configDir, 'tools', 'broken.ts'), status: 'failed', tools: [], reason: expect.stringMatching(/^syntax error at line 2, column 13: /) },
      { path: join(configDir, 'tools', 'greet.ts'), status: 'loaded', tools: ['greet'] },
      { path: join(cwd, '.conch', 'tools', 'proj.ts'), status: 'skipped', tools: [], reason: expect.stringContaining('workspace not trusted') },
    ]);
    expect(doc.pluginsEnabled).toBe(true);
  });

  test('human listing: sources, parameters, and reasons; exit 0 without failures', async () => {
    const io = capture();
    await list({}, false, io);
    const text = io.stdout();
    expect(text).toContain('Tools (2):');
    expect(text).toContain('parameters: who: string, loud?: boolean, mode: "a" | "b"');
    expect(text).toContain('      Greet someone\n');
    expect(text).toMatch(/failed +\S*broken\.ts\n +syntax error at line 2/);
    expect(text).toMatch(/skipped +\.conch\/tools\/proj\.ts\n +workspace not trusted/);

    const off = capture();
    expect(await list({ enabled: false }, false, off)).toBe(0);
    expect(off.stdout()).toContain('Plugins: off (--no-plugins)');
    expect(off.stdout()).toContain('Tools (1):');
  });

  test('a tool taken out (no usable sandbox, a flag, the policy) is listed as not offered, with why', async () => {
    const catalog = new Catalog();
    catalog.register(bash);
    catalog.remove('bash', 'no usable sandbox: bubblewrap (bwrap) is not installed or not on PATH');
    const io = capture();
    expect(await toolsList({ catalog, reports: [], workspace: cwd, json: false, io })).toBe(0);
    expect(io.stdout()).toContain('Tools (0):\n\nNot offered in this run (1):\n  bash\n      no usable sandbox: bubblewrap (bwrap) is not installed or not on PATH\n');
    const json = capture();
    await toolsList({ catalog, reports: [], workspace: cwd, json: true, io: json });
    expect(JSON.parse(json.stdout()).notOffered).toEqual([{ name: 'bash', reason: 'no usable sandbox: bubblewrap (bwrap) is not installed or not on PATH' }]);
    // Nothing taken out: no such section.
    const full = new Catalog();
    full.register(bash);
    const plain = capture();
    await toolsList({ catalog: full, reports: [], workspace: cwd, json: false, io: plain });
    expect(plain.stdout()).not.toContain('Not offered');
  });

  test('`conch tools --json` in a real process: one JSON document, plugin console output kept off stdout', async () => {
    const conch = join(import.meta.dir, '../../bin/conch');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, XDG_CONFIG_HOME: join(root, 'config'), XDG_CACHE_HOME: join(root, 'xdg-cache') };
    const proc = Bun.spawn([conch, 'tools', '--json'], { cwd, env, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(1); // broken.ts failed
    const doc = JSON.parse(out);
    const names = doc.tools.map((t: { name: string }) => t.name);
    expect(names).toContain('bash');
    expect(names).toContain('greet');
    expect(doc.tools.find((t: { name: string }) => t.name === 'greet').source).toBe(join(configDir, 'tools', 'greet.ts'));
    expect(doc.plugins.map((p: { status: string }) => p.status)).toEqual(['failed', 'loaded', 'skipped']);
    expect(err).toContain('plugin chatter at load');
  });
});

describe('conch tools new', () => {
  test('writes a starter that loads and runs; refuses to overwrite and bad names', async () => {
    const newConfig = join(root, 'new-config');
    const dir = join(newConfig, 'tools');
    const io = capture();
    expect(await toolsNew('my_tool', newConfig, io)).toBe(0);
    expect(io.stdout()).toContain(join(dir, 'my_tool.ts'));
    const source = await readFile(join(dir, 'my_tool.ts'), 'utf8');
    expect(source).toContain("name: 'my_tool'");

    const { tools, reports } = await loadPlugins({ configDir: join(root, 'none'), cwd: dir, settings: settings({ dirs: [dir] }), reserved: new Map(), cacheDir });
    expect(reports).toEqual([{ path: join(dir, 'my_tool.ts'), status: 'loaded', tools: ['my_tool'] }]);
    const result = (await tools[0]!.execute({ text: 'ab', count: 2 }, await makeContext(cwd))) as { text: string; at: string };
    expect(result.text).toBe('abab');
    expect(result.at).toMatch(/^\d{4}-\d\d-\d\dT/);

    const again = capture();
    expect(await toolsNew('my_tool', newConfig, again)).toBe(2);
    expect(again.stderr()).toContain('already exists');
    expect(await readFile(join(dir, 'my_tool.ts'), 'utf8')).toBe(source);

    const bad = capture();
    expect(await toolsNew('My-Tool', newConfig, bad)).toBe(2);
    expect(bad.stderr()).toContain("invalid tool name 'My-Tool'");
    expect(io.stderr()).toBe('');
  });

  test("a starter named like a kernel tool is written, and it says at once that it loads only with allowOverride", async () => {
    const io = capture();
    const newConfig = join(root, 'kernel-name');
    expect(await toolsNew('bash', newConfig, io)).toBe(0);
    const file = join(newConfig, 'tools', 'bash.ts');
    expect(await readFile(file, 'utf8')).toContain("name: 'bash'");
    expect(io.stderr()).toBe(`conch: 'bash' is a kernel tool's name: ${file} loads only with "plugins": { "allowOverride": ["bash"] } in your config, which replaces conch's own bash; to add a tool instead, give it another name\n`);
  });
});

describe('editor types for plugins', () => {
  const tsc = join(import.meta.dir, '../../node_modules/.bin/tsc');
  async function typecheck(dir: string): Promise<{ code: number; out: string }> {
    const proc = Bun.spawn([tsc, '-p', dir], { cwd: dir, stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    return { code, out: out + err };
  }

  test("`conch tools new` writes a tsconfig.json with which tsc resolves the starter's 'conch' import", async () => {
    const config = join(root, 'types-config');
    const dir = join(config, 'tools');
    const io = capture();
    expect(await toolsNew('typed', config, io)).toBe(0);
    expect(io.stdout()).toContain(`wrote ${join(dir, 'tsconfig.json')}: editor types for 'conch' imports`);
    const written = await readFile(join(dir, 'tsconfig.json'), 'utf8');
    expect(written).toStartWith(TSCONFIG_MARK);
    expect(await typecheck(dir)).toEqual({ code: 0, out: '' });

    // ctx.exec's result returned as is type-checks, as it runs: the model gets it as JSON.
    const passthrough = `import { defineTool, Type } from 'conch';
export default defineTool({ name: 'passthrough', description: 'x', parameters: Type.Object({ word: Type.String() }),
  async execute({ word }, ctx) { return ctx.exec('echo ' + word); } });
`;
    await writeFile(join(dir, 'passthrough.ts'), passthrough);
    const passed = await loadPlugins({ configDir: join(root, 'none'), cwd: dir, settings: settings({ dirs: [dir] }), reserved: new Map(), cacheDir });
    const tool = passed.tools.find((t) => t.name === 'passthrough')!;
    const sent = normalizeResult(await tool.execute({ word: 'hello' }, await makeContext(cwd)));
    expect(JSON.parse((sent.content[0] as { text: string }).text)).toMatchObject({ exitCode: 0, output: 'hello\n' });

    // The starter's commented image example, uncommented, type-checks and gives the model an image.
    const starter = await readFile(join(dir, 'typed.ts'), 'utf8');
    const example = starter.split('\n').filter((l) => /^  \/\/     \S/.test(l)).map((l) => l.slice('  //     '.length));
    expect(example).toHaveLength(3);
    const imageTool = starter.replace("name: 'typed'", "name: 'image'").replace(/async execute\([^)]*\) \{[\s\S]*?\n  \},/, `async execute(_args, ctx) {\n${example.join('\n')}\n  },`);
    expect(imageTool).toContain("mediaType: 'image/png'");
    await writeFile(join(dir, 'image.ts'), imageTool);
    await writeFile(join(cwd, 'chart.png'), Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==', 'base64'));
    const withImage = await loadPlugins({ configDir: join(root, 'none'), cwd: dir, settings: settings({ dirs: [dir] }), reserved: new Map(), cacheDir });
    const shown = normalizeResult(await withImage.tools.find((t) => t.name === 'image')!.execute({ text: 'x' }, await makeContext(cwd)));
    expect(shown.content[1]).toEqual({ type: 'image', mediaType: 'image/png', data: (await readFile(join(cwd, 'chart.png'))).toString('base64') });

    // The types are conch's own, not `any`: handing the un-awaited resolve() to fs is caught, and
    // typebox subpaths resolve too.
    await writeFile(
      join(dir, 'careless.ts'),
      `import { readFile } from 'node:fs/promises';
import { Value } from 'typebox/value';
import { defineTool, Type } from 'conch';
export default defineTool({ name: 'careless', description: 'x', parameters: Type.Object({ p: Type.String() }),
  async execute({ p }, ctx) { Value.Check(Type.String(), p); const path: string = ctx.workspace.resolve(p, 'read'); return readFile(path, 'utf8'); } });
`,
    );
    const careless = await typecheck(dir);
    expect(careless.code).not.toBe(0);
    expect(careless.out).toContain("careless.ts(5,");
    expect(careless.out).toContain("Type 'Promise<string>' is not assignable to type 'string'");
    expect(careless.out.split('\n').filter((l) => l.includes('error TS'))).toHaveLength(1);
  }, 120_000);

  test("a second `tools new` refreshes conch's tsconfig.json but never replaces the user's own", async () => {
    const config = join(root, 'types-own');
    const dir = join(config, 'tools');
    expect(await toolsNew('first', config, capture())).toBe(0);
    await writeFile(join(dir, 'tsconfig.json'), `${TSCONFIG_MARK}\n{ "stale": true }\n`);
    expect(await toolsNew('second', config, capture())).toBe(0);
    expect(await readFile(join(dir, 'tsconfig.json'), 'utf8')).toBe(pluginTsconfig());

    await writeFile(join(dir, 'tsconfig.json'), '{ "mine": true }\n');
    const io = capture();
    expect(await toolsNew('third', config, io)).toBe(0);
    expect(io.stdout()).toContain(`kept your ${join(dir, 'tsconfig.json')}`);
    expect(await readFile(join(dir, 'tsconfig.json'), 'utf8')).toBe('{ "mine": true }\n');
  });
});

describe('conch trust', () => {
  test('trusts the workspace, lists the files that will load, and the project plugin is then imported', async () => {
    const io = capture();
    expect(await trustCommand(configDir, cwd, io)).toBe(0);
    expect(io.stdout()).toContain(`trusted ${cwd}`);
    expect(io.stdout()).toContain('    proj.ts');
    const listed = capture();
    await list({}, true, listed);
    const proj = JSON.parse(listed.stdout()).plugins.find((p: { path: string }) => p.path.endsWith('proj.ts'));
    expect(proj).toMatchObject({ status: 'failed', reason: expect.stringContaining('not a tool definition') });
  });
});
