// Ctrl-C on a terminal, as the screen shows it: the spinner's line is replaced by "cancelling…", not
// left above it, in a one-shot run and in interactive mode. Through a real pseudo-terminal (tmux).
import { afterEach, describe, expect, test } from 'bun:test';
import { CONCH, conchEnv, openaiEnv, useHarness } from '../support/cli.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';

const harness = useHarness();
let term: Terminal | undefined;
afterEach(async () => {
  await term?.close();
  term = undefined;
});

const SLOW = 120_000;
const SPINNER_LINE = /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] thinking/m;
const open = async (args: string[]) => {
  term = await openTerminal([CONCH, '--model', 'openai/test-model', ...args], {
    cwd: harness.dirs.workspace,
    env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' },
  });
  return term;
};

describe.skipIf(!hasTmux)('Ctrl-C while the model is thinking', () => {
  test('a one-shot run: "cancelling…" takes the spinner\'s line, and no spinner is left on screen', async () => {
    harness.server.script([{ text: 'too late', delayMs: 20_000 }]);
    const t = await open(['a slow task']);
    await t.waitFor((s) => SPINNER_LINE.test(s), 'the spinner');
    t.keys('C-c');
    expect(await t.exited()).toBe(130);
    const screen = t.screen();
    expect(screen).toContain('conch: cancelling… (Ctrl-C again to exit now)');
    expect(screen).toContain('conch: cancelled: cancelled by the user');
    expect(screen).not.toMatch(SPINNER_LINE);
  }, SLOW);

  test('interactive mode: the same, and the prompt comes back', async () => {
    harness.server.script([{ text: 'too late', delayMs: 20_000 }]);
    const t = await open([]);
    await t.waitFor((s) => s.includes('/help lists commands') && s.trimEnd().endsWith('›'), 'the prompt');
    t.type('a slow task');
    t.keys('Enter');
    await t.waitFor((s) => SPINNER_LINE.test(s), 'the spinner');
    t.keys('C-c');
    const screen = await t.waitFor((s) => /cancelled by the user[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt after the cancel');
    expect(screen).toContain('conch: cancelling… (Ctrl-C again to exit now)');
    expect(screen).not.toMatch(SPINNER_LINE);
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);
});
