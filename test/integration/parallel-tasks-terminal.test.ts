// `conch run A B` on a real terminal (tmux): the `ask` questions of concurrent tasks come one at a
// time, each naming its task, and the answers show in task order under their headers.
import { afterEach, describe, expect, test } from 'bun:test';
import type { RecordedRequest } from '../support/model-server.ts';
import { CONCH, conchEnv, openaiEnv, useHarness, writeConfig } from '../support/cli.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';

const harness = useHarness();
let term: Terminal | undefined;
afterEach(async () => {
  await term?.close();
  term = undefined;
});

const SLOW = 120_000;
const taskOf = (req: RecordedRequest) => String(req.body.messages.find((m: any) => m.role === 'user')?.content ?? '');
const count = (text: string, part: string) => text.split(part).length - 1;

describe.skipIf(!hasTmux)('several tasks on a terminal', () => {
  test('ask questions come one at a time naming the task; output in task order under headers', async () => {
    await writeConfig(harness.dirs, { shell: { commands: { default: 'ask' } } });
    const marker = `ran-${Math.floor(Math.random() * 1e9)}`;
    harness.server.script((req) => {
      const n = taskOf(req).includes('first') ? 1 : 2;
      if (JSON.stringify(req.body.messages).includes('"role":"tool"')) return { text: `answer ${n}` };
      return { toolCalls: [{ name: 'bash', arguments: { command: `echo ${marker}-${n}` } }] };
    });
    const env = { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' };
    term = await openTerminal([CONCH, '--model', 'openai/test-model', 'run', 'the first task', 'the second task'], { cwd: harness.dirs.workspace, env, rows: 60 });
    const first = await term.waitFor((s) => s.includes('Run it? [y]es'), 'the first question');
    // One question at a time: the other task's waits until this one is answered.
    expect(count(first, 'Run it? [y]es')).toBe(1);
    expect(first).toMatch(/conch: task [12] \(the (first|second) task\) asks:/);
    term.type('y');
    term.keys('Enter');
    const second = await term.waitFor((s) => count(s, 'Run it? [y]es') === 2, 'the second question');
    expect(count(second, ') asks:')).toBe(2);
    term.type('y');
    term.keys('Enter');
    expect(await term.exited()).toBe(0);
    const screen = term.screen();
    const at = (part: string) => screen.indexOf(part);
    expect(at('── task 1/2: the first task')).toBeGreaterThan(-1);
    expect(at('answer 1')).toBeGreaterThan(at('── task 1/2: the first task'));
    expect(at('── task 2/2: the second task')).toBeGreaterThan(at('answer 1'));
    expect(at('answer 2')).toBeGreaterThan(at('── task 2/2: the second task'));
    expect(screen).toContain('2 tasks: 2 completed');
    expect(JSON.stringify(harness.server.requests.map((r) => r.body.messages))).toContain(`${marker}-2`);
  }, SLOW);

  test('Ctrl-C while the tasks think: every task cancelled, no spinner frame left on screen, exit 130', async () => {
    harness.server.script(() => ({ text: 'too late', delayMs: 20_000 }));
    const env = { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' };
    term = await openTerminal([CONCH, '--model', 'openai/test-model', 'run', 'slow one', 'slow two', 'slow three', 'slow four'], { cwd: harness.dirs.workspace, env, rows: 60 });
    await term.waitFor((s) => s.includes('── task 1/4: slow one'), 'the first header');
    for (let i = 0; i < 100 && harness.server.requests.length < 3; i++) await Bun.sleep(50);
    term.keys('C-c');
    expect(await term.exited()).toBe(130);
    const screen = term.screen();
    expect(screen).toContain('conch: cancelling… (Ctrl-C again to exit now)');
    expect(screen).toContain('4 tasks: 4 cancelled');
    expect(screen).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
  }, SLOW);
});
