// The README's config and policy examples are what a new user pastes first: each one must load as
// the file it is shown as (a user config, or a --policy file), or the README is wrong.
import { afterAll, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readConfigFile } from '../../src/config/file.ts';
import { loadPolicyFile } from '../../src/config/policy-file.ts';

const README = readFileSync(join(import.meta.dir, '../../README.md'), 'utf8');
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'conch-readme-examples-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every ```json block, with the line it starts on; Zed's settings.json is the editor's file, not conch's. */
const blocks = [...README.matchAll(/^```json\n([\s\S]*?)^```$/gm)]
  .map((m) => ({ text: m[1]!, line: README.slice(0, m.index).split('\n').length }))
  .filter((b) => !b.text.includes('"agent_servers"'));

test('the README shows config and policy examples', () => {
  expect(blocks.length).toBeGreaterThanOrEqual(5);
  expect(blocks.some((b) => b.text.includes('"version": 1'))).toBe(true);
});

for (const block of blocks) {
  const policy = block.text.includes('"version": 1');
  test(`README line ${block.line}: the ${policy ? '--policy file' : 'config'} example loads`, async () => {
    const file = join(dir, `line-${block.line}.json`);
    writeFileSync(file, block.text);
    if (policy) expect((await loadPolicyFile(file, dir)).kind).toBe('policy');
    else expect((await readConfigFile('user', file, dir, file))?.kind).toBe('user');
  });
}
