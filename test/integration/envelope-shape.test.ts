// --json promises one document of one shape: a script reading `.usage.inputTokens` or `.provider`
// must not need to know whether the run started. Setup and usage errors carry every key a finished
// run's envelope has, with null where there is nothing to report.
import { expect, test } from 'bun:test';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

/** Every key path of a JSON value: "usage.inputTokens", … */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => [`${prefix}${k}`, ...keyPaths(v, `${prefix}${k}.`)]).sort();
}

test('a setup error and a usage error under --json have the same keys as a finished run, with nulls', async () => {
  harness.server.script([{ text: 'done' }]);
  const ran = await runConch({ dirs: harness.dirs, args: ['--json', '-m', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(ran.code).toBe(0);
  const run = JSON.parse(ran.stdout);
  // A failed run's optional keys (code, message; limit and rule only for their statuses).
  const shape = [...keyPaths(run), 'code', 'message'].sort();

  const noModel = await runConch({ dirs: harness.dirs, args: ['--json', 'go'], env: {} });
  expect(noModel.code).toBe(2);
  const setup = JSON.parse(noModel.stdout);
  expect(keyPaths(setup)).toEqual(shape);
  expect(setup).toMatchObject({
    version: run.version,
    status: 'failed',
    code: 'config_invalid',
    message: expect.stringContaining('no model is configured'),
    output: null,
    // Nothing was produced: no partial output to mark.
    partial: false,
    stopReason: null,
    usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null },
    counts: { modelCalls: 0, toolCalls: 0, toolErrors: 0 },
    durationMs: null,
    exitCode: 2,
    provider: null,
    model: null,
    mode: null,
    sandbox: null,
  });
  expect(setup.runId).toEqual(expect.any(String));

  // A bad command line is caught before there is a run id.
  const badFlag = await runConch({ dirs: harness.dirs, args: ['--json', '--bogus', 'go'], env: {} });
  expect(badFlag.code).toBe(2);
  const usage = JSON.parse(badFlag.stdout);
  expect(keyPaths(usage)).toEqual(shape);
  expect(usage).toMatchObject({ runId: null, status: 'failed', code: 'config_invalid', message: expect.stringContaining('--bogus'), exitCode: 2, partial: false, provider: null });
});

// The watchdog ends a run whose main thread is stuck in plugin code and writes the envelope itself,
// from what it was told so far: before run.started that is only what the config says.
test('envelopes the watchdog writes (a plugin stuck while it loads, or in its execute) have the same keys as a completed run', async () => {
  const env = anthropicEnv(harness.server.anthropicBaseUrl);
  const args = ['--json', '-m', 'anthropic/test-model'];
  harness.server.script([{ text: 'done' }]);
  const ran = await runConch({ dirs: harness.dirs, args: [...args, 'go'], env });
  expect(ran.code).toBe(0);
  const run = JSON.parse(ran.stdout);
  // A run that did not finish says why.
  const shape = [...keyPaths(run), 'message'].sort();

  const tools = join(harness.dirs.configHome, 'conch', 'tools');
  await mkdir(tools, { recursive: true });
  try {
    await writeFile(join(tools, 'load-spin.ts'), 'for (;;) {}\nexport default {};\n');
    const atLoad = await runConch({ dirs: harness.dirs, args: [...args, '--timeout', '1s', 'go'], env });
    expect(atLoad.code).toBe(124);
    const loading = JSON.parse(atLoad.stdout);
    expect(loading.message).toContain('watchdog');
    expect(keyPaths(loading)).toEqual(shape);
    // Known from the config; the sandbox is probed and the session opened only after the plugins load.
    expect(loading).toMatchObject({ status: 'timed_out', provider: run.provider, model: run.model, mode: run.mode, sandbox: null, sessionId: null });
    await rm(join(tools, 'load-spin.ts'));

    await writeFile(join(tools, 'spin.ts'), `export default { name: 'spin', description: 'never yields', parameters: { type: 'object', properties: {} }, execute() { for (;;) {} } };`);
    harness.server.script([{ toolCalls: [{ name: 'spin', arguments: {} }] }]);
    const inTool = await runConch({ dirs: harness.dirs, args: [...args, '--timeout', '1s', 'go'], env });
    expect(inTool.code).toBe(124);
    const spun = JSON.parse(inTool.stdout);
    expect(spun.message).toContain('watchdog');
    expect(keyPaths(spun)).toEqual(shape);
    expect(spun).toMatchObject({ status: 'timed_out', provider: run.provider, model: run.model, mode: run.mode, sandbox: run.sandbox, sessionId: expect.any(String) });
  } finally {
    await rm(tools, { recursive: true, force: true });
  }
});
