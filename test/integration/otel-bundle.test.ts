// The OpenTelemetry SDK costs a run nothing unless tracing is on. Checked on the bundle bin/conch
// runs (src/build.ts): with every chunk that holds SDK code deleted, `--version` and a whole run
// still work, so nothing at start imports them; with tracing on, the same run says the SDK could
// not load, so those chunks are what tracing reads (and the deletion proves something).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { bundle } from '../../src/build.ts';
import { anthropicEnv, BUN, conchEnv, REPO, useHarness } from '../support/cli.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

const harness = useHarness();
// Beside the real bundle, so conch finds its package root the same way.
const outdir = join(REPO, 'node_modules', '.cache', 'conch', `test-otel-${process.pid}`);
let receiver: OtlpReceiver;
let removed: string[] = [];

// Bun writes each module's path as a comment above its code. The API package is left out: the
// Anthropic SDK imports it for its own (off by default) instrumentation, tracing or not.
const SDK_CODE = /^\/\/ (node_modules\/@opentelemetry\/(?!api\/)|src\/telemetry\/(sdk|spans)\.ts)/m;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const built = await bundle(outdir);
  if (!built.ok) throw new Error(`the bundle did not build: ${built.logs.join('\n')}`);
  for (const file of await readdir(outdir)) {
    if (file.endsWith('.js') && SDK_CODE.test(await readFile(join(outdir, file), 'utf8'))) {
      removed.push(file);
      await rm(join(outdir, file));
    }
  }
}, 60_000);
afterAll(async () => {
  await receiver.close();
  await rm(outdir, { recursive: true, force: true });
});

async function conch(args: string[], env: Record<string, string> = {}) {
  const child = Bun.spawn([BUN, '--no-install', join(outdir, 'main.js'), ...args], {
    cwd: harness.dirs.workspace,
    env: conchEnv(harness.dirs, { ...anthropicEnv(harness.server.anthropicBaseUrl), ...env }),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

test('the SDK is in chunks of its own that only a traced run loads', async () => {
  // The SDK, its resources, both exporters and conch's span code.
  expect(removed.length).toBeGreaterThanOrEqual(3);
  expect(removed).not.toContain('main.js');

  expect(await conch(['--version'])).toMatchObject({ code: 0, stderr: '' });
  harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: '.' } }] }, { text: 'untraced' }, { text: 'traced' }]);
  const plain = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
  expect({ code: plain.code, stderr: plain.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(plain.stdout)).toMatchObject({ status: 'completed', output: 'untraced' });

  const traced = await conch(['--model', 'anthropic/test-model', '--json', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  // Tracing that cannot load never fails the run.
  expect(traced.code).toBe(0);
  expect(JSON.parse(traced.stdout)).toMatchObject({ status: 'completed', output: 'traced' });
  expect(traced.stderr).toContain('conch: OpenTelemetry: no trace is exported:');
  expect(receiver.received).toEqual([]);
});
