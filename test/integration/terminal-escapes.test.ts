// Text an attacker controls (the model's reply, an MCP server's tool list, a cloned repository's
// file names) must reach the user's terminal without escape sequences: no clipboard write (OSC 52),
// no window title (OSC 0), no cursor movement that hides a line. Each case runs the real CLI.
import { describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUN, CONCH, REPO, anthropicEnv, conchEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';

const harness = useHarness();
const ESC = '\x1b';
const hasScript = Bun.spawnSync(['sh', '-c', 'command -v script'], { stdout: 'ignore', stderr: 'ignore' }).exitCode === 0;

/** conch with its stdout and stderr on a pseudo-terminal (util-linux script), all it wrote, raw. */
async function onTerminal(args: string[]): Promise<string> {
  const env = { ...conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)), TERM: 'xterm-256color' };
  delete (env as Record<string, string>).NO_COLOR;
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const child = Bun.spawn(['script', '-qfec', [CONCH, ...args].map(quote).join(' '), '/dev/null'], { cwd: harness.dirs.workspace, env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [out] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  return out;
}

/**
 * Escape sequences and controls other than conch's own (colours, `ESC [ … m`; the spinner's erase,
 * `CR ESC [2K`), tab and line ends, each shown with what follows it.
 */
const hostile = (text: string) =>
  [...text.replace(/\x1b\[[0-9;]*m|\x1b\[2K/g, '').matchAll(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f].{0,12}/gs)].map((m) => JSON.stringify(m[0]));

describe.skipIf(!hasScript)('model text drawn as Markdown on a terminal', () => {
  test('HTML character references (&#27;, &#x1b;, &#7;) are not turned into escape sequences', async () => {
    // marked decodes numeric character references in text: the raw delta has no control character
    // for terminalSafe to drop, the decoded text does.
    const osc52 = '&#27;]52;c;Y3VybCBldmlsLnNoIHwgc2gK&#7;';
    harness.server.script([{ text: `# Title &#x1B;]0;owned&#x07;\n\nDone ${osc52} here.\n\n| a |\n|---|\n| &#27;[8mhidden |\n\n- item &#155;2J\n` }]);
    const out = await onTerminal(['--model', 'anthropic/test-model', 'go']);
    expect(out).toContain('here.');
    expect(hostile(out)).toEqual([]);
    expect(out).not.toContain(`${ESC}[8m`);
  });
});
