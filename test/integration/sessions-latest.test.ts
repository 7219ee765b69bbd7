// -c through the real CLI with the latest-session index (sessions/latest.ts) in $HOME/.cache: the
// store keeps only session files, two conch runs at once leave an index that agrees with the store,
// and a corrupt entry changes nothing but the cost.
import { describe, expect, test } from 'bun:test';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { planSession } from '../../src/sessions/open.ts';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await writeConfig(d, { retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5 } });
});
const storeDir = () => join(harness.dirs.home, '.local', 'state', 'conch', 'sessions');
const indexDir = () => join(harness.dirs.home, '.cache', 'conch', 'sessions');

async function run(args: string[]) {
  const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--json', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
  expect(r.stderr).not.toContain('Error');
  return JSON.parse(r.stdout) as { sessionId: string; output: string };
}

/** The session a scan of the store picks (by mtime, no index): what the index must agree with. */
const scanned = () => planSession({ continue: true }, harness.dirs.workspace, storeDir()).loaded!.header.id;

describe('-c with the latest-session index', () => {
  test('two conch runs at once in one workspace: -c continues the one that ended last, as the store says', async () => {
    harness.server.script((req) => {
      const text = JSON.stringify(req.body.messages);
      if (text.includes('slow task')) return { text: 'slow answer', delayMs: 1500 };
      return { text: text.includes('quick task') ? 'quick answer' : 'continued' };
    });
    const slow = run(['slow task']);
    for (let i = 0; i < 400 && harness.server.requests.length === 0; i++) await Bun.sleep(25);
    const quick = await run(['quick task']);
    const ended = await slow;
    expect(quick.sessionId).not.toBe(ended.sessionId);
    expect(readdirSync(storeDir()).sort()).toEqual([`${quick.sessionId}.jsonl`, `${ended.sessionId}.jsonl`].sort());
    expect(readdirSync(indexDir())).toHaveLength(1);
    const latest = scanned();
    expect([quick.sessionId, ended.sessionId]).toContain(latest);
    const next = await run(['-c', 'next task']);
    expect(next.sessionId).toBe(latest);
  });

  test('a corrupt entry: -c still continues the latest session, and the entry is rewritten', async () => {
    harness.server.script(() => ({ text: 'answer' }));
    await run(['first task']);
    const second = await run(['second task']);
    const [entry] = readdirSync(indexDir());
    // Replaced by a regular file (a link is never followed, so this is no entry).
    rmSync(join(indexDir(), entry!));
    writeFileSync(join(indexDir(), entry!), 'v1:');
    const next = await run(['-c', 'third task']);
    expect(next.sessionId).toBe(second.sessionId);
    expect(JSON.stringify(harness.server.requests.at(-1)!.body.messages)).toContain('second task');
    expect(readdirSync(indexDir())).toEqual([entry!]);
  });

  test('a damaged latest session (its header line unreadable) stops -c with a message naming the file and the way on; nothing is sent', async () => {
    harness.server.script(() => ({ text: 'answer' }));
    const first = await run(['first task']);
    const second = await run(['second task']);
    const file = join(storeDir(), `${second.sessionId}.jsonl`);
    const lines = readFileSync(file, 'utf8').split('\n');
    writeFileSync(file, ['{"t":"sess\u0000garbage', ...lines.slice(1)].join('\n'));
    const requests = harness.server.requests.length;
    for (const index of [true, false]) {
      if (!index) rmSync(indexDir(), { recursive: true, force: true });
      const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '-c', 'third task'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(file);
      expect(r.stderr).toContain('damaged');
      expect(r.stderr).toContain(`conch --resume ${first.sessionId}`);
      expect(r.stderr).not.toMatch(/\n\s+at |Error:/);
    }
    expect(harness.server.requests.length).toBe(requests);
  });

  test('a latest session killed before its header was written (an empty file) holds nothing: -c continues the one before it', async () => {
    harness.server.script(() => ({ text: 'answer' }));
    const first = await run(['first task']);
    writeFileSync(join(storeDir(), 'fedcba9876543210.jsonl'), '');
    const next = await run(['-c', 'second task']);
    expect(next.sessionId).toBe(first.sessionId);
  });
});
