// The sucrase fast path for plugin files (src/plugins/sucrase.ts, transform.ts): it takes plain
// TypeScript plugins, sends everything it would treat differently to Babel, gives modules that
// behave as Babel's do, keeps Babel's syntax error positions and the throw site's line:col, and
// caches each transform's output in a folder of its own. Real files, real jiti, real sucrase/Babel.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createJiti, type JitiOptions } from 'jiti';
import * as conchApi from '../../src/tools/api.ts';
import type { PluginSettings } from '../../src/config/types.ts';
import { loadPlugins } from '../../src/plugins/load.ts';
import { babelTransform, type TransformRequest } from '../../src/plugins/babel.ts';
import { sucraseTransform } from '../../src/plugins/sucrase.ts';
import { pluginTransform, transformFolders } from '../../src/plugins/transform.ts';
import { sourceColumn, topFrame } from '../../src/plugins/throw-site.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'conch-sucrase-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function settings(dirs: string[]): PluginSettings {
  return { enabled: true, dirs, firstParty: [], projectTools: false, allowOverride: [] };
}

async function folderWith(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(root, 'case-'));
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, rel)), { recursive: true });
    await writeFile(join(dir, rel), text);
  }
  return dir;
}

/** What jiti asks of the transform for a plugin it imports. */
function request(source: string, filename = '/plugins/tool.ts'): TransformRequest {
  return { source, filename, ts: /\.[cm]?tsx?$/.test(filename), async: true, jsx: false, interopDefault: false, babel: {} };
}

function entries(folder: string): string[] {
  return existsSync(folder) ? readdirSync(folder) : [];
}

const PLAIN = `import { defineTool, Type } from 'conch';
import type { Static } from 'typebox';

const Params = Type.Object({ text: Type.String(), count: Type.Optional(Type.Integer({ minimum: 1 })) });
type Args = Static<typeof Params>;

export default defineTool({
  name: 'plain',
  description: 'A plain TypeScript plugin',
  parameters: Params,
  async execute({ text, count = 1 }: Args) {
    return text.repeat(count);
  },
});
`;

describe('which transform a plugin file goes through', () => {
  test('a plain TypeScript plugin takes the fast path: no Babel, the tool works, its code is cached under sucrase', async () => {
    expect(sucraseTransform(request(PLAIN))).toMatchObject({ ok: true });
    const dir = await folderWith({ 'plain.ts': PLAIN });
    const cacheDir = join(root, 'cache-plain');
    const { tools, reports } = await loadPlugins({ configDir: join(root, 'none'), cwd: dir, settings: settings([dir]), reserved: new Map(), cacheDir });
    expect(reports.map((r) => r.status)).toEqual(['loaded']);
    expect(await tools[0]!.execute({ text: 'ab', count: 2 }, {} as never)).toBe('abab');
    const folders = transformFolders(cacheDir);
    expect(entries(folders.sucrase)).toHaveLength(1);
    expect(entries(folders.babel)).toEqual([]);
  });

  // Each construct sucrase would treat differently from jiti's Babel, or that this path is not sure of.
  const routed: Array<[string, string, string]> = [
    ['a decorator', `import { defineTool } from 'conch';\nfunction d(t: unknown) { return t; }\n@d class K {}\nexport default K;\n`, 'a decorator'],
    ['a dynamic import()', `export default async () => (await import('./x.ts')).default;\n`, 'a dynamic import()'],
    ['import.meta', `export default { url: import.meta.url };\n`, 'import.meta'],
    ['an import after other code', `import { Type } from 'conch';\nconst early = 1;\nimport { defineTool } from 'conch';\nexport default defineTool;\n`, 'an import after other code'],
    ['require', `const fs = require('node:fs');\nexport default fs;\n`, 'mentions require'],
    ['require, even in a string', `export default 'require';\n`, 'mentions require'],
    ['export *', `export * from './x.ts';\nexport default 1;\n`, 'export *'],
    ['a re-export list', `export { a } from './x.ts';\nexport default 1;\n`, 'an export list'],
    ['an anonymous default function', `export default async function () { return 1; }\n`, 'an anonymous default function'],
    ['an anonymous default class', `export default class { x = 1; }\n`, 'an anonymous default class'],
    ['an exported destructuring', `export const { a, b: [c] } = { a: 1, b: [2] };\nexport default a + c;\n`, 'an exported destructuring'],
    ['an export of several declarations', `export const a: Record<string, number> = { x: 1 }, b = 2;\nexport default b;\n`, 'an export of several declarations'],
    ['an exported let', `export let n = 1;\nexport function bump() { n++; }\nexport default 1;\n`, 'an exported let or var'],
    ['a TS namespace', `namespace N { export const a = 1; }\nexport default N.a;\n`, 'the name namespace'],
    ['an enum', `enum E { A, B }\nexport default E.B;\n`, 'an enum'],
    ['module.exports', `module.exports = { a: 1 };\n`, 'the name module'],
    ['an import attribute', `import data from './d.json' with { type: 'json' };\nexport default data;\n`, 'import attributes'],
    ['a file sucrase cannot parse', `import { defineTool } from 'conch';\nconst = defineTool;\n`, 'sucrase could not parse it'],
    ['output of a file sucrase parses leniently', `export default {\n  name: 'x',,\n};\n`, 'the output does not compile'],
    ['output that does not compile', `const twice = 1;\nconst twice = 2;\nexport default twice;\n`, 'the output does not compile'],
  ];
  for (const [what, source, reason] of routed) {
    test(`${what} goes to Babel`, () => {
      expect(sucraseTransform(request(source))).toEqual({ ok: false, reason });
    });
  }

  test('import() in a type stays on the fast path; a declared namespace still goes to Babel (sucrase counts any namespace a type)', () => {
    const source = `import { defineTool } from 'conch';\ntype Lazy = typeof import('./x.ts');\nlet q: import('./y.ts').T | undefined;\nexport default defineTool;\n`;
    expect(sucraseTransform(request(source))).toMatchObject({ ok: true });
    expect(sucraseTransform(request(`declare namespace N { const a: string; }\nexport default 1;\n`))).toEqual({ ok: false, reason: 'the name namespace' });
  });

  test('TSX, CommonJS TypeScript and JavaScript files go to Babel', () => {
    expect(sucraseTransform({ ...request('export default 1;\n', '/p/t.tsx'), jsx: true })).toMatchObject({ ok: false });
    expect(sucraseTransform(request('export default 1;\n', '/p/t.cts'))).toMatchObject({ ok: false });
    expect(sucraseTransform(request('export default 1;\n', '/p/t.js'))).toMatchObject({ ok: false });
  });

  test('a Babel-routed file is cached under Babel, a fast one under sucrase, and neither is read back for changed source', async () => {
    const cacheDir = join(root, 'cache-folders');
    const transform = pluginTransform(cacheDir);
    const folders = transformFolders(cacheDir);
    const routedSource = `enum E { A, B }\nexport default E.B;\n`;
    const babelOut = transform(request(routedSource, '/p/enum.ts'));
    expect(babelOut.code).toBe(babelTransform(request(routedSource, '/p/enum.ts')).code);
    const fast = transform(request(PLAIN, '/p/plain.ts'));
    expect(entries(folders.babel)).toHaveLength(1);
    expect(entries(folders.sucrase)).toHaveLength(1);
    // Read back: the same code for the same source, from the folder it was written to.
    const [entry] = entries(folders.sucrase);
    expect(await readFile(join(folders.sucrase, entry!), 'utf8')).toStartWith(fast.code);
    expect(transform(request(PLAIN, '/p/plain.ts')).code).toBe(fast.code);
    const edited = PLAIN.replace("'plain'", "'edited'");
    expect(transform(request(edited, '/p/plain.ts')).code).toContain("'edited'");
  });

  test('a start whose plugins are all cached loads neither sucrase nor Babel', async () => {
    const dir = await folderWith({ 'plain.ts': PLAIN, 'routed.ts': `import { defineTool, Type } from 'conch';\nenum E { A }\nexport default defineTool({ name: 'routed', description: 'd', parameters: Type.Object({}), execute: () => String(E.A) });\n` });
    const cacheDir = join(root, 'cache-warm');
    const script = `
      const { loadPlugins } = await import(${JSON.stringify(join(import.meta.dir, '../../src/plugins/load.ts'))});
      const r = await loadPlugins({ configDir: ${JSON.stringify(join(root, 'none'))}, cwd: ${JSON.stringify(dir)}, reserved: new Map(), cacheDir: ${JSON.stringify(cacheDir)},
        settings: { enabled: true, dirs: [${JSON.stringify(dir)}], firstParty: [], projectTools: false, allowOverride: [] } });
      const loaded = Object.keys(require.cache).filter((k) => /[\\\\/]sucrase[\\\\/](?!package\\.json$)|sucrase-lib|babel\\.cjs$/.test(k));
      console.log(JSON.stringify({ statuses: r.reports.map((x) => x.status), loaded }));`;
    const run = async () => {
      const child = Bun.spawn([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' });
      const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
      if ((await child.exited) !== 0) throw new Error(err);
      return JSON.parse(out) as { statuses: string[]; loaded: string[] };
    };
    const cold = await run();
    expect(cold.statuses).toEqual(['loaded', 'loaded']);
    // The cold start did need both (the enum is Babel's): the check below can see them.
    expect(cold.loaded.some((k) => k.includes('sucrase'))).toBe(true);
    expect(cold.loaded.some((k) => k.endsWith('babel.cjs'))).toBe(true);
    expect(await run()).toEqual({ statuses: ['loaded', 'loaded'], loaded: [] });
  });
});

describe('a fast-path module behaves as the Babel one', () => {
  const require = createRequire(import.meta.url);
  const virtualModules: Record<string, unknown> = { conch: conchApi, typebox: require('typebox') };
  const jitiWith = (transform: JitiOptions['transform']) =>
    createJiti(import.meta.url, { tryNative: false, fsCache: false, moduleCache: false, interopDefault: false, virtualModules, transform });

  test('default, named and namespace imports of conch, typebox and relative helpers; exports in the same shape', async () => {
    const dir = await folderWith({
      'helper.ts': `export default function shout(s: string): string { return s.toUpperCase(); }\nexport const suffix: string = '!';\nexport function twice(s: string) { return s + s; }\nexport class Box { value: number; declare hidden: string; early = (this as any).label; static count = 1; constructor(public readonly label: string) { this.value = label.length; } }\nexport abstract class Base { abstract name(): string; hello() { return 'hi ' + this.name(); } }\nexport type Alias = string;\nexport interface Shape { a: number }\n`,
      // Several declarations in one export: Babel's (sucrase would drop the later ones), imported by fast-path files.
      'multi.ts': `export const p: number = 1, r = 2;\nexport const single = [3, 4].map((n, i) => n + i)[0], after = 0;\n`,
      'other.ts': `import shout, { suffix } from './helper.ts';\nexport const loud = (s: string) => shout(s) + suffix;\n`,
      'data.mjs': `export default { kind: 'mjs' };\nexport const n = 7;\n`,
      'plugin.ts': `import { defineTool, Type, ok } from 'conch';
import * as conchAll from 'conch';
import { Type as T2 } from 'typebox';
import shout, { twice, Box, Base, type Alias } from './helper.ts';
import { p, r, single } from './multi.ts';
import fs, { existsSync } from 'node:fs';
import * as nodePath from 'node:path';
import { default as shout2 } from './helper.ts';
import * as helpers from './helper.ts';
import { loud } from './other.ts';
import mjs, { n } from './data.mjs';
import type { Static } from 'typebox';

const P = Type.Object({ s: Type.String() });
export const seen = {
  sameType: Type === T2, conchKeys: Object.keys(conchAll).length > 5, ok: typeof ok,
  shout: shout('a'), twice: twice('b'), box: new Box('xyz').value, boxLabel: new Box('q').label,
  helperKeys: Object.keys(helpers).sort(), loud: loud('c'), mjs, n,
  opt: (undefined as { a?: number } | undefined)?.a ?? 'none',
  boxKeys: Object.keys(new Box('k')), early: new Box('e').early, count: Box.count, destructured: [p, r, single],
  base: new (class extends Base { name() { return 'x'; } })().hello(), same: shout2 === shout, topThis: typeof this,
  alias: ('a' satisfies Alias) as Alias, builtins: [typeof fs, typeof fs?.readFileSync, existsSync === fs?.existsSync, typeof nodePath.join], big: 1_000n.toString(), fnName: shout.name,
};
export default defineTool({ name: 'same', description: 'd', parameters: P, execute: ({ s }: Static<typeof P>) => s });
`,
    });
    const file = join(dir, 'plugin.ts');
    const viaBabel = await jitiWith(babelTransform as JitiOptions['transform']).import<Record<string, any>>(file);
    const fastSeen: string[] = [];
    const fast = pluginTransform(false);
    const viaFast = await jitiWith(((req: TransformRequest) => {
      if (sucraseTransform(req).ok) fastSeen.push(req.filename);
      return fast(req);
    }) as JitiOptions['transform']).import<Record<string, any>>(file);
    // Every TypeScript file above but multi.ts took the fast path (the .mjs is not transpiled by either).
    expect(fastSeen.sort()).toEqual(['helper.ts', 'other.ts', 'plugin.ts'].map((f) => join(dir, f)));
    expect(viaFast.seen).toEqual(viaBabel.seen);
    expect(viaFast.seen.shout).toBe('A');
    expect(viaFast.seen.helperKeys).toEqual(['Base', 'Box', 'default', 'suffix', 'twice']);
    expect(viaFast.seen.destructured).toEqual([1, 2, 3]);
    expect(viaFast.seen.builtins).toEqual(['object', 'function', true, 'function']);
    expect(viaFast.seen.boxKeys).toEqual(['value', 'early', 'label']);
    expect(Object.keys(viaFast).sort()).toEqual(Object.keys(viaBabel).sort());
    expect(viaFast.default.name).toBe(viaBabel.default.name);
    expect(viaFast.__esModule).toBe(true);
  });

  test("conch's first-party plugins: every file sucrase takes gives the same exports as through Babel", async () => {
    const pluginsDir = join(import.meta.dir, '../../plugins');
    // Names, kinds, arities and (for data) values, two levels deep: what a plugin file hands conch.
    const shape = (value: unknown, depth = 0): unknown => {
      if (typeof value === 'function') return `function ${value.name}/${value.length}`;
      if (!value || typeof value !== 'object') return value;
      if (depth > 1) return Array.isArray(value) ? `array ${value.length}` : 'object';
      return Object.fromEntries(Object.keys(value).sort().map((k) => [k, shape((value as Record<string, unknown>)[k], depth + 1)]));
    };
    let fastFiles = 0;
    for (const rel of new Bun.Glob('*/*.ts').scanSync({ cwd: pluginsDir })) {
      const file = join(pluginsDir, rel);
      if (!sucraseTransform(request(await readFile(file, 'utf8'), file)).ok) continue;
      fastFiles++;
      const viaBabel = await jitiWith(babelTransform as JitiOptions['transform']).import(file);
      const viaFast = await jitiWith(pluginTransform(false) as JitiOptions['transform']).import(file);
      expect([rel, shape(viaFast)]).toEqual([rel, shape(viaBabel)]);
    }
    expect(fastFiles).toBeGreaterThan(10);
  });

  test('a cycle between helpers: exported functions exist before the imports run, as Babel (and ES modules) have them', async () => {
    const dir = await folderWith({
      'cyc-a.ts': `import { fromB } from './cyc-b.ts';\nexport function helperA(x: string): string { return 'A(' + x + ')'; }\nexport default function named() { return 'def'; }\nexport async function* gen() { yield 1; }\nexport const seen = fromB;\n`,
      'cyc-b.ts': `import { helperA, gen } from './cyc-a.ts';\nimport defA from './cyc-a.ts';\nexport const fromB = [helperA('b'), typeof defA, typeof gen];\n`,
    });
    const file = join(dir, 'cyc-a.ts');
    const viaBabel = await jitiWith(babelTransform as JitiOptions['transform']).import<Record<string, any>>(file);
    const viaFast = await jitiWith(pluginTransform(false) as JitiOptions['transform']).import<Record<string, any>>(file);
    expect(viaBabel.seen).toEqual(['A(b)', 'function', 'function']);
    expect(viaFast.seen).toEqual(viaBabel.seen);
    expect(viaFast.default()).toBe('def');
    for (const f of ['cyc-a.ts', 'cyc-b.ts']) expect(sucraseTransform(request(await readFile(join(dir, f), 'utf8'), join(dir, f)))).toMatchObject({ ok: true });
  });
});

describe('errors still point at the author’s source', () => {
  test('a syntax error is reported with Babel’s line and column, whether sucrase rejects it or compiles it to broken code', async () => {
    const dir = await folderWith({
      'a-rejected.ts': `import { defineTool } from 'conch';\n\nconst = defineTool;\n`,
      'b-lenient.ts': `import { defineTool } from 'conch';\nexport default defineTool({\n  name: 'x',,\n});\n`,
    });
    const { reports } = await loadPlugins({ configDir: join(root, 'none'), cwd: dir, settings: settings([dir]), reserved: new Map(), cacheDir: false });
    expect(reports.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(reports[0]!.reason).toMatch(/^syntax error at line 3, column 7: /);
    expect(reports[1]!.reason).toMatch(/^syntax error at line 3, column 13: /);
  });

  test('the throw site of fast-path code maps to the source column, also after an awaited import on the same line', async () => {
    // (Line 1 is not used: there jiti's wrapper adds its own columns, whichever transform ran.)
    const line2 = `import { Type } from 'conch'; import { twice } from './h.ts'; export function fail(n: number): never {   throw new Error('bad ' + twice(String(n)) + typeof Type); }`;
    const line4 = `export function later(a: string, b: number): never { const c: string = a;   throw new RangeError(c + b); }`;
    const dir = await folderWith({ 'h.ts': `export const twice = (s: string) => s + s;\n`, 'thrower.ts': `import type { Static } from 'typebox';\n${line2}\nexport default 1;\n${line4}\n` });
    const file = join(dir, 'thrower.ts');
    expect(sucraseTransform(request(await readFile(file, 'utf8'), file))).toMatchObject({ ok: true });
    const jiti = createJiti(import.meta.url, { tryNative: false, fsCache: false, moduleCache: false, interopDefault: false, virtualModules: { conch: conchApi }, transform: pluginTransform(false) as JitiOptions['transform'] });
    const mod = await jiti.import<{ fail: (n: number) => never; later: (a: string, b: number) => never }>(file);
    const where = async (f: () => never) => {
      try {
        f();
      } catch (error) {
        const frame = topFrame(error, file)!;
        return { line: frame.line, column: await sourceColumn(file, frame.line, frame.column) };
      }
      throw new Error('did not throw');
    };
    expect(await where(() => mod.fail(1))).toEqual({ line: 2, column: line2.indexOf('new Error') + 1 });
    expect(await where(() => mod.later('a', 2))).toEqual({ line: 4, column: line4.indexOf('new RangeError') + 1 });
  });
});
