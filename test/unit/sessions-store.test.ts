// The session store on a real temp directory: records, loading, sealing, forks, pruning, modes.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { appendFileSync, chmodSync, chownSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SessionStore } from '../../src/sessions/store.ts';
import { loadSession, INTERRUPTED, NOT_STARTED } from '../../src/sessions/load.ts';
import { sessionsDir } from '../../src/sessions/dir.ts';
import type { PolicySnapshot } from '../../src/sessions/records.ts';
import type { Outcome } from '../../src/agent/outcome.ts';

let base: string;
let store: SessionStore;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'conch-sessions-'));
  store = new SessionStore(join(base, 'state', 'conch', 'sessions'));
});
afterEach(() => rm(base, { recursive: true, force: true }));

const policy: PolicySnapshot = {
  unrestricted: false,
  readOnly: false,
  shell: true,
  filesystem: true,
  network: true,
  profile: 'workspace-write',
  only: null,
  denied: [],
  writableRoots: [],
  policyFile: null,
};

function outcome(status: Outcome['status'] = 'completed'): Outcome {
  return {
    status,
    output: 'ok',
    stopReason: 'end_turn',
    usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: null, cacheWriteTokens: null },
    counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 },
    durationMs: 3,
  };
}

/** One whole run: task, a tool call and its result, the answer. */
function writeRun(writer: ReturnType<SessionStore['create']>, task: string, runId = `run-${task}`) {
  writer.startRun({ runId, provider: 'anthropic', model: 'm', policy });
  writer.message({ role: 'user', content: [{ type: 'text', text: task }] });
  writer.message({ role: 'assistant', text: '', toolCalls: [{ id: `c-${task}`, name: 'read', arguments: '{"path":"a"}' }] });
  writer.result({ callId: `c-${task}`, name: 'read', content: [{ type: 'text', text: 'file a' }], isError: false });
  writer.message({ role: 'assistant', text: `answer to ${task}`, toolCalls: [] });
  writer.end(outcome());
}

describe('session store', () => {
  test('a stored run loads back as the same conversation, with its run and policy', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.close();
    const loaded = loadSession(w.path);
    expect(loaded.header).toMatchObject({ id: w.id, cwd: '/work/a', parent: null });
    expect(loaded.conversation).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'first' }] },
      { role: 'assistant', text: '', toolCalls: [{ id: 'c-first', name: 'read', arguments: '{"path":"a"}' }] },
      { role: 'tool', results: [{ callId: 'c-first', name: 'read', content: [{ type: 'text', text: 'file a' }], isError: false }] },
      { role: 'assistant', text: 'answer to first', toolCalls: [] },
    ]);
    expect(loaded.runs).toHaveLength(1);
    expect(loaded.runs[0]).toMatchObject({ task: 'first', end: { status: 'completed' } });
    expect(loaded.policy).toEqual(policy);
    expect(loaded.warnings).toEqual([]);
  });

  test('signed thinking comes back unchanged (the provider needs it so)', () => {
    const w = store.create('/work/a');
    w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
    w.message({ role: 'user', content: [{ type: 'text', text: 'think' }] });
    const thinking = [{ type: 'thinking' as const, text: 'hmm', signature: 'sig==' }, { type: 'redacted_thinking' as const, data: 'opaque' }];
    w.message({ role: 'assistant', text: 'done', toolCalls: [], thinking });
    w.close();
    expect(loadSession(w.path).conversation[1]).toEqual({ role: 'assistant', text: 'done', toolCalls: [], thinking });
  });

  test('the directory is 0700 and each file 0600; a wider existing directory is made private', () => {
    mkdirSync(store.dir, { recursive: true, mode: 0o755 });
    chmodSync(store.dir, 0o755);
    const w = store.create('/work/a');
    w.close();
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    expect(statSync(w.path).mode & 0o777).toBe(0o600);
  });

  test('the default location follows XDG_STATE_HOME, else ~/.local/state; a relative XDG value is ignored', () => {
    expect(sessionsDir({ XDG_STATE_HOME: '/x/state', HOME: '/home/u' })).toBe('/x/state/conch/sessions');
    expect(sessionsDir({ HOME: '/home/u' })).toBe('/home/u/.local/state/conch/sessions');
    expect(sessionsDir({ XDG_STATE_HOME: 'rel', HOME: '/home/u' })).toBe('/home/u/.local/state/conch/sessions');
  });

  test('a truncated last line is skipped with a warning, and the next writer cuts it off before appending', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.close();
    appendFileSync(w.path, '{"t":"run","runId":"half');
    const torn = loadSession(w.path);
    expect(torn.warnings.join('\n')).toContain('the last line is truncated');
    expect(torn.conversation).toHaveLength(4);
    const again = store.continue(torn);
    writeRun(again, 'second');
    again.close();
    const loaded = loadSession(w.path);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.runs.map((r) => r.task)).toEqual(['first', 'second']);
  });

  test('one writer at a time: a session being continued elsewhere is refused until that writer closes', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.close();
    const loaded = loadSession(w.path);
    const busy = store.continue(loaded);
    expect(() => store.continue(loaded)).toThrow(`session ${w.id} is being continued by another conch process`);
    busy.close();
    store.continue(loaded).close();
  });

  test('whole lines another run appended after the load are kept, not cut off as a torn tail', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.close();
    const stale = loadSession(w.path);
    const other = store.continue(stale);
    writeRun(other, 'other');
    other.close();
    const again = store.continue(stale);
    writeRun(again, 'mine');
    again.close();
    expect(loadSession(w.path).runs.map((r) => r.task)).toEqual(['first', 'other', 'mine']);
  });

  test('a corrupt line in the middle is skipped with a warning naming it', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.close();
    const lines = readFileSync(w.path, 'utf8').split('\n');
    lines.splice(2, 0, 'not json at all');
    writeFileSync(w.path, lines.join('\n'));
    const loaded = loadSession(w.path);
    expect(loaded.warnings.join('\n')).toContain('line 3 is not a valid record');
    expect(loaded.runs).toHaveLength(1);
  });

  test('a file that is not a conch session is refused with its path', () => {
    mkdirSync(store.dir, { recursive: true });
    const path = join(store.dir, '0123456789abcdef.jsonl');
    writeFileSync(path, '{"hello":"world"}\n');
    expect(() => loadSession(path)).toThrow(`${path} is not a conch session file`);
    writeFileSync(path, '');
    expect(() => loadSession(path)).toThrow(`${path} is not a conch session file`);
  });

  test('a run killed mid-tool-call loads sealed: the call in progress may have run, the ones after it did not', () => {
    const w = store.create('/work/a');
    w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
    w.message({ role: 'user', content: [{ type: 'text', text: 'go' }] });
    w.message({
      role: 'assistant',
      text: '',
      toolCalls: [
        { id: 'c1', name: 'bash', arguments: '{}' },
        { id: 'c2', name: 'bash', arguments: '{}' },
        { id: 'c3', name: 'bash', arguments: '{}' },
      ],
    });
    w.result({ callId: 'c1', name: 'bash', content: [{ type: 'text', text: 'done' }], isError: false });
    w.close();
    const loaded = loadSession(w.path);
    expect(loaded.runs[0]!.end).toBeNull();
    const tool = loaded.conversation.at(-1)!;
    expect(tool.role).toBe('tool');
    if (tool.role !== 'tool') return;
    expect(tool.results.map((r) => [r.callId, r.isError])).toEqual([
      ['c1', false],
      ['c2', true],
      ['c3', true],
    ]);
    expect(tool.results[1]!.content).toEqual([{ type: 'text', text: INTERRUPTED }]);
    expect(INTERRUPTED).toContain('it may have done some or all of its work');
    expect(tool.results[2]!.content).toEqual([{ type: 'text', text: NOT_STARTED }]);
    expect(NOT_STARTED).toContain('before this call started');
  });

  test('a failed run stays in the record but not in the conversation that continues', () => {
    const w = store.create('/work/a');
    writeRun(w, 'first');
    w.startRun({ runId: 'r2', provider: 'anthropic', model: 'm', policy });
    w.message({ role: 'user', content: [{ type: 'text', text: 'rejected prompt' }] });
    w.end(outcome('failed'));
    w.close();
    const loaded = loadSession(w.path);
    expect(loaded.runs.map((r) => [r.task, r.end?.status])).toEqual([
      ['first', 'completed'],
      ['rejected prompt', 'failed'],
    ]);
    expect(loaded.conversation).toHaveLength(4);
  });

  test('an image is stored once by content hash, however often it is sent', () => {
    const data = Buffer.from('pretend png bytes').toString('base64');
    const image = { type: 'image' as const, mediaType: 'image/png', data };
    const w = store.create('/work/a');
    w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
    w.message({ role: 'user', content: [{ type: 'text', text: 'look' }, image] });
    w.message({ role: 'assistant', text: 'again', toolCalls: [{ id: 'c1', name: 'read', arguments: '{}' }] });
    w.result({ callId: 'c1', name: 'read', content: [image], isError: false });
    w.close();
    const text = readFileSync(w.path, 'utf8');
    expect(text.split(data).length - 1).toBe(1);
    const loaded = loadSession(w.path);
    expect(loaded.conversation[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'look' }, image] });
    const tool = loaded.conversation[2]!;
    expect(tool.role === 'tool' && tool.results[0]!.content).toEqual([image]);
    // Continuing knows the file holds it already.
    const again = store.continue(loaded);
    again.message({ role: 'user', content: [image] });
    again.close();
    expect(readFileSync(w.path, 'utf8').split(data).length - 1).toBe(1);
  });

  test('secret values (provider key, --env values) never reach the file', () => {
    const w = store.create('/work/a', [
      { name: 'provider key', value: 'sk-secret-123' },
      { name: '--env CONCH_TASK_TOKEN', value: 'tok-456789' },
    ]);
    w.startRun({ runId: 'r1', provider: 'anthropic', model: 'm', policy });
    w.message({ role: 'user', content: [{ type: 'text', text: 'echo tok-456789 and sk-secret-123' }] });
    w.result({ callId: 'c1', name: 'bash', content: [{ type: 'text', text: 'tok-456789' }], isError: false });
    w.close();
    const text = readFileSync(w.path, 'utf8');
    expect(text).not.toContain('tok-456789');
    expect(text).not.toContain('sk-secret-123');
    expect(text).toContain('[redacted --env CONCH_TASK_TOKEN]');
  });
});

describe('finding sessions', () => {
  test('by full id, by unique prefix; an unknown, ambiguous or malformed id is a clear error', () => {
    const a = store.create('/work/a');
    const b = store.create('/work/a');
    a.close();
    b.close();
    expect(store.resolve(a.id).id).toBe(a.id);
    let i = 1;
    while (a.id.slice(0, i) === b.id.slice(0, i)) i++;
    expect(store.resolve(a.id.slice(0, i)).id).toBe(a.id);
    expect(() => store.resolve('ffffffffffffffff0')).toThrow("no session 'ffffffffffffffff0'");
    expect(() => store.resolve('zz')).toThrow("'zz' is not a session id");
    if (a.id[0] === b.id[0]) expect(() => store.resolve(a.id[0]!)).toThrow('matches 2 sessions');
  });

  test("for --resume a prefix shared with other workspaces' sessions names this workspace's one; elsewhere it stays ambiguous", () => {
    for (const [id, cwd] of [['abcd000000000001', '/work/a'], ['abcd000000000002', '/work/b'], ['abcd000000000003', '/work/b']] as const) store.create(cwd, [], null, id).close();
    expect(store.resolve('abcd', '/work/a').id).toBe('abcd000000000001');
    expect(() => store.resolve('abcd', '/work/b')).toThrow("'abcd' matches 3 sessions");
    expect(() => store.resolve('abcd', '/work/c')).toThrow("'abcd' matches 3 sessions");
    expect(() => store.resolve('abcd')).toThrow("'abcd' matches 3 sessions");
  });

  test('an ambiguous prefix says how many matches it does not list', () => {
    for (let n = 1; n <= 7; n++) store.create('/work/a', [], null, `beef00000000000${n}`).close();
    let message = '';
    try {
      store.resolve('beef');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("'beef' matches 7 sessions");
    expect(message.match(/beef0{11}\d/g)?.length).toBe(5);
    expect(message).toContain('and 2 more');
  });

  test('latest() is the most recently active session of that workspace only', () => {
    const a1 = store.create('/work/a');
    const b = store.create('/work/b');
    const a2 = store.create('/work/a');
    for (const w of [a1, b, a2]) w.close();
    const past = new Date(Date.now() - 60_000);
    utimesSync(a2.path, past, past);
    expect(store.latest('/work/a')!.id).toBe(a1.id);
    expect(store.latest('/work/b')!.id).toBe(b.id);
    expect(store.latest('/work/c')).toBeNull();
  });

  test('a session of another workspace is refused with the path it belongs to', () => {
    const w = store.create('/work/a');
    w.close();
    expect(() => store.loadFor(store.resolve(w.id), '/work/b')).toThrow(`session ${w.id} belongs to /work/a`);
  });

  test('a session file that is a link, a FIFO or not the user\'s is neither continued nor written through', () => {
    // Whoever could write the store before conch made it private (a shared XDG_STATE_HOME) may have
    // left these: continuing one loaded their conversation as the user's and appended (and chmodded)
    // the user's next one to whatever the link led to; a FIFO hung -c and `conch sessions`.
    const real = store.create('/work/a');
    writeRun(real, 'planted');
    real.close();
    const elsewhere = join(base, 'elsewhere.jsonl');
    renameSync(real.path, elsewhere);
    chmodSync(elsewhere, 0o644);
    const before = readFileSync(elsewhere, 'utf8');
    symlinkSync(elsewhere, real.path);
    expect(store.latest('/work/a')).toBeNull();
    expect(() => store.loadFor(store.resolve(real.id), '/work/a')).toThrow(`the session file ${real.path} is a link`);
    expect(readFileSync(elsewhere, 'utf8')).toBe(before);
    expect(statSync(elsewhere).mode & 0o777).toBe(0o644);

    const fifo = join(store.dir, 'abcdef0123456789.jsonl');
    expect(Bun.spawnSync(['mkfifo', fifo]).exitCode).toBe(0);
    expect(store.latest('/work/a')).toBeNull();
    expect(() => loadSession(fifo)).toThrow(`the session file ${fifo} is not a regular file`);
    expect(store.prune({ keep: 1 })).toEqual(expect.any(Array));

    if (process.getuid?.() === 0) {
      const theirs = store.create('/work/a');
      writeRun(theirs, 'theirs');
      theirs.close();
      chownSync(theirs.path, 65534, 65534);
      expect(store.latest('/work/a')).toBeNull();
      expect(() => loadSession(theirs.path)).toThrow(`the session file ${theirs.path} is not yours`);
    }
  });

  test('a fork is a new session naming its parent; the parent file is unchanged', () => {
    const parent = store.create('/work/a');
    writeRun(parent, 'first');
    parent.close();
    const before = readFileSync(parent.path, 'utf8');
    const fork = store.fork(loadSession(parent.path));
    writeRun(fork, 'forked');
    fork.close();
    expect(readFileSync(parent.path, 'utf8')).toBe(before);
    const loaded = loadSession(fork.path);
    expect(loaded.header.id).not.toBe(parent.id);
    expect(loaded.header.parent).toEqual({ id: parent.id, runs: 1 });
    expect(loaded.runs.map((r) => r.task)).toEqual(['first', 'forked']);
  });

  test('prune removes sessions older than a duration, and beyond a cap, never the one in use', () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const w = store.create('/work/a');
      w.close();
      const t = new Date(Date.now() - (i + 1) * 86_400_000);
      utimesSync(w.path, t, t);
      ids.push(w.id);
    }
    // ids[0] is 1 day old … ids[3] is 4 days old.
    expect(store.prune({ olderThanMs: 3.5 * 86_400_000 }).sort()).toEqual([ids[3]!]);
    expect(store.prune({ keep: 1, spare: ids[2] }).sort()).toEqual([ids[0]!, ids[1]!].sort());
    expect(store.files().map((f) => f.id)).toEqual([ids[2]!]);
  });

  test('prune never removes a session a writer still holds (another task of the same conch run)', () => {
    const older = store.create('/work/a');
    const t = new Date(Date.now() - 86_400_000);
    utimesSync(older.path, t, t);
    const newer = store.create('/work/a');
    // Both writers open, as when `conch run A B` starts B's session while A's is being written.
    expect(store.prune({ keep: 1, spare: newer.id })).toEqual([]);
    expect(store.files().map((f) => f.id).sort()).toEqual([older.id, newer.id].sort());
    older.close();
    expect(store.prune({ keep: 1, spare: newer.id })).toEqual([older.id]);
    newer.close();
  });
});
