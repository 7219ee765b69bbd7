// Ctrl-C on a terminal in a one-shot run: the run is cancelled and the screen says so cleanly.
import { afterEach, describe, expect, test } from 'bun:test';
import { CONCH, conchEnv, openaiEnv, useHarness } from '../support/cli.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';

const harness = useHarness();
let term: Terminal | undefined;
afterEach(async () => {
  await term?.close();
  term = undefined;
});

describe.skipIf(!hasTmux)('Ctrl-C during a one-shot run on a terminal', () => {
  test("cancels it, exit 130; the spinner's line is not left above the notice", async () => {
    harness.server.script([{ text: 'a paragraph still being written', hangAfterText: true }]);
    term = await openTerminal([CONCH, '--model', 'openai/test-model', 'write'], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' } });
    await term.waitFor((s) => /\bwriting\b/.test(s), 'the spinner');
    term.keys('C-c');
    expect(await term.exited()).toBe(130);
    const screen = term.screen();
    expect(screen).toContain('conch: cancelling…');
    expect(screen).toContain('a paragraph still being written');
    expect(screen).not.toMatch(/\bwriting\b/);
  }, 120_000);
});
