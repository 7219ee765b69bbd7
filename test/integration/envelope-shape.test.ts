// --json promises one document of one shape: a script reading `.usage.inputTokens` or `.provider`
// must not need to know whether the run started. Setup and usage errors carry every key a finished
// run's envelope has, with null where there is nothing to report.
import { expect, test } from 'bun:test';
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
  expect(usage).toMatchObject({ runId: null, status: 'failed', code: 'config_invalid', message: expect.stringContaining('--bogus'), exitCode: 2, provider: null });
});
