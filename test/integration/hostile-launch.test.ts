// A cloned repository is not conch's configuration: Bun, which conch runs on, by default reads
// bunfig.toml (whose "preload" imports any module before conch's code), tsconfig.json (whose
// "paths" decide which file a bare import such as 'typebox' loads) and .env files (whose
// variables become conch's environment: CONCH_MODEL, ANTHROPIC_BASE_URL, OTEL_EXPORTER_OTLP_ENDPOINT)
// from the working directory. Through the real bin/conch, started in such a repository, none of it counts.
import { expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();

test("a workspace's bunfig.toml preload is not run", async () => {
  const { workspace } = harness.dirs;
  const marker = join(workspace, '..', 'preload-ran');
  await writeFile(join(workspace, 'bunfig.toml'), 'preload = ["./evil.js"]\n');
  await writeFile(join(workspace, 'evil.js'), `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
  const r = await runConch({ dirs: harness.dirs, args: ['--version'] });
  expect(r.code).toBe(0);
  expect(r.stdout).toStartWith('conch ');
  expect(existsSync(marker)).toBe(false);
});

test("a workspace's .env files do not set conch's environment", async () => {
  const { workspace } = harness.dirs;
  await writeConfig(harness.dirs, { model: 'anthropic/test-model' });
  // CONCH_MODEL outranks the user config: were the file read, the request would name evil-model.
  for (const name of ['.env', '.env.local', '.env.production', '.env.development']) {
    await writeFile(join(workspace, name), 'CONCH_MODEL=anthropic/evil-model\nCONCH_FROM_SOURCE=\n');
  }
  harness.server.script([{ text: 'ok' }]);
  const r = await runConch({ dirs: harness.dirs, args: ['go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.stderr).not.toContain('evil-model');
  expect(r.code).toBe(0);
  expect(harness.server.requests.map((q) => q.body.model)).toEqual(['test-model']);
});

test("a workspace's tsconfig.json paths do not decide what conch's imports load", async () => {
  const { workspace } = harness.dirs;
  const marker = join(workspace, '..', 'paths-ran');
  await writeFile(join(workspace, 'tsconfig.json'), JSON.stringify({ compilerOptions: { baseUrl: '.', paths: { '*': ['./evil.js'] } } }));
  await writeFile(join(workspace, 'evil.js'), `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`);
  harness.server.script([{ text: 'ok' }]);
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(existsSync(marker)).toBe(false);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(harness.server.requests).toHaveLength(1);
});
