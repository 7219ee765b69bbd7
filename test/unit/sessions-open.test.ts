// How a host opens sessions: choosing one (-c, --resume, --fork), recording runs, the cap, --ephemeral.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import type { Config } from '../../src/config/types.ts';
import { loadSession } from '../../src/sessions/load.ts';
import { narrowConfig, openRecording, planSession, policyFlags } from '../../src/sessions/open.ts';
import { transcript } from '../../src/sessions/transcript.ts';
import type { Outcome } from '../../src/agent/outcome.ts';

let root: string;
let ws: string;
let other: string;
let dir: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sopen-')));
  ws = join(root, 'ws');
  other = join(root, 'other');
  dir = join(root, 'state', 'conch', 'sessions');
  for (const d of [ws, other, join(root, 'home')]) mkdirSync(d, { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const config = (cwd = ws, flags = {}): Promise<Config> =>
  loadConfig({ cwd, env: { HOME: join(root, 'home'), XDG_CONFIG_HOME: join(root, 'xdg'), XDG_STATE_HOME: join(root, 'state') }, flags });
const done: Outcome = {
  status: 'completed', output: 'ok', stopReason: 'end_turn',
  usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null },
  counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 }, durationMs: 1,
};

async function oneRun(choice = {}, task = 'task', cwd = ws) {
  const plan = planSession(choice, cwd, dir);
  const c = await config(cwd, policyFlags(plan, {}));
  const recording = openRecording(plan, c, narrowConfig(plan, c));
  const journal = recording.begin(`run-${task}`, { name: 'anthropic', model: 'm' });
  journal?.message({ role: 'user', content: [{ type: 'text', text: task }] });
  journal?.message({ role: 'assistant', text: `answer ${task}`, toolCalls: [] });
  recording.finish(done);
  recording.close();
  return { plan, recording };
}

describe('opening sessions', () => {
  test('a fresh run starts a session; -c continues the latest of this workspace with its conversation', async () => {
    const first = await oneRun({}, 'one');
    expect(first.recording.facts).toMatchObject({ resumed: false, parent: null });
    const second = await oneRun({ continue: true }, 'two');
    expect(second.recording.id).toBe(first.recording.id);
    expect(second.plan.loaded!.conversation).toHaveLength(2);
    expect(second.recording.facts).toMatchObject({ resumed: true, parent: null });
    const t = transcript(loadSession(join(dir, `${first.recording.id}.jsonl`)));
    expect(t.runs.map((r) => r.items[0])).toEqual([{ type: 'task', text: 'one' }, { type: 'task', text: 'two' }]);
  });

  test('-c in a workspace without sessions, --fork alone, and -c with --resume are refused', async () => {
    expect(() => planSession({ continue: true }, ws, dir)).toThrow('no earlier session in');
    expect(() => planSession({ fork: true }, ws, dir)).toThrow('--fork needs -c or --resume ID');
    expect(() => planSession({ continue: true, resume: 'ab' }, ws, dir)).toThrow('give one of them');
  });

  test('--resume of another workspace is refused with the path it belongs to', async () => {
    const { recording } = await oneRun({}, 'one', other);
    expect(() => planSession({ resume: recording.id!.slice(0, 6) }, ws, dir)).toThrow(`belongs to ${other}`);
  });

  test('--fork makes a new session naming its parent', async () => {
    const first = await oneRun({}, 'one');
    const fork = await oneRun({ resume: first.recording.id!, fork: true }, 'two');
    expect(fork.recording.id).not.toBe(first.recording.id);
    expect(fork.recording.facts).toMatchObject({ parent: first.recording.id, resumed: true });
    expect(loadSession(join(dir, `${first.recording.id}.jsonl`)).runs).toHaveLength(1);
  });

  test('--ephemeral writes nothing', async () => {
    const { recording } = await oneRun({ ephemeral: true });
    expect(recording.id).toBeNull();
    expect(() => readdirSync(dir)).toThrow();
  });

  test('a new session removes the oldest beyond sessions.keep', async () => {
    mkdirSync(join(root, 'xdg', 'conch'), { recursive: true });
    await Bun.write(join(root, 'xdg', 'conch', 'config.json'), JSON.stringify({ sessions: { keep: 2 } }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await oneRun({}, `t${i}`)).recording.id!);
      const t = new Date(Date.now() - (10 - i) * 60_000);
      utimesSync(join(dir, `${ids[i]}.jsonl`), t, t);
    }
    expect(readdirSync(dir).sort()).toEqual([`${ids[1]}.jsonl`, `${ids[2]}.jsonl`].sort());
  });
});
