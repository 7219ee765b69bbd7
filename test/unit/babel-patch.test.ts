// The build's edit of jiti's Babel (src/plugins/babel-patch.ts) must fit the installed jiti and
// change nothing in what it produces: the same code, byte for byte, as jiti's own transform, for
// files that use the plugins it now leaves out and files that do not, called over and over (its
// options objects are shared between calls now).
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { patchJitiBabel } from '../../src/plugins/babel-patch.ts';

type Transform = (opts: Record<string, unknown>) => { code: string; error?: unknown };

const require = createRequire(import.meta.url);
const shipped = join(dirname(require.resolve('jiti/package.json')), 'dist', 'babel.cjs');
const dir = mkdtempSync(join(tmpdir(), 'conch-babel-patch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SOURCES: Record<string, string> = {
  'plain.ts': `import { defineTool, Type } from 'conch';
export default defineTool({
  name: 'plain',
  description: 'd',
  parameters: Type.Object({ text: Type.String() }),
  async execute({ text }: { text: string }): Promise<string> {
    return text;
  },
});
`,
  'types.ts': `import type { Tool } from 'conch';
import { helper, type Other } from './helper.ts';
export * as ns from './ns.ts';
enum Color { Red, Green = 'g' }
namespace N { export const x = 1; }
declare const y: number;
class A<T> { declare field: T; private z = 1; constructor(public readonly w: string) {} m(): Other { return helper(this.w as any) } }
const top = await Promise.resolve(Color.Green satisfies string);
export { A, N, top };
export default (null as unknown as Tool);
`,
  'decorators.ts': `import { Type } from 'conch';
function logged(target: any, key?: any, desc?: any) { return desc; }
function param(target: any, key: any, index: number) {}
@logged
class Service {
  @logged method(@param a: string, b: number): string { return a + b; }
  @logged prop: string = 'x';
}
export default { name: 'd', service: new Service(), schema: Type.String() };
`,
  'meta.ts': `const here: string = import.meta.url;
const dir = import.meta.dirname, file = import.meta.filename;
const env = import.meta.env.HOME;
const where = import.meta.resolve('./x.ts');
export default { here, dir, file, env, where };
`,
  'at-in-string.ts': `export default { email: 'a@b.c', note: 'metadata' } as const;\n`,
  'plain.mjs': `import fs from 'node:fs';\nexport const read = fs.readFileSync;\nexport default async () => (await import('./other.mjs')).default;\n`,
  'broken.ts': `export default {\n  name: 'x',,\n};\n`,
};

function load(name: string, code: string): Transform {
  const file = join(dir, name);
  writeFileSync(file, code);
  return require(file) as Transform;
}

describe("the build's edit of jiti's Babel", () => {
  const patched = patchJitiBabel(readFileSync(shipped, 'utf8'));

  test('fits the installed jiti', () => {
    expect(patched.applied).toBe(true);
  });

  test('produces exactly what jiti’s own transform produces', () => {
    const original = load('original.cjs', readFileSync(shipped, 'utf8'));
    const edited = load('edited.cjs', patched.code);
    const variants = [
      { async: true, interopDefault: false, babel: {} },
      { async: false, interopDefault: true, babel: {} },
      { async: true, interopDefault: false, babel: { sourceMaps: 'inline' } },
    ];
    let compared = 0;
    for (let round = 0; round < 2; round++) {
      for (const [name, source] of Object.entries(SOURCES)) {
        for (const variant of variants) {
          const filename = join(dir, name);
          const opts = { source, filename, ts: /\.[cm]?tsx?$/.test(name), jsx: false, ...variant, babel: { ...variant.babel, ...(variant.babel.sourceMaps ? { sourceFileName: filename } : {}) } };
          const want = original({ ...opts });
          const got = edited({ ...opts });
          expect(got.code).toBe(want.code);
          expect(Boolean(got.error)).toBe(Boolean(want.error));
          compared++;
        }
      }
    }
    expect(compared).toBe(2 * Object.keys(SOURCES).length * variants.length);
  });

  test('leaves a Babel it does not know as it was', () => {
    const other = 'function transform(r){return r}';
    expect(patchJitiBabel(other)).toEqual({ code: other, applied: false });
  });
});
