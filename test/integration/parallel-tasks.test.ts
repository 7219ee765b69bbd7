// `conch run A B C`: several tasks from one start, through the real CLI, the real SDKs and the local
// model server. Output in task order whatever order they finish in, one --json document, the most
// severe task's exit code, and Ctrl-C leaves nothing running.
import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { RecordedRequest, ScriptedTurn } from '../support/model-server.ts';
import { anthropicEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await writeConfig(d, { retry: { maxRetries: 1, initialDelayMs: 1, maxDelayMs: 5 } });
});

const MODEL = 'anthropic/test-model';
const run = (args: string[], extra: { stdin?: string; onSpawn?: (c: ReturnType<typeof Bun.spawn>) => void } = {}) =>
  runConch({ dirs: harness.dirs, args: ['--model', MODEL, ...args], env: anthropicEnv(harness.server.anthropicBaseUrl), ...extra });

/** The first user message's text: which task a request belongs to. */
function taskOf(req: RecordedRequest): string {
  const first = req.body?.messages?.[0]?.content;
  return typeof first === 'string' ? first : (first ?? []).map((b: any) => b.text ?? '').join('');
}
const hasToolResult = (req: RecordedRequest) => JSON.stringify(req.body?.messages ?? []).includes('tool_result');

/** alpha answers slowly (so it finishes last), beta's provider refuses it, gamma runs a command. */
function threeTasks(req: RecordedRequest): ScriptedTurn {
  const task = taskOf(req);
  if (task.includes('alpha')) return { text: 'answer alpha', delayMs: 700 };
  if (task.includes('beta')) return { error: { status: 400, message: 'beta is refused' } };
  if (!hasToolResult(req)) return { toolCalls: [{ name: 'bash', arguments: { command: 'echo gamma-ran' } }] };
  return { text: 'answer gamma' };
}

describe('conch run with several tasks', () => {
  test('three tasks, one failing: answers in task order under headers, the summary, and the failed exit code', async () => {
    harness.server.script(threeTasks);
    const r = await run(['run', 'task alpha', 'task beta', 'task gamma']);
    expect(r.stdout).toBe('── task 1/3: task alpha\nanswer alpha\n\n── task 2/3: task beta\n\n── task 3/3: task gamma\nanswer gamma\n');
    expect(r.stderr).toContain('conch: failed (provider_rejected)');
    expect(r.stderr).toContain('conch: 3 tasks: 2 completed, 1 failed (task 2)\n');
    expect(r.code).toBe(1);
  });

  test('--json: one document with every envelope in task order and the summary', async () => {
    harness.server.script(threeTasks);
    const r = await run(['run', '--json', 'task alpha', 'task beta', 'task gamma']);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks.map((t: any) => [t.task, t.status, t.code ?? null, t.exitCode, t.output])).toEqual([
      ['task alpha', 'completed', null, 0, 'answer alpha'],
      ['task beta', 'failed', 'provider_rejected', 1, ''],
      ['task gamma', 'completed', null, 0, 'answer gamma'],
    ]);
    expect(doc.summary).toMatchObject({ tasks: 3, completed: 2, failed: 1, cancelled: 0, timed_out: 0, limit_exceeded: 0, policy_denied: 0, exitCode: 1 });
    // Each its own run and its own session record.
    expect(new Set(doc.tasks.map((t: any) => t.runId)).size).toBe(3);
    const sessions = doc.tasks.map((t: any) => t.sessionId);
    expect(new Set(sessions).size).toBe(3);
    const files = readdirSync(join(harness.dirs.home, '.local/state/conch/sessions')).filter((f) => f.endsWith('.jsonl'));
    expect(files.sort()).toEqual(sessions.map((id: string) => `${id}.jsonl`).sort());
  });

  test('--tasks-file (lines or a JSON array), --max-concurrent 1 runs them one after another, piped stdin goes to each', async () => {
    const seen: string[] = [];
    harness.server.script((req) => {
      seen.push(taskOf(req));
      return { text: `done ${seen.length}` };
    });
    const file = join(harness.dirs.home, 'tasks.txt');
    await writeFile(file, 'first task\n\n  second task  \n');
    const r = await run(['run', '--json', '--max-concurrent', '1', '--tasks-file', file], { stdin: 'PIPED' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).tasks.map((t: any) => [t.task, t.output])).toEqual([
      ['first task', 'done 1'],
      ['second task', 'done 2'],
    ]);
    expect(seen.map((t) => t.split('\n')[0])).toEqual(['first task', 'second task']);
    for (const t of seen) expect(t).toContain('<stdin>\nPIPED\n</stdin>');

    await writeFile(file, JSON.stringify(['one\nspanning lines']));
    const one = await run(['--json', '--tasks-file', file]);
    expect(one.code).toBe(0);
    // A tasks file always gives the document, even for one task.
    expect(JSON.parse(one.stdout).summary).toMatchObject({ tasks: 1, completed: 1, exitCode: 0 });
  });

  test('--output-schema checks every task: the valid one completes with its value, the invalid one is output_invalid, exit 5', async () => {
    await writeFile(join(harness.dirs.workspace, 'schema.json'), JSON.stringify({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }));
    harness.server.script((req) => ({ text: taskOf(req).includes('good') ? '{"n": 1}' : 'no JSON here' }));
    const r = await run(['run', '--json', '--output-schema', 'schema.json', 'the good task', 'the bad task']);
    expect(r.code).toBe(5);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks.map((t: any) => [t.status, t.code ?? null, t.exitCode])).toEqual([
      ['completed', null, 0],
      ['failed', 'output_invalid', 5],
    ]);
    expect(doc.tasks[0].output).toEqual({ n: 1 });
    expect(doc.summary).toMatchObject({ completed: 1, failed: 1, exitCode: 5 });
  });

  test('one task is the ordinary run: `conch run "x"` prints what `conch "x"` prints', async () => {
    harness.server.script([{ text: 'plain answer' }]);
    const r = await run(['run', '--json', 'just this']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks).toBeUndefined();
    expect(doc.output).toBe('plain answer');
  });

  test('setup errors name the file or flag and exit 2', async () => {
    const missing = join(harness.dirs.home, 'nope.txt');
    const bad = join(harness.dirs.home, 'bad.json');
    const empty = join(harness.dirs.home, 'empty.txt');
    await writeFile(bad, '["unterminated');
    await writeFile(empty, '\n\n');
    const number = join(harness.dirs.home, 'number.json');
    const blank = join(harness.dirs.home, 'blank.json');
    await writeFile(number, '["a", 3]');
    await writeFile(blank, '["", "b"]');
    for (const [args, message] of [
      [['run', '--tasks-file', missing], `--tasks-file ${missing}: cannot read it (no such file)`],
      [['run', '--tasks-file', bad], `--tasks-file ${bad}: not valid JSON`],
      [['run', '--tasks-file', empty], `--tasks-file ${empty}: the file holds no task`],
      // Counted from 1, as "task 2/3" counts them.
      [['run', '--tasks-file', number], `--tasks-file ${number}: task 2 of the array is 3; every task is a string that is not empty.`],
      [['run', '--tasks-file', blank], `--tasks-file ${blank}: task 1 of the array is ""`],
      [['run', '--max-concurrent', '0', 'a', 'b'], "--max-concurrent takes a whole number of tasks above 0 (default 3), got '0'"],
      [['run', '--max-concurrent', '1.5', 'a', 'b'], "--max-concurrent takes a whole number of tasks above 0 (default 3), got '1.5'"],
      [['run', '-c', 'a', 'b'], '--continue does not go with several tasks'],
      [['run', '--tasks-file', empty, 'a'], 'give the tasks as arguments or in --tasks-file'],
    ] as const) {
      const r = await run([...args]);
      expect({ args, code: r.code, has: r.stderr.includes(message) }).toEqual({ args, code: 2, has: true });
      expect(r.stderr).not.toContain('    at ');
    }
    const json = await run(['run', '--json', '--tasks-file', missing]);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid' });
    expect(harness.server.requests).toHaveLength(0);
  });

  test('config and plugins load once for all the tasks; each task can call the plugin', async () => {
    await mkdir(join(harness.dirs.configHome, 'conch', 'tools'), { recursive: true });
    await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'count.ts'), `
      import { defineTool, Type } from 'conch';
      console.log('loading count');
      let calls = 0;
      export default defineTool({ name: 'count', description: 'counts', parameters: Type.Object({}), async execute() { return 'call ' + ++calls; } });`);
    harness.server.script((req) => (hasToolResult(req) ? { text: 'counted' } : { toolCalls: [{ name: 'count', arguments: {} }] }));
    const r = await run(['run', '--json', '--max-concurrent', '1', 'one', 'two', 'three']);
    expect(r.code).toBe(0);
    expect(r.stderr.split('loading count').length - 1).toBe(1);
    // One module instance: the calls of all three tasks are counted together.
    const results = harness.server.requests.filter(hasToolResult).map((req) => JSON.stringify(req.body.messages).match(/call \d/)?.[0]);
    expect(results).toEqual(['call 1', 'call 2', 'call 3']);
  });

  test('plugin code that never yields: the watchdog still prints the one document, the finished task kept, the stuck one timed_out', async () => {
    await mkdir(join(harness.dirs.configHome, 'conch', 'tools'), { recursive: true });
    await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'spin.ts'), `
      import { defineTool, Type } from 'conch';
      export default defineTool({ name: 'spin', description: 'never yields', parameters: Type.Object({}), async execute() { for (;;) {} } });`);
    harness.server.script((req) => (taskOf(req).includes('quick') ? { text: 'quick done' } : { toolCalls: [{ name: 'spin', arguments: {} }] }));
    const r = await run(['run', '--json', '--max-concurrent', '1', '--timeout', '2s', 'the quick task', 'the stuck task']);
    expect(r.code).toBe(124);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks.map((t: any) => [t.task, t.status, t.exitCode])).toEqual([
      ['the quick task', 'completed', 0],
      ['the stuck task', 'timed_out', 124],
    ]);
    expect(doc.tasks[0].output).toBe('quick done');
    expect(doc.tasks[1].unfinished).toBeUndefined();
    expect(typeof doc.tasks[1].runId).toBe('string');
    // The stuck task had started: it says where it ran, as the finished one does.
    const { provider, model, mode, sandbox } = doc.tasks[0];
    expect(doc.tasks[1]).toMatchObject({ provider, model, mode, sandbox, sessionId: expect.any(String) });
    expect(doc.tasks[1].sessionId).not.toBe(doc.tasks[0].sessionId);
    expect(doc.summary).toMatchObject({ tasks: 2, completed: 1, timed_out: 1, exitCode: 124 });
  });

  test('a plugin stuck while it loads: the watchdog prints the batch document, every task timed_out', async () => {
    const tools = join(harness.dirs.configHome, 'conch', 'tools');
    await mkdir(tools, { recursive: true });
    await writeFile(join(tools, 'load-spin.ts'), 'for (;;) {}\nexport default {};\n');
    try {
      const r = await run(['run', '--json', '--timeout', '1s', 'task one', 'task two']);
      expect(r.code).toBe(124);
      const doc = JSON.parse(r.stdout);
      expect(doc.tasks.map((t: any) => [t.task, t.status, t.provider, t.sandbox])).toEqual([
        ['task one', 'timed_out', 'anthropic', null],
        ['task two', 'timed_out', 'anthropic', null],
      ]);
      expect(doc.summary).toMatchObject({ tasks: 2, timed_out: 2, exitCode: 124 });
    } finally {
      await rm(join(tools, 'load-spin.ts'), { force: true });
    }
  });

  test('SIGTERM mid-way: every task cancelled as terminated by SIGTERM, the queued one before it started, exit 143', async () => {
    harness.server.script(() => ({ text: 'working…', hangAfterText: true }));
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = run(['run', '--json', '--max-concurrent', '1', 'first', 'second'], { onSpawn: (c) => (child = c) });
    while (harness.server.requests.length === 0) await Bun.sleep(20);
    await Bun.sleep(100);
    child!.kill('SIGTERM');
    const r = await pending;
    expect(r.code).toBe(143);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks.map((t: any) => [t.status, t.message, t.signal, t.exitCode])).toEqual([
      ['cancelled', 'terminated by signal SIGTERM', 'SIGTERM', 143],
      ['cancelled', 'terminated by signal SIGTERM, before it started', 'SIGTERM', 143],
    ]);
    expect(doc.summary).toMatchObject({ tasks: 2, cancelled: 2, exitCode: 143 });
  });

  test('Ctrl-C mid-way cancels every task, queued ones never start, and no command or bwrap survives', async () => {
    const marker = `33.${Math.floor(Math.random() * 1e9)}`;
    harness.server.script((req) => {
      const n = taskOf(req).match(/slow (\d)/)?.[1];
      if (hasToolResult(req)) return { text: 'unreachable' };
      return { toolCalls: [{ name: 'bash', arguments: { command: `touch started-${n}; sleep ${marker}` } }] };
    });
    let child: ReturnType<typeof Bun.spawn> | undefined;
    const pending = run(['run', '--json', '--max-concurrent', '2', 'slow 1', 'slow 2', 'slow 3'], { onSpawn: (c) => (child = c) });
    const ws = harness.dirs.workspace;
    const alive = async (pattern: string) => (await Bun.$`pgrep -f ${pattern}`.nothrow().quiet()).exitCode === 0;
    for (let i = 0; i < 400 && !(existsSync(join(ws, 'started-1')) && existsSync(join(ws, 'started-2'))); i++) await Bun.sleep(25);
    expect(await alive(`sleep ${marker}`)).toBe(true);
    child!.kill('SIGINT');
    const r = await pending;
    expect(r.code).toBe(130);
    const doc = JSON.parse(r.stdout);
    expect(doc.tasks.map((t: any) => t.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(doc.tasks[2]).toMatchObject({ message: 'cancelled before it started', counts: { modelCalls: 0 } });
    expect(doc.summary).toMatchObject({ tasks: 3, cancelled: 3, exitCode: 130 });
    expect(existsSync(join(ws, 'started-3'))).toBe(false);
    // Nothing of any task is left: not the commands, not a bwrap (whose argv names the workspace).
    for (let i = 0; i < 40 && ((await alive(`sleep ${marker}`)) || (await alive(ws))); i++) await Bun.sleep(50);
    expect(await alive(`sleep ${marker}`)).toBe(false);
    expect(await alive(ws)).toBe(false);
  });
});
