// Sessions through the real CLI and the local model server: continue, resume, fork, --ephemeral,
// policy on resume, a SIGKILLed run, a torn file, the sandbox's view of the store, `conch sessions`.
import { describe, expect, test } from 'bun:test';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, CONCH, runConch, useHarness, writeConfig, type Sandbox } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await writeConfig(d, { retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5 } });
});

const storeDir = (dirs: Sandbox) => join(dirs.home, '.local', 'state', 'conch', 'sessions');
const sessionFile = (dirs: Sandbox, id: string) => join(storeDir(dirs), `${id}.jsonl`);

interface Options {
  dirs?: Sandbox;
  env?: Record<string, string>;
  onSpawn?: (c: ReturnType<typeof Bun.spawn>) => void;
}

function conch(args: string[], options: Options = {}) {
  return runConch({
    dirs: options.dirs ?? harness.dirs,
    args: ['--model', 'anthropic/test-model', ...args],
    env: { ...anthropicEnv(harness.server.anthropicBaseUrl), ...options.env },
    onSpawn: options.onSpawn,
  });
}

/** `conch sessions …` takes no run flags. */
const cmd = (args: string[]) => runConch({ dirs: harness.dirs, args, env: {} });

async function jsonRun(args: string[], options: Options = {}) {
  const r = await conch(['--json', ...args], options);
  if (!r.stdout.trim()) throw new Error(`no envelope: ${r.stderr}`);
  return { ...r, doc: JSON.parse(r.stdout) };
}

/** Everything the model server was sent in request `i`, as one string. */
const sent = (i: number) => JSON.stringify(harness.server.requests[i]!.body.messages);
const toolNames = (i: number) => (harness.server.requests[i]!.body.tools ?? []).map((t: any) => t.name).sort();

describe('continuing and resuming', () => {
  test('-c carries the earlier turns into the next request, under the same session id', async () => {
    harness.server.script([{ text: 'first answer' }, { text: 'second answer' }]);
    const one = await jsonRun(['first task']);
    expect(one.doc.sessionId).toMatch(/^[0-9a-f]{16}$/);
    const trace = join(harness.dirs.home, 'trace.jsonl');
    const two = await jsonRun(['-c', '--trace', trace, 'second task']);
    expect(two.code).toBe(0);
    expect(two.doc.sessionId).toBe(one.doc.sessionId);
    const firstLine = JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]!);
    expect(firstLine).toMatchObject({ type: 'run.started', session: { id: one.doc.sessionId, resumed: true, parent: null } });
    expect(two.doc.runId).not.toBe(one.doc.runId);
    expect(sent(1)).toContain('first task');
    expect(sent(1)).toContain('first answer');
    expect(sent(1)).toContain('second task');
    expect(sent(0)).not.toContain('second task');
  });

  test('--resume takes a full id or a unique prefix', async () => {
    harness.server.script([{ text: 'a1' }, { text: 'b1' }, { text: 'a2' }, { text: 'a3' }]);
    const a = await jsonRun(['task A']);
    await jsonRun(['task B']);
    const byId = await jsonRun(['--resume', a.doc.sessionId, 'more A']);
    expect(byId.doc.sessionId).toBe(a.doc.sessionId);
    expect(sent(2)).toContain('task A');
    expect(sent(2)).not.toContain('task B');
    const byPrefix = await jsonRun(['--resume', a.doc.sessionId.slice(0, 8), 'even more A']);
    expect(byPrefix.doc.sessionId).toBe(a.doc.sessionId);
    expect(sent(3)).toContain('more A');
  });

  test("--resume PREFIX that another workspace's sessions share goes on with this workspace's session", async () => {
    harness.server.script([{ text: 'here' }, { text: 'again' }]);
    const here = await jsonRun(['task here']);
    const id: string = here.doc.sessionId;
    // Two sessions of another workspace whose ids begin as this one's does (the store names files by id).
    const other = join(harness.dirs.home, 'other-ws');
    mkdirSync(other);
    const { SessionStore } = await import('../../src/sessions/store.ts');
    const store = new SessionStore(storeDir(harness.dirs));
    for (const tail of ['0', '1']) store.create(realpathSync(other), [], null, `${id.slice(0, 4)}${tail.repeat(12)}`).close();
    const r = await jsonRun(['--resume', id.slice(0, 4), 'more here']);
    expect(r.doc.sessionId).toBe(id);
    expect(sent(1)).toContain('task here');
    // From the other workspace the prefix stays ambiguous: two of its own match.
    const there = await runConch({ dirs: { ...harness.dirs, workspace: other }, args: ['--model', 'anthropic/test-model', '--resume', id.slice(0, 4), 'x'], env: anthropicEnv(harness.server.anthropicBaseUrl) });
    expect(there.code).toBe(2);
    expect(there.stderr).toContain(`'${id.slice(0, 4)}' matches 3 sessions`);
  });

  test('--resume of another workspace is refused with the path it belongs to; -c there finds nothing', async () => {
    harness.server.script([{ text: 'done' }]);
    const a = await jsonRun(['task A']);
    const elsewhere = join(harness.dirs.home, 'other');
    mkdirSync(elsewhere);
    const otherDirs = { ...harness.dirs, workspace: elsewhere };
    const r = await conch(['--resume', a.doc.sessionId, 'go'], { dirs: otherDirs });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`belongs to ${harness.dirs.workspace}`);
    const c = await conch(['-c', 'go'], { dirs: otherDirs });
    expect(c.code).toBe(2);
    expect(c.stderr).toContain('no earlier session in');
    expect(harness.server.requests).toHaveLength(1);
  });

  test('--fork starts a new session from that point and leaves the parent unchanged', async () => {
    harness.server.script([{ text: 'parent answer' }, { text: 'fork answer' }]);
    const parent = await jsonRun(['parent task']);
    const before = readFileSync(sessionFile(harness.dirs, parent.doc.sessionId), 'utf8');
    const fork = await jsonRun(['--resume', parent.doc.sessionId, '--fork', 'fork task']);
    expect(fork.doc.sessionId).not.toBe(parent.doc.sessionId);
    expect(sent(1)).toContain('parent answer');
    expect(readFileSync(sessionFile(harness.dirs, parent.doc.sessionId), 'utf8')).toBe(before);
    const show = await cmd(['sessions', 'show', fork.doc.sessionId, '--json']);
    expect(JSON.parse(show.stdout).parent).toEqual({ id: parent.doc.sessionId, runs: 1 });
    expect((await cmd(['sessions', 'show', fork.doc.sessionId])).stdout).toContain(`forked from ${parent.doc.sessionId} after 1 turn\n`);
  });

  test('--ephemeral stores nothing', async () => {
    harness.server.script([{ text: 'done' }]);
    const r = await jsonRun(['--ephemeral', 'task']);
    expect(r.code).toBe(0);
    expect(r.doc.sessionId).toBeNull();
    expect(existsSync(storeDir(harness.dirs))).toBe(false);
  });
});

describe('a long history', () => {
  test('over context_bytes on -c, the oldest tool results are elided with a note the model sees, and stderr says so', async () => {
    await Bun.write(join(harness.dirs.workspace, 'big.txt'), `${'old line of output\n'.repeat(600)}`);
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 'big.txt' } }] }, { text: 'read it' }, { text: 'still fine' }]);
    await jsonRun(['read big.txt']);
    const bytes = JSON.stringify(harness.server.requests[1]!.body).length;
    const r = await conch(['-c', '--limit', `context_bytes=${bytes - 2000}`, 'what was in it?']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('elided to stay within context_bytes');
    expect(sent(2)).toContain('elided by conch');
    expect(sent(2)).not.toContain('old line of output');
    expect(sent(2)).toContain('read big.txt');
  });
});

describe('policy on resume', () => {
  test('a --read-only session cannot write after -c: write and edit are not offered, the header says why', async () => {
    harness.server.script([{ text: 'looked' }, { toolCalls: [{ name: 'write', arguments: { path: 'new.txt', content: 'x' } }] }, { text: 'could not' }]);
    await jsonRun(['--read-only', 'look around']);
    const r = await conch(['-c', 'now write new.txt']);
    expect(toolNames(1)).not.toContain('write');
    expect(toolNames(1)).not.toContain('edit');
    expect(existsSync(join(harness.dirs.workspace, 'new.txt'))).toBe(false);
    expect(r.stderr).toContain('under the policy now ∩ the recorded one: read-only');
    // The trace names the session but not what was narrowed (that can name paths) without --trace-content.
    const trace = join(harness.dirs.home, 'trace.jsonl');
    harness.server.script([{ text: 'ok' }]);
    const extra = join(harness.dirs.home, 'extra-root');
    mkdirSync(extra);
    const again = await conch(['-c', '--allow-write', extra, '--trace', trace, 'again']);
    expect(again.stderr).toContain(`not writable: ${extra}`);
    const started = JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]!);
    expect(started.session).toMatchObject({ resumed: true, narrowed: 2 });
    expect(readFileSync(trace, 'utf8')).not.toContain(extra);
  });

  test('--unrestricted is not carried over: the resumed run is restricted unless given again', async () => {
    harness.server.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    const one = await jsonRun(['--unrestricted', 'task']);
    expect(one.doc.mode).toBe('unrestricted');
    expect((await jsonRun(['-c', 'again'])).doc.mode).toBe('restricted');
    expect((await jsonRun(['-c', '--unrestricted', 'and again'])).doc.mode).toBe('unrestricted');
  });

  test('an --allow-net session stays on its allowlist after -c: the hosts are not widened to the whole network', async () => {
    const proxyEnv = { toolCalls: [{ name: 'bash', arguments: { command: 'echo "proxy=${HTTPS_PROXY:-none}"' } }] };
    harness.server.script([{ text: 'one' }, proxyEnv, { text: 'two' }, { text: 'three' }]);
    await jsonRun(['--allow-net', 'registry.npmjs.org', 'task']);
    const two = await conch(['-c', 'again']);
    expect(two.stderr).toContain('network limited to registry.npmjs.org');
    expect(harness.server.requests[1]!.body.system.map((b: any) => b.text).join('')).toContain('limited to registry.npmjs.org');
    expect(sent(2)).toContain('proxy=http://127.0.0.1:3128');
    // Another host given now is not one the session had: it is dropped, not added.
    const three = await conch(['-c', '--allow-net', 'example.org', 'and again']);
    expect(three.stderr).toContain('network limited to no host');
  });
});

describe('a damaged session', () => {
  test('a run SIGKILLed mid-tool-call leaves a session that continues cleanly', async () => {
    const marker = `47.${Math.floor(Math.random() * 1e9)}`;
    harness.server.script([
      { text: 'starting', toolCalls: [{ id: 'call_killed', name: 'bash', arguments: { command: `echo begun > begun.txt; sleep ${marker}` } }, { id: 'call_after', name: 'read', arguments: { path: 'begun.txt' } }] },
      { text: 'resumed fine' },
    ]);
    const pgrep = async () => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).stdout.toString().split('\n').filter(Boolean).map(Number);
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = conch(['killed task'], { onSpawn: (c) => (child = c) });
    for (let i = 0; i < 200 && (await pgrep()).length === 0; i++) await Bun.sleep(25);
    expect((await pgrep()).length).toBeGreaterThan(0);
    child!.kill('SIGKILL');
    await pending;
    // The sandboxed sleep was conch's child; with conch gone it is ours to stop.
    for (const pid of await pgrep()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const r = await jsonRun(['-c', 'carry on']);
    expect(r.code).toBe(0);
    expect(r.doc.output).toBe('resumed fine');
    expect(sent(1)).toContain('killed task');
    expect(sent(1)).toContain('call_killed');
    // The command had run (its file is there): the model is not told it did not.
    expect(existsSync(join(harness.dirs.workspace, 'begun.txt'))).toBe(true);
    const results = harness.server.requests[1]!.body.messages.at(-2).content as any[];
    expect(results.map((b) => [b.tool_use_id, b.content[0].text])).toEqual([
      ['call_killed', 'interrupted: conch stopped (the process was killed or lost) while this call was in progress; it may have done some or all of its work, but its result was never recorded'],
      ['call_after', 'not run: conch stopped (the process was killed or lost) before this call started'],
    ]);
    const show = await cmd(['sessions', 'show', r.doc.sessionId]);
    expect(show.stdout).toContain('✗ interrupted: conch stopped (the process was killed or lost) while this call was in progress;');
    expect(show.stdout).toContain('✗ not run: conch stopped (the process was killed or lost) before this call started');
    const list = await cmd(['sessions', '--json']);
    expect(JSON.parse(list.stdout).sessions[0]).toMatchObject({ id: r.doc.sessionId, turns: 2, outcome: 'completed' });
  });

  test('a run cancelled mid-command: show says the call was interrupted, not "not run", and -c tells the model so', async () => {
    const marker = `48.${Math.floor(Math.random() * 1e9)}`;
    harness.server.script([
      { toolCalls: [{ id: 'call_cut', name: 'bash', arguments: { command: `echo begun; sleep ${marker}` } }, { id: 'call_next', name: 'read', arguments: { path: 'x' } }] },
      { text: 'carried on' },
    ]);
    const running = async () => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = conch(['--json', 'cancel me'], { onSpawn: (c) => (child = c) });
    for (let i = 0; i < 200 && !(await running()); i++) await Bun.sleep(25);
    expect(await running()).toBe(true);
    child!.kill('SIGINT');
    const cancelled = await pending;
    expect(cancelled.code).toBe(130);
    const id = JSON.parse(cancelled.stdout).sessionId;
    const show = await cmd(['sessions', 'show', id]);
    expect(show.stdout).toContain('› bash');
    // conch's note whole, then what the command gave, cut like any other result (not lost behind the note).
    expect(show.stdout).toContain('✗ interrupted while running: cancelled by the user; what it did until then stands:\n      begun [cancelled; the command and its processes were killed]\n');
    // The call after it never started: that one is "not run".
    expect(show.stdout).toContain('✗ not run: the run stopped (cancelled by the user)');
    const items = JSON.parse((await cmd(['sessions', 'show', id, '--json'])).stdout).runs[0].items;
    const cut = items.find((i: any) => i.callId === 'call_cut');
    expect(cut.result).toContain('begun');
    expect(cut.result).toContain('cancelled; the command and its processes were killed');
    expect(cut.note).toBe('interrupted while running: cancelled by the user; what it did until then stands:');
    expect((await conch(['-c', 'go on'])).code).toBe(0);
    expect(sent(1)).toContain('interrupted while running: cancelled by the user');
  });

  test('a truncated last line loads with a warning and the session continues', async () => {
    harness.server.script([{ text: 'one' }, { text: 'two' }]);
    const one = await jsonRun(['first task']);
    appendFileSync(sessionFile(harness.dirs, one.doc.sessionId), '{"t":"msg","runId":"x","m":{"role":"us');
    const two = await jsonRun(['-c', 'second task']);
    expect(two.code).toBe(0);
    expect(two.stderr).toContain('the last line is truncated');
    expect(sent(1)).toContain('first task');
    const again = await cmd(['sessions', 'show', one.doc.sessionId]);
    expect(again.stderr).not.toContain('truncated');
  });

  test('lines that are JSON but not records (hand-edited, damaged) are skipped with a warning: list, show and -c go on', async () => {
    harness.server.script([{ text: 'one' }, { text: 'two' }]);
    const one = await jsonRun(['first task']);
    const bad = [
      '{"t":"msg","runId":"x","m":null}',
      '{"t":"msg","runId":"x","m":{"role":"user","content":"abc"}}',
      '{"t":"result","runId":"x","r":null}',
      '{"t":"run"}',
      '{"t":"end"}',
    ];
    appendFileSync(sessionFile(harness.dirs, one.doc.sessionId), bad.join('\n') + '\n');
    const list = await cmd(['sessions']);
    expect(list.stdout).toContain(one.doc.sessionId);
    expect(list.stdout).toContain('first task');
    const show = await cmd(['sessions', 'show', one.doc.sessionId]);
    expect(show.code).toBe(0);
    expect(show.stdout).not.toContain('undefined');
    for (const r of [list, show]) expect(r.stderr).not.toMatch(/TypeError|Bun v|at /);
    const two = await jsonRun(['-c', 'second task']);
    expect(two.code).toBe(0);
    expect(two.stderr).toContain('line 6 is not a valid record');
    expect(two.stderr).toContain('line 10 is not a valid record');
    expect(sent(1)).toContain('first task');
    expect(sent(1)).toContain('second task');
  });
});

describe('where sessions live', () => {
  test('a store that cannot be made (a file in the way, a home nobody may write) is a setup error naming it and the fix, before any model call', async () => {
    const blocked = join(harness.dirs.home, 'not-a-dir');
    await Bun.write(blocked, 'a file where the state directory would be\n');
    harness.server.script([{ text: 'ok' }]);
    const r = await conch(['go'], { env: { XDG_STATE_HOME: blocked } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`conch: cannot create the session directory ${join(blocked, 'conch', 'sessions')} (a file is in the way): set XDG_STATE_HOME to a directory you can write, or run with --ephemeral to store no session.\n`);
    expect(harness.server.requests).toHaveLength(0);
    const json = await conch(['--json', 'go'], { env: { XDG_STATE_HOME: blocked } });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid', message: expect.stringContaining('--ephemeral') });
    // As it says: --ephemeral needs no store.
    const ephemeral = await conch(['--ephemeral', 'go'], { env: { XDG_STATE_HOME: blocked } });
    expect(ephemeral.code).toBe(0);
    expect(ephemeral.stdout).toBe('ok\n');
  });

  test('0600 files in a 0700 directory under the XDG state dir, no provider key or --env value inside', async () => {
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'echo "$CONCH_TASK_TOKEN"' } }] }, { text: 'done' }]);
    const r = await jsonRun(['--env', 'CONCH_TASK_TOKEN=tok-9f8e7d6c', 'print the token']);
    const file = sessionFile(harness.dirs, r.doc.sessionId);
    expect(statSync(storeDir(harness.dirs)).mode & 0o777).toBe(0o700);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('tok-9f8e7d6c');
    expect(text).not.toContain('test-key');
    expect(text).toContain('[redacted --env CONCH_TASK_TOKEN]');
    expect(readdirSync(harness.dirs.workspace)).toEqual([]);
  });

  test('an --env value with quotes and backslashes stays out too: tool arguments are kept as JSON text, where it is escaped', async () => {
    const token = 'pa"ss\\word-91x';
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `echo '${token}'` } }] }, { text: 'done' }]);
    const r = await jsonRun(['--env', `CONCH_TASK_PASSWORD=${token}`, 'print it']);
    expect(r.code).toBe(0);
    const lines = readFileSync(sessionFile(harness.dirs, r.doc.sessionId), 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    const calls = lines.flatMap((line) => line.m?.toolCalls ?? []);
    expect(calls.length).toBe(1);
    // The stored arguments, read back as the loader does, hold the marker instead of the value.
    expect(JSON.parse(calls[0].arguments).command).toBe("echo '[redacted --env CONCH_TASK_PASSWORD]'");
    expect(JSON.stringify(lines)).not.toContain('word-91x');
  });

  test('conch sessions show prints no control sequence from the model, not even in a tool name', async () => {
    harness.server.script([{ toolCalls: [{ name: 'read\x1b]52;c;cm0gLXJmIH4=\x07', arguments: { path: 'x' } }] }, { text: 'done' }]);
    const one = await jsonRun(['go']);
    const show = await cmd(['sessions', 'show', one.doc.sessionId]);
    expect(show.stdout).toContain('› read]52;c;');
    expect(show.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  test("a --fallback-model provider's key is redacted like the first model's", async () => {
    harness.server.script([{ text: 'done' }]);
    const env = { OPENAI_API_KEY: 'sk-fallback-5150', OPENAI_BASE_URL: harness.server.openaiBaseUrl };
    const r = await jsonRun(['--fallback-model', 'openai/gpt-4o', 'why is sk-fallback-5150 refused?'], { env });
    expect(r.code).toBe(0);
    const text = readFileSync(sessionFile(harness.dirs, r.doc.sessionId), 'utf8');
    expect(text).toContain('why is [redacted');
    expect(text).not.toContain('sk-fallback-5150');
  });

  test('the sandbox cannot read the session directory: cat from bash fails', async () => {
    // The store inside the workspace (as when conch runs from $HOME), where a command could reach it
    // but for the sandbox hiding it; the file beside the store shows that the place itself is visible.
    const state = join(harness.dirs.workspace, '.state');
    const env = { XDG_STATE_HOME: state };
    harness.server.script([{ text: 'secret conversation 4711' }]);
    const one = await jsonRun(['remember 4711'], { env });
    const store = join(state, 'conch', 'sessions');
    const file = join(store, `${one.doc.sessionId}.jsonl`);
    await Bun.write(join(state, 'visible.txt'), 'visible 0815');
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: `cat .state/visible.txt; cat '${file}'; ls -a '${store}'` } }] },
      { toolCalls: [{ name: 'read', arguments: { path: `.state/conch/sessions/${one.doc.sessionId}.jsonl` } }] },
      { text: 'done' },
    ]);
    const two = await jsonRun(['--ephemeral', 'read the session file'], { env });
    expect(two.code).toBe(0);
    const afterBash = sent(harness.server.requests.length - 2);
    expect(afterBash).toContain('visible 0815');
    expect(afterBash).toContain('No such file');
    expect(afterBash).not.toContain('4711');
    const afterRead = sent(harness.server.requests.length - 1);
    expect(afterRead).not.toContain('4711');
    expect(readFileSync(file, 'utf8')).toContain('4711');
  });

  test('the prompt history is hidden from commands and refused to the read tool, in the workspace or not', async () => {
    for (const state of [join(harness.dirs.workspace, '.state'), join(harness.dirs.home, 'state')]) {
      const history = join(state, 'conch', 'history');
      // The file another conch process's trim writes before renaming it over the history.
      const temp = join(state, 'conch', 'history.4242.tmp');
      mkdirSync(join(state, 'conch'), { recursive: true });
      await Bun.write(history, '"typed token 4711"\n');
      await Bun.write(temp, '"typed token 4711"\n');
      harness.server.script([
        { toolCalls: [{ name: 'bash', arguments: { command: `cat '${history}' '${temp}'; echo end` } }] },
        { toolCalls: [{ name: 'read', arguments: { path: history } }] },
        { toolCalls: [{ name: 'read', arguments: { path: temp } }] },
        { text: 'done' },
      ]);
      const r = await jsonRun(['--ephemeral', 'read the history'], { env: { XDG_STATE_HOME: state } });
      expect(r.code).toBe(0);
      const afterBash = sent(harness.server.requests.length - 3);
      expect(afterBash).toContain('end');
      expect(afterBash).not.toContain('4711');
      expect(sent(harness.server.requests.length - 2)).not.toContain('4711');
      const afterTemp = sent(harness.server.requests.length - 1);
      expect(afterTemp).not.toContain('4711');
      expect(afterTemp).toContain('read deny');
      expect(readFileSync(history, 'utf8')).toContain('4711');
    }
  });

  test('a state folder whose name holds glob characters (state[1], state(x), st{a,b}) still keeps the store and the history from the read tool', async () => {
    for (const name of ['state[1]', 'state(x)', 'st{a,b}']) {
      const state = join(harness.dirs.home, name);
      const env = { XDG_STATE_HOME: state };
      harness.server.script([{ text: 'private conversation 5150' }]);
      const one = await jsonRun(['remember 5150'], { env });
      const file = join(state, 'conch', 'sessions', `${one.doc.sessionId}.jsonl`);
      const history = join(state, 'conch', 'history');
      const temp = join(state, 'conch', 'history.4242.tmp');
      await Bun.write(history, '"typed token 5150"\n');
      await Bun.write(temp, '"typed token 5150"\n');
      harness.server.script([
        { toolCalls: [{ name: 'read', arguments: { path: file } }] },
        { toolCalls: [{ name: 'read', arguments: { path: history } }] },
        { toolCalls: [{ name: 'read', arguments: { path: temp } }] },
        { text: 'done' },
      ]);
      const r = await jsonRun(['--ephemeral', 'read them'], { env });
      expect(r.code).toBe(0);
      for (const back of [3, 2, 1]) {
        const after = sent(harness.server.requests.length - back);
        expect(after).not.toContain('5150');
        expect(after).toContain('read deny');
      }
    }
  });

  test('the read tool cannot open the session store outside the workspace: another project\'s conversations', async () => {
    const state = join(harness.dirs.home, 'state-elsewhere');
    const env = { XDG_STATE_HOME: state };
    harness.server.script([{ text: 'private conversation 9132' }]);
    const one = await jsonRun(['remember 9132'], { env });
    const file = join(state, 'conch', 'sessions', `${one.doc.sessionId}.jsonl`);
    expect(readFileSync(file, 'utf8')).toContain('9132');
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: file } }] }, { text: 'done' }]);
    const two = await jsonRun(['--ephemeral', 'read that file'], { env });
    expect(two.code).toBe(0);
    const afterRead = sent(harness.server.requests.length - 1);
    expect(afterRead).not.toContain('9132');
    expect(afterRead).toContain('read deny');
  });

  test('on a terminal the run ends with the session id and how to continue', async () => {
    harness.server.script([{ text: 'hello' }]);
    const command = [CONCH, '--model', 'anthropic/test-model', 'say hello'].map((a) => `'${a}'`).join(' ');
    const child = Bun.spawn(['script', '-qec', command, '/dev/null'], {
      cwd: harness.dirs.workspace,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: harness.dirs.home, XDG_CONFIG_HOME: harness.dirs.configHome, NO_COLOR: '1', TERM: 'dumb', ...anthropicEnv(harness.server.anthropicBaseUrl) },
      stdin: 'ignore',
      stdout: 'pipe',
    });
    const screen = (await new Response(child.stdout).text()).replaceAll('\r', '');
    expect(await child.exited).toBe(0);
    const [id] = readdirSync(storeDir(harness.dirs)).map((f) => f.replace('.jsonl', ''));
    expect(screen).toContain(`session ${id}  (conch -c to continue)`);
  });
});

describe('conch sessions', () => {
  test('the listing carries the start of a long first task and its length; show carries it whole', async () => {
    harness.server.script([{ text: 'reviewed' }]);
    const diff = `diff --git a/x b/x\n${'+added line\n'.repeat(20_000)}`;
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--json', 'review this'], env: anthropicEnv(harness.server.anthropicBaseUrl), stdin: diff });
    const id = JSON.parse(r.stdout).sessionId;
    const row = JSON.parse((await cmd(['sessions', '--json'])).stdout).sessions.find((s: any) => s.id === id);
    expect(row.task.startsWith('review this')).toBe(true);
    expect(row.task.length).toBe(501);
    expect(row.task.endsWith('…')).toBe(true);
    expect(row.taskChars).toBeGreaterThan(diff.length);
    const shown = JSON.parse((await cmd(['sessions', 'show', id, '--json'])).stdout);
    expect(JSON.stringify(shown)).toContain('+added line\\n'.repeat(100));
    expect(row).toMatchObject({ turns: 1, outcome: 'completed' });
  });

  test('list, show (text and --json), rm and prune', async () => {
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 'missing.txt' } }] }, { text: 'no such file' }, { text: 'second' }, { text: 'third' }]);
    const one = await jsonRun(['find missing.txt']);
    const two = await jsonRun(['another task']);
    await jsonRun(['-c', 'and again']);
    const list = await cmd(['sessions']);
    expect(list.code).toBe(0);
    // Singular and plural, in one column: 'turn ' is padded to the width of 'turns'.
    expect(list.stdout).toMatch(new RegExp(`^${one.doc.sessionId} .*   1 turn   completed`, 'm'));
    expect(list.stdout).toMatch(new RegExp(`^${two.doc.sessionId} .*   2 turns  completed`, 'm'));
    expect(list.stdout).toContain(one.doc.sessionId);
    expect(list.stdout).toContain('find missing.txt');
    const show = await cmd(['sessions', 'show', one.doc.sessionId.slice(0, 6)]);
    expect(show.stdout).toContain('> find missing.txt');
    expect(show.stdout).toContain('› read');
    expect(show.stdout).toContain('no such file');
    const json = JSON.parse((await cmd(['sessions', 'show', one.doc.sessionId, '--json'])).stdout);
    expect(json.runs[0].outcome.status).toBe('completed');
    expect(json.runs[0].items.map((i: any) => i.type)).toEqual(['task', 'tool', 'answer']);
    const rm = await cmd(['sessions', 'rm', one.doc.sessionId]);
    expect(rm.stdout).toContain(`removed session ${one.doc.sessionId}`);
    expect(existsSync(sessionFile(harness.dirs, one.doc.sessionId))).toBe(false);
    const prune = await cmd(['sessions', 'prune', '--older-than', '30d']);
    expect(prune.stdout).toContain('removed 0 sessions last active');
    const missing = await cmd(['sessions', 'show', 'abcdef']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no session 'abcdef'");
  });

  test('prune with a duration it cannot read names the flag, the value and the form', async () => {
    const r = await cmd(['sessions', 'prune', '--older-than', '3x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('conch: --older-than 3x: expected seconds or a duration such as 30s, 5m, 1h or 2d.\n');
  });

  test('prune --older-than 30 (no unit) removes nothing: it asks for the unit rather than take 30 seconds', async () => {
    harness.server.script([{ text: 'kept' }]);
    const kept = await jsonRun(['a task to keep']);
    const r = await cmd(['sessions', 'prune', '--older-than', '30']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--older-than 30');
    expect(r.stderr).toContain('30d');
    expect(existsSync(sessionFile(harness.dirs, kept.doc.sessionId))).toBe(true);
    // With a unit it prunes as before, and says the duration as given.
    const pruned = await cmd(['sessions', 'prune', '--older-than', '1s']);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain('last active more than 1s ago');
  });

  test('--older-than without prune is a usage error, not a list that ignores it', async () => {
    const r = await cmd(['sessions', '--older-than', '30d']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('conch sessions prune --older-than 30d');
    expect(r.stdout).toBe('');
  });

  test('an id that looks like a number stays the id typed (--resume 802e16)', async () => {
    const r = await conch(['--resume', '802e16', 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no session '802e16'");
  });

  test('a file in the store that is not a session is refused with its path', async () => {
    mkdirSync(storeDir(harness.dirs), { recursive: true, mode: 0o700 });
    const path = join(storeDir(harness.dirs), '0123456789abcdef.jsonl');
    await Bun.write(path, 'just some text\n');
    const r = await conch(['--resume', '0123456789abcdef', 'go']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${path} is not a conch session file`);
  });
});

test('-c or --resume without a task (stdin not piped) shows the usage of going on with that session', async () => {
  harness.server.script([{ text: 'first answer' }]);
  const first = await jsonRun(['start']);
  const cont = await conch(['-c']);
  expect(cont.code).toBe(2);
  expect(cont.stderr).toContain('no task given. Usage: conch -c "what to do next"');
  const id = first.doc.sessionId.slice(0, 6);
  expect((await conch(['--resume', id])).stderr).toContain(`no task given. Usage: conch --resume ${id} "what to do next"`);
  expect((await conch([])).stderr).toContain('no task given. Usage: conch "what to do"');
  expect(harness.server.requests).toHaveLength(1);
});
