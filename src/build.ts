// Bundle the CLI for fast startup. Run from source, conch pays ~300 ms loading hundreds of small
// dependency modules (TypeBox alone is ~700 files). The bundle is CommonJS files with Bun's
// bytecode beside each (.jsc): parsing 2.6 MB of JavaScript was most of a start (≈ 30 ms), and Bun
// takes bytecode only for CommonJS outside `bun build --compile`. Modules a run does not use are
// still evaluated only when first imported. `npm install` runs this (the package's `prepare`
// script). bin/conch runs the launcher (src/cli/launch.ts), which uses the bundle only while it is
// newer than every source file, so editing src/ never runs stale code.
import { mkdir, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { SDK_BUNDLE } from './telemetry/open.ts';
import { patchJitiBabel } from './plugins/babel-patch.ts';
import { validPolicyDigests } from './sandbox/profiles.ts';

const root = resolve(import.meta.dir, '..');

/** Bundle into `dist` (replaced whole, never left half-written); the number of files written. */
/**
 * Big packages most runs never import, each in a bundle of its own beside the main one, loaded when
 * first imported: the main bundle's bytecode is read whole on every start (time and memory). Every
 * import of a package's listed entry points goes to its one bundle, so each keeps one instance.
 * An entry under src/ is conch's own module that imports the part of a package conch uses.
 */
const VENDORS: Record<string, string[]> = {
  openai: ['openai'],
  anthropic: ['src/providers/anthropic-sdk.ts'],
  mcp: ['@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/streamableHttp.js', '@modelcontextprotocol/sdk/types.js', '@modelcontextprotocol/sdk/shared/stdio.js'],
  acp: ['@agentclientprotocol/sdk'],
  yaml: ['yaml'],
  // What every run uses of TypeBox (core/typebox.ts), for its shape: ~480 small modules in the main
  // bundle each start lazily through a wrapper of their own, while a bundle of its own is evaluated
  // as one scope.
  'typebox-core': ['src/core/typebox.ts'],
  // All of TypeBox, for plugins (tools/api.ts). Its entries share no name conch imports (`export *`
  // drops a name two entries both export).
  typebox: ['typebox', 'typebox/schema', 'typebox/system'],
};
/** conch's own modules that are vendor entries, matched by file name when imported. */
const OWN_ENTRIES = new RegExp(`/(${Object.values(VENDORS).flat().filter((spec) => spec.startsWith('src/')).map((spec) => spec.slice(spec.lastIndexOf('/') + 1).replace(/\.ts$/, '')).join('|')})\\.ts$`);

export async function bundle(dist = join(root, 'node_modules', '.cache', 'conch', 'dist')): Promise<number> {
  const staging = `${dist}.${process.pid}`;
  // The stamp says when the sources were read: a file saved during the build is newer than it.
  const startedAt = new Date();
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const options = {
    outdir: staging,
    target: 'bun',
    format: 'cjs',
    bytecode: true,
    // Smaller bytecode and source; names are kept for readable stack traces.
    minify: { whitespace: true, syntax: true, identifiers: true, keepNames: true },
    // In CommonJS output Bun would write each source file's own path for import.meta: the bundle must
    // use its own location, as the modules expect of a bundle (package-root.ts, watchdog.ts).
    // (Not __dirname itself: Bun replaces that too, per module, with the source file's folder.)
    define: { 'import.meta.url': '__conchBundleUrl', 'import.meta.dir': '__conchBundleDir', __conchCheckedPolicies: JSON.stringify(validPolicyDigests()) },
    // Bun's pathToFileURL, not node:url's: loading that JavaScript module cost every start ≈ 1.3 ms
    // (`conch --version`: 22.0 → 20.6 ms, medians of 60 alternated).
    banner: 'var __conchBundleDir = __dirname, __conchBundleUrl = Bun.pathToFileURL(__filename).href;',
    // Plugin tooling stays a real package: it is loaded lazily and resolves its own files at run time.
    external: ['jiti'],
  } satisfies Partial<Bun.BuildConfig>;
  const ownModule = (spec: string) => (spec.startsWith('src/') ? join(root, spec) : undefined);
  const vendorOf = new Map(Object.entries(VENDORS).flatMap(([name, specs]) => specs.map((spec) => [ownModule(spec) ?? spec, name] as const)));
  const toVendor = (name: string) => ({ path: `./vendor-${name}.js`, external: true });
  // Their entry files live under conch's own node_modules, where the packages resolve from.
  const entryDir = join(root, 'node_modules', '.cache', 'conch', `vendor-entries.${process.pid}`);
  await mkdir(entryDir, { recursive: true });
  const entries = await Promise.all(
    Object.entries(VENDORS).map(async ([name, specs]) => {
      const entry = join(entryDir, `vendor-${name}.ts`);
      await writeFile(entry, specs.map((spec) => `export * from '${ownModule(spec) ?? spec}';\n`).join(''));
      return entry;
    }),
  );
  // Each built alone: built together, a module two of them bundle keeps in each what any one uses
  // (typebox-core came out as large as all of TypeBox).
  const vendorBuilds = await Promise.all(entries.map((entry) => Bun.build({ ...options, entrypoints: [entry] }))).finally(() => rm(entryDir, { recursive: true, force: true }));
  const vendors = { success: vendorBuilds.every((b) => b.success), logs: vendorBuilds.flatMap((b) => b.logs), outputs: vendorBuilds.flatMap((b) => b.outputs) };
  const result = await Bun.build({
    ...options,
    plugins: [
      {
        name: 'vendors',
        setup(build) {
          build.onResolve({ filter: /^(openai|yaml|@agentclientprotocol\/sdk)$|^@modelcontextprotocol\/sdk\/|^@anthropic-ai\/sdk|^typebox(\/|$)/ }, (args) => {
            const name = vendorOf.get(args.path);
            if (!name) throw new Error(`${args.path} (imported by ${args.importer}) is not a listed entry of a vendor bundle (src/build.ts VENDORS)`);
            return toVendor(name);
          });
          build.onResolve({ filter: OWN_ENTRIES }, (args) => {
            const name = vendorOf.get(resolve(dirname(args.importer), args.path));
            return name ? toVendor(name) : undefined;
          });
        },
      },
    ],
    // The watchdog runs in a Worker, which loads its own entry file (watchdog.ts finds it beside the bundle).
    entrypoints: ['main.ts', 'watchdog-worker.ts', 'launch.ts'].map((name) => join(root, 'src', 'cli', name)),
  });
  // The OpenTelemetry SDK is a file of its own that only a traced run reads (telemetry/open.ts):
  // in main.js its bytecode would be loaded by every start.
  const otel = await Bun.build({ ...options, entrypoints: [join(root, 'src', 'telemetry', 'sdk.ts')], naming: SDK_BUNDLE });
  // jiti's Babel (1.5 MB) transpiles plugins on a first start: parsed from bytecode it loads in a
  // fraction of the time (plugins/importer.ts takes this copy when it is beside the bundle).
  const jiti = dirname(Bun.resolveSync('jiti/package.json', root));
  const { version } = (await Bun.file(join(jiti, 'package.json')).json()) as { version: string };
  // A bytecode copy of one of jiti's files, named for its jiti: an updated jiti never runs with an
  // older copy.
  const jitiCopy = (file: string, name: string, plugins: Bun.BunPlugin[] = []) =>
    Bun.build({
      entrypoints: [join(jiti, 'dist', file)],
      outdir: staging,
      naming: `jiti-${name}-${version}.[ext]`,
      target: 'bun',
      format: 'cjs',
      bytecode: true,
      minify: { whitespace: true, syntax: true, identifiers: true, keepNames: true },
      plugins,
    });
  // Babel's plugins instantiated once, not once per file, and only those a file can use
  // (plugins/babel-patch.ts): the same output for less of a first start.
  const babel = await jitiCopy('babel.cjs', 'babel', [
    {
      name: 'conch-jiti-babel',
      setup(build) {
        build.onLoad({ filter: /[\\/]babel\.cjs$/ }, async (args) => {
          const patched = patchJitiBabel(await Bun.file(args.path).text());
          if (!patched.applied) console.warn(`conch: jiti ${version}'s Babel is not the one plugins/babel-patch.ts knows; bundled unchanged (plugins transpile slower on a first start)`);
          return { contents: patched.code, loader: 'js' };
        });
      },
    },
  ]);
  // jiti's core likewise, for every start with plugins: ≈ 25 ms from source, ≈ 4 ms from bytecode.
  const jitiCore = await jitiCopy('jiti.cjs', 'core');
  // sucrase, the fast transform of a first start (plugins/sucrase.ts), from the one module that
  // gathers what conch uses of it; named for its version as jiti's copies are.
  const sucraseVersion = ((await Bun.file(join(dirname(Bun.resolveSync('sucrase/package.json', root)), 'package.json')).json()) as { version: string }).version;
  const sucrase = await Bun.build({
    entrypoints: [join(root, 'src', 'plugins', 'sucrase-lib.ts')],
    outdir: staging,
    naming: `sucrase-${sucraseVersion}.[ext]`,
    target: 'bun',
    format: 'cjs',
    bytecode: true,
    minify: { whitespace: true, syntax: true, identifiers: true, keepNames: true },
  });
  const copies = [babel, jitiCore, sucrase];
  if (!result.success || !otel.success || !vendors.success || copies.some((c) => !c.success)) {
    await rm(staging, { recursive: true, force: true });
    throw new AggregateError([...vendors.logs, ...result.logs, ...otel.logs, ...copies.flatMap((c) => c.logs)], 'conch: the bundle failed to build');
  }
  // The stamp is written last: the launcher trusts the bundle only when it exists and is newest.
  const stamp = join(staging, 'BUILT');
  await writeFile(stamp, `${startedAt.toISOString()}\n`);
  await utimes(stamp, startedAt, startedAt);
  await rm(dist, { recursive: true, force: true });
  await rename(staging, dist);
  return result.outputs.length + otel.outputs.length + vendors.outputs.length + copies.reduce((n, c) => n + c.outputs.length, 0);
}

if (import.meta.main) {
  try {
    const dist = join(root, 'node_modules', '.cache', 'conch', 'dist');
    console.log(`conch: bundled ${await bundle(dist)} files into ${dist}`);
  } catch (error) {
    for (const log of (error as AggregateError).errors ?? [error]) console.error(log);
    process.exit(1);
  }
}
