// Config and policy files as people write them: a syntax error says where (line and column), and a
// leading UTF-8 byte-order mark (which some editors add and nobody can see) is accepted.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { parseJsonText } from '../../src/config/json-text.ts';
import { loadPolicyFile } from '../../src/config/policy-file.ts';

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-config-json-')));
  mkdirSync(join(root, 'xdg', 'conch'), { recursive: true });
  mkdirSync(join(root, 'project'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const userFile = () => join(root, 'xdg', 'conch', 'config.json');
const load = () => loadConfig({ cwd: join(root, 'project'), env: { HOME: root, XDG_CONFIG_HOME: join(root, 'xdg'), OPENAI_API_KEY: 'k' }, flags: {} });

async function refusedWith(text: string): Promise<string> {
  writeFileSync(userFile(), text);
  const e = await load().catch((err) => err);
  expect(e).toBeInstanceOf(ConfigError);
  return (e as Error).message;
}

describe('config syntax errors name the file, the line and the column', () => {
  test('a trailing comma', async () => {
    const m = await refusedWith('{\n  "model": "openai/x",\n  "limits": { "model_calls": 3, }\n}\n');
    expect(m).toStartWith(`${userFile()}: not valid JSON at line 3, column 33, at "}"`);
  });
  test('a misspelt literal', async () => {
    expect(await refusedWith('{\n  "network": tru\n}')).toContain('not valid JSON at line 2, column 14');
  });
  test('a missing colon, and a file cut short', async () => {
    expect(await refusedWith('{ "model" "openai/x" }')).toContain('at line 1, column 11');
    expect(await refusedWith('{ "model": ')).toContain('at line 1, column 12, at the end of the file');
  });
  test('a bad escape and a raw newline inside a string', async () => {
    expect(await refusedWith('{ "model": "a\\qb" }')).toContain('at line 1, column 14');
    expect(await refusedWith('{ "model": "a\nb" }')).toContain('at line 1, column 14');
  });
  test('something after the object', async () => {
    expect(await refusedWith('{}\n{}')).toContain('at line 2, column 1');
  });
  test('deep nesting is located without exhausting the stack', () => {
    const r = parseJsonText(`${'['.repeat(200_000)}x`);
    expect(r).toMatchObject({ ok: false });
    expect(!r.ok && r.message).toContain('at line 1, column 200001');
  });
});

describe('a UTF-8 byte-order mark', () => {
  test('is accepted at the start of a config file', async () => {
    writeFileSync(userFile(), `\uFEFF${JSON.stringify({ model: 'openai/from-bom' })}`);
    expect((await load()).provider?.model).toBe('from-bom');
  });
  test('is accepted at the start of a policy file, and a syntax error there is located too', async () => {
    const file = join(root, 'policy.json');
    writeFileSync(file, `\uFEFF{ "version": 1, "tools": { "deny": [{ "id": "no-bash", "name": "bash" }] } }`);
    expect((await loadPolicyFile(file, root)).toolsDeny).toEqual([{ name: 'bash', rule: 'no-bash' }]);
    writeFileSync(file, '{\n  "version": 1,\n  "tools": { "deny": [ }\n}');
    const e = await loadPolicyFile(file, root).catch((err) => err);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toStartWith(`${file}: the policy file is not valid JSON at line 3, column 24`);
  });
});
