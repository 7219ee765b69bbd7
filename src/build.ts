// Bundle the CLI for fast startup. Run from source, conch pays ~300 ms loading hundreds of small
// dependency modules (TypeBox alone is ~700 files); bundled with code splitting, a run loads only
// the chunks it uses. `npm install` runs this (the package's `prepare` script); bin/conch uses the
// bundle only while it is newer than every source file, so editing src/ never runs stale code.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dir, '..');
const dist = join(root, 'node_modules', '.cache', 'conch', 'dist');
const staging = `${dist}.${process.pid}`;

await rm(staging, { recursive: true, force: true });
await mkdir(staging, { recursive: true });
const result = await Bun.build({
  // The watchdog runs in a Worker, which loads its own entry file (watchdog.ts finds it beside the chunk).
  entrypoints: [join(root, 'src', 'cli', 'main.ts'), join(root, 'src', 'cli', 'watchdog-worker.ts')],
  outdir: staging,
  target: 'bun',
  splitting: true,
  // Keep the SDKs and plugin tooling as real packages: they are loaded lazily and resolve their
  // own files at run time.
  external: ['jiti'],
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  await rm(staging, { recursive: true, force: true });
  process.exit(1);
}
// The stamp is written last: bin/conch trusts the bundle only when it exists and is newest.
await writeFile(join(staging, 'BUILT'), `${new Date().toISOString()}\n`);
await rm(dist, { recursive: true, force: true });
await rename(staging, dist);
console.log(`conch: bundled ${result.outputs.length} files into ${dist}`);
