// Durations in flags and config files: validated once, with the flag or key named, up to 365 days.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { type CliFlags } from '../../src/config/types.ts';
import { ConfigError } from '../../src/core/errors.ts';

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-config-durations-')));
  mkdirSync(join(root, 'xdg', 'conch'), { recursive: true });
  mkdirSync(join(root, 'project'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const userFile = () => join(root, 'xdg', 'conch', 'config.json');
const load = (flags: CliFlags = {}) => loadConfig({ cwd: join(root, 'project'), env: { HOME: root, XDG_CONFIG_HOME: join(root, 'xdg') }, flags });

async function refused(flags: CliFlags): Promise<ConfigError> {
  const e = await load(flags).catch((err) => err);
  expect(e).toBeInstanceOf(ConfigError);
  return e as ConfigError;
}

describe('long durations are what they say, up to the documented maximum', () => {
  test('--timeout 600h and --limit deadline_ms / tool_timeout_max_ms above 2^31 ms', async () => {
    expect((await load({ timeout: '600h' })).limits.deadline_ms).toBe(2_160_000_000);
    expect((await load({ timeout: '365d' })).limits.deadline_ms).toBe(31_536_000_000);
    const c = await load({ limit: ['deadline_ms=3000000000', 'tool_timeout_max_ms=3000000000'] });
    expect(c.limits).toMatchObject({ deadline_ms: 3_000_000_000, tool_timeout_max_ms: 3_000_000_000 });
  });
  test('longer than 365 days is a setup error naming the flag or key', async () => {
    const t = await refused({ timeout: '366d' });
    expect(t.message).toBe('--timeout 366d: is longer than the maximum of 365d (31536000000 ms).');
    expect(t.key).toBe('--timeout');
    const l = await refused({ limit: ['tool_timeout_max_ms=40000000000'] });
    expect(l.message).toBe('--limit tool_timeout_max_ms=40000000000: tool_timeout_max_ms is longer than the maximum of 365d (31536000000 ms).');
    writeFileSync(userFile(), JSON.stringify({ limits: { deadline_ms: 40_000_000_000 } }));
    const f = await refused({});
    expect(f.message).toBe(`${userFile()}: "limits.deadline_ms" is longer than the maximum of 365d (31536000000 ms).`);
    expect(f.key).toBe('limits.deadline_ms');
    writeFileSync(userFile(), JSON.stringify({ retry: { maxDelayMs: 40_000_000_000 } }));
    expect((await refused({})).key).toBe('retry.maxDelayMs');
  });
});

describe('0 and negative durations', () => {
  test('0 is refused alike by --timeout, --limit deadline_ms and the config key', async () => {
    expect((await refused({ timeout: '0' })).message).toBe('--timeout 0: must be more than 0 (at most 365d).');
    expect((await refused({ timeout: 0 })).message).toBe('--timeout 0: must be more than 0 (at most 365d).');
    expect((await refused({ limit: ['deadline_ms=0'] })).message).toBe('--limit deadline_ms=0: deadline_ms must be more than 0 (at most 365d).');
    expect((await refused({ limit: ['tool_timeout_ms=0'] })).key).toBe('--limit');
    writeFileSync(userFile(), JSON.stringify({ limits: { deadline_ms: 0 } }));
    expect((await refused({})).message).toBe(`${userFile()}: "limits.deadline_ms" must be more than 0 (at most 365d).`);
  });
  test('0 stays "unlimited" for the counts, and a retry delay of 0 means at once', async () => {
    expect((await load({ limit: ['model_calls=0'] })).limits.model_calls).toBe(0);
    writeFileSync(userFile(), JSON.stringify({ retry: { initialDelayMs: 0 } }));
    expect((await load({})).files).toEqual([userFile()]);
  });
  test('--timeout -5 is a value error', async () => {
    expect((await refused({ timeout: -5 })).message).toBe('--timeout -5: must be more than 0 (at most 365d).');
    expect((await refused({ timeout: '-5' })).message).toBe('--timeout -5: must be more than 0 (at most 365d).');
  });
});
