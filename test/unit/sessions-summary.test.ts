// The listing's reading of a session file (sessions/summary.ts) agrees with a full load on what a
// listing shows, while skipping what it never needs.
import { afterEach, beforeEach, expect, test } from 'bun:test';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionStore } from '../../src/sessions/store.ts';
import { loadSession } from '../../src/sessions/load.ts';
import { summarizeSession } from '../../src/sessions/summary.ts';
import type { PolicySnapshot } from '../../src/sessions/records.ts';
import type { Outcome } from '../../src/agent/outcome.ts';

let base: string;
let store: SessionStore;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'conch-summary-'));
  store = new SessionStore(join(base, 'sessions'));
});
afterEach(() => rm(base, { recursive: true, force: true }));

const policy: PolicySnapshot = { unrestricted: false, readOnly: false, shell: true, filesystem: true, network: true, profile: 'workspace-write', only: null, denied: [], writableRoots: [], policyFile: null };
const outcome = (status: Outcome['status']): Outcome => ({
  status,
  output: 'ok',
  stopReason: 'end_turn',
  usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: null, cacheWriteTokens: null },
  counts: { modelCalls: 1, toolCalls: 1, toolErrors: 0 },
  durationMs: 3,
  ...(status === 'failed' ? { code: 'provider_error', message: 'no' } : {}),
} as Outcome);

test('runs, tasks and ends come out as a full load gives them, across ended, failed, killed and image runs', () => {
  const w = store.create('/work/a');
  const big = 'x'.repeat(200_000);
  w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
  w.message({ role: 'user', content: [{ type: 'text', text: 'first task' }] });
  w.message({ role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"cat big"}' }] });
  w.result({ callId: 'c1', name: 'bash', content: [{ type: 'text', text: big }], isError: false });
  w.message({ role: 'assistant', text: 'done', toolCalls: [] });
  w.end(outcome('completed'));
  w.startRun({ runId: 'r2', provider: 'openai', model: 'n', policy });
  w.message({ role: 'user', content: [{ type: 'text', text: 'look at' }, { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' }] });
  w.end(outcome('failed'));
  // Killed mid-run: no end record.
  w.startRun({ runId: 'r3', provider: 'anthropic', model: 'm', policy });
  w.message({ role: 'user', content: [{ type: 'text', text: 'third' }] });
  w.message({ role: 'assistant', text: '', toolCalls: [{ id: 'c3', name: 'read', arguments: '{"path":"a"}' }] });
  w.close();
  const full = loadSession(w.path);
  const summary = summarizeSession(w.path)!;
  expect(summary.header).toEqual(full.header);
  expect(summary.runs).toEqual(full.runs);
  expect(summary.runs.map((r) => [r.task, r.end?.status ?? null])).toEqual([
    ['first task', 'completed'],
    ['look at [image/png]', 'failed'],
    ['third', null],
  ]);
});

test('another workspace\'s session is left out after its header; a torn last line and a corrupt line are skipped', () => {
  const w = store.create('/work/a');
  w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
  w.message({ role: 'user', content: [{ type: 'text', text: 'only task' }] });
  w.close();
  expect(summarizeSession(w.path, '/work/b')).toBeNull();
  appendFileSync(w.path, 'not json\n{"t":"end","runId":"r1","sta');
  const summary = summarizeSession(w.path, '/work/a')!;
  expect(summary.runs).toEqual(loadSession(w.path).runs);
  expect(summary.runs[0]!.end).toBeNull();
});

test('a file that is not a session is refused as a full load refuses it', () => {
  const path = join(base, 'x.jsonl');
  writeFileSync(path, '{"t":"nope"}\n');
  expect(() => summarizeSession(path)).toThrow('is not a conch session file');
  expect(() => loadSession(path)).toThrow('is not a conch session file');
  // Unchanged by reading.
  expect(readFileSync(path, 'utf8')).toBe('{"t":"nope"}\n');
});
