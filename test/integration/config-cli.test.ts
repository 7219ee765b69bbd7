// Config files through the real CLI: where a syntax error is, and what a repository's config may choose.
import { describe, expect, test } from 'bun:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

describe('a config file with a syntax error', () => {
  test('is a setup error naming the file, the line and the column', async () => {
    const file = join(harness.dirs.configHome, 'conch', 'config.json');
    await writeFile(file, '{\n  "limits": {\n    "model_calls": 3,\n  }\n}\n');
    const r = await runConch({ dirs: harness.dirs, args: ['go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}: not valid JSON at line 4, column 3`);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(harness.server.requests).toHaveLength(0);
  });

  test('that starts with a byte-order mark is read', async () => {
    await writeFile(join(harness.dirs.configHome, 'conch', 'config.json'), `\uFEFF${JSON.stringify({ limits: { model_calls: 5 } })}`);
    harness.server.script([{ text: 'fine' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('fine\n');
  });
});
