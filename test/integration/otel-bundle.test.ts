// The OpenTelemetry SDK costs a start nothing unless tracing is on. Checked on the bundle bin/conch
// runs (src/build.ts): the SDK is not in main.js but in a file of its own; with that file deleted,
// `--version` and a whole run still work, and a traced run says the SDK could not load, so that
// file is what tracing reads (and the deletion proves something).
import { afterAll, beforeAll, expect, test } from 'bun:test';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { bundle } from '../../src/build.ts';
import { SDK_BUNDLE } from '../../src/telemetry/open.ts';
import { anthropicEnv, BUN, conchEnv, REPO, useHarness } from '../support/cli.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';

const harness = useHarness();
// Beside the real bundle, so conch finds its package root the same way.
const outdir = join(REPO, 'node_modules', '.cache', 'conch', `test-otel-${process.pid}`);
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  await bundle(outdir);
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

test('the SDK is in a file of its own beside main.js, which only a traced run reads', async () => {
  // Class names are kept by the build's minifier: the SDK's are in its own file only.
  const sdk = await readFile(join(outdir, SDK_BUNDLE), 'utf8');
  const main = await readFile(join(outdir, 'main.js'), 'utf8');
  for (const name of ['BatchSpanProcessor', 'OTLPTraceExporter']) {
    expect(sdk).toContain(name);
    expect(main).not.toContain(name);
  }

  harness.server.script([{ text: 'traced' }, { toolCalls: [{ name: 'read', arguments: { path: '.' } }] }, { text: 'untraced' }, { text: 'unloadable' }]);
  // The bundle as built traces.
  const traced = await conch(['--model', 'anthropic/test-model', '--json', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  expect({ code: traced.code, stderr: traced.stderr }).toEqual({ code: 0, stderr: '' });
  expect(receiver.spans().map((s) => s.name)).toContain('invoke_agent conch');

  await rm(join(outdir, SDK_BUNDLE));
  await rm(join(outdir, `${SDK_BUNDLE}.jsc`), { force: true });
  expect(await conch(['--version'])).toMatchObject({ code: 0, stderr: '' });
  const plain = await conch(['--model', 'anthropic/test-model', '--json', 'go']);
  expect({ code: plain.code, stderr: plain.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(plain.stdout)).toMatchObject({ status: 'completed', output: 'untraced' });

  const before = receiver.received.length;
  const unloadable = await conch(['--model', 'anthropic/test-model', '--json', 'go'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
  // Tracing that cannot load never fails the run.
  expect(unloadable.code).toBe(0);
  expect(JSON.parse(unloadable.stdout)).toMatchObject({ status: 'completed', output: 'unloadable' });
  expect(unloadable.stderr).toContain('conch: OpenTelemetry: no trace is exported:');
  expect(receiver.received.length).toBe(before);
});
