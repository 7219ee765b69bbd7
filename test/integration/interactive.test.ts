// Interactive mode through a real pseudo-terminal (tmux): what a user types, what the screen shows,
// what the model server was sent, and what is left running.
import { afterEach, describe, expect, test } from 'bun:test';
import { CONCH, conchEnv, openaiEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';
import { hasTmux, openTerminal, type Terminal } from '../support/tty.ts';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const harness = useHarness();
let term: Terminal | undefined;
afterEach(async () => {
  await term?.close();
  term = undefined;
});

const MODEL = 'openai/test-model';
// Steps wait up to 30 s each on a loaded machine; the test as a whole gets room for several.
const SLOW = 120_000;
const open = async (args: string[] = [], extra: Record<string, string> = {}) => {
  term = await openTerminal([CONCH, '--model', MODEL, ...args], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color', ...extra } });
  return term;
};
/**
 * The welcome line is printed before the line editor takes the terminal: keys sent between the two
 * meet the terminal's own line discipline (Ctrl-C there is a SIGINT). The prompt means raw mode.
 */
const ready = (t: Terminal) => t.waitFor((s) => s.includes('/help lists commands') && s.trimEnd().endsWith('›'), 'the welcome line and the prompt');
/** A plugin that loads only once the returned file exists: the host is not ready until the test says. */
const gatedPlugin = async (): Promise<string> => {
  const gate = join(harness.dirs.home, 'gate');
  await mkdir(join(harness.dirs.configHome, 'conch', 'tools'), { recursive: true });
  await writeFile(join(harness.dirs.configHome, 'conch', 'tools', 'gate.ts'), `import { existsSync } from 'node:fs';
while (!existsSync(${JSON.stringify(gate)})) await new Promise((r) => setTimeout(r, 20));
export default { name: 'gate', description: 'g', parameters: { type: 'object', properties: {} }, execute: () => 'g' };
`);
  return gate;
};
/** The screen with the lines conch broke between words (at the terminal's width) joined again. */
const unbroken = (screen: string) => screen.replaceAll('\n  ', ' ');
const running = async (marker: string) => (await Bun.$`pgrep -f ${`sleep ${marker}`}`.nothrow().quiet()).exitCode === 0;

describe.skipIf(!hasTmux)('conch on a terminal without a task', () => {
  test('a task gets a rendered answer; a follow-up carries the first turn; Ctrl-D exits 0; conch -c goes on with the session', async () => {
    harness.server.script([{ text: '# Plan\n\nThis is **done**.\n' }, { text: 'Second answer.' }]);
    const t = await open();
    await ready(t);
    t.type('first task');
    t.keys('Enter');
    const first = await t.waitFor((s) => s.includes('This is done.'), 'the rendered answer');
    // Rendered, not raw: the emphasis markers are gone, the heading keeps its level (NO_COLOR).
    expect(first).not.toContain('**done**');
    expect(first).toContain('# Plan');
    expect(first).toContain('conch · openai/test-model · restricted');
    t.type('and a follow-up');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('Second answer.'), 'the second answer');
    const messages = JSON.stringify(harness.server.requests[1]!.body.messages);
    expect(messages).toContain('first task');
    expect(messages).toContain('This is **done**.');
    expect(messages).toContain('and a follow-up');
    await t.waitFor((s) => /Second answer\.[\s\S]*› /.test(s), 'the prompt again');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    expect(t.screen()).toMatch(/session [0-9a-f]+ {2}\(conch -c to continue\)/);
    // Stored as one session: `conch -c` goes on with both turns.
    harness.server.script([{ text: 'third' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', MODEL, '-c', 'a third task'], env: openaiEnv(harness.server.openaiBaseUrl) });
    expect(r.code).toBe(0);
    const resumed = JSON.stringify(harness.server.requests[2]!.body.messages);
    expect(resumed).toContain('first task');
    expect(resumed).toContain('Second answer.');
  }, SLOW);

  test('with colour: Markdown styles reach the terminal', async () => {
    harness.server.script([{ text: 'Some **bold** words.\n' }]);
    const t = await open(['-i', 'go'], { NO_COLOR: '' });
    await t.waitFor((s) => /Some bold words\.[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    expect(t.screen(true)).toMatch(/\x1b\[1mbold/);
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('Ctrl-C mid-command kills the command and returns to the prompt; the session goes on', async () => {
    const marker = `41.${Math.floor(Math.random() * 1e9)}`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `sleep ${marker}` } }] }, { text: 'after the cancel' }]);
    const t = await open();
    await ready(t);
    t.type('run a long command');
    t.keys('Enter');
    for (let i = 0; i < 400 && !(await running(marker)); i++) await Bun.sleep(25);
    expect(await running(marker)).toBe(true);
    t.keys('C-c');
    await t.waitFor((s) => /cancelled[\s\S]*› $/.test(s.trimEnd() + ' '), 'the prompt after the cancel');
    expect(await running(marker)).toBe(false);
    t.type('next');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('after the cancel'), 'the next answer');
    await t.waitFor((s) => /after the cancel[\s\S]*› $/.test(s.trimEnd() + ' '), 'the prompt');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('run a long command');
  }, SLOW);

  test('Ctrl-C while the answer streams cancels it; the spinner line is not left on screen', async () => {
    harness.server.script([{ text: 'a paragraph still being written', hangAfterText: true }, { text: 'next answer' }]);
    const t = await open([], { NO_COLOR: '' });
    await ready(t);
    t.type('write');
    t.keys('Enter');
    // The paragraph shows as it arrives, up to its last whole word.
    await t.waitFor((s) => s.includes('a paragraph still being'), 'the paragraph so far');
    t.keys('C-c');
    const after = await t.waitFor((s) => /cancelled by the user[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt after the cancel');
    // What had streamed is shown, once; the spinner's last frame is not.
    expect(after.split('a paragraph still being').length).toBe(2);
    expect(after).toContain('a paragraph still being written');
    expect(after).not.toMatch(/\bwriting\b/);
    t.type('next');
    t.keys('Enter');
    await t.waitFor((s) => /next answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the next answer');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('keys typed while a run is under way are not echoed into its output; the next prompt shows them as its line', async () => {
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: 'while [ ! -e go ]; do sleep 0.05; done; echo released' } }] },
      { text: 'The command ended.' },
      { text: 'second answer' },
    ]);
    const t = await open([], { NO_COLOR: '' });
    await ready(t);
    t.type('wait for it');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('while [ ! -e go ]'), 'the command running');
    // Echoed, they would be on screen before the command ends (the terminal echoes as keys come).
    t.type('typed ahead');
    await writeFile(join(harness.dirs.workspace, 'go'), '');
    const after = await t.waitFor((s) => /The command ended\.[\s\S]*› typed ahead$/.test(s.trimEnd()), 'the prompt holding what was typed');
    expect(after.split('typed ahead').length).toBe(2);
    t.keys('Enter');
    await t.waitFor((s) => /second answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the next answer');
    expect(JSON.stringify(harness.server.requests[2]!.body.messages)).toContain('typed ahead');
    // The terminal echoes again for the shell after conch.
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    t.type('echo-check');
    await t.waitFor((s) => s.includes('echo-check'), 'typed keys echoed after conch exited');
  }, SLOW);

  test('shrinking the terminal while a tool runs leaves no spinner frame behind', async () => {
    const progress = `progress-${'x'.repeat(80)}`;
    await Bun.$`mkfifo ${join(harness.dirs.workspace, 'go')}`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `echo ${progress}; cat go` } }] }, { text: 'done waiting' }]);
    const t = await open([], { NO_COLOR: '' });
    await ready(t);
    t.type('wait');
    t.keys('Enter');
    // The spinner shows the command's progress across the whole width, then the window narrows.
    await t.waitFor((s) => s.includes(`bash: ${progress.slice(0, 70)}`), 'the spinner at full width');
    t.resize(40);
    await t.waitFor((s) => s.split('\n').some((l) => /^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] bash: progress-x+/.test(l) && l.length < 40), 'a spinner frame of the new width');
    await writeFile(join(harness.dirs.workspace, 'go'), 'released\n');
    const after = await t.waitFor((s) => /done waiting\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    expect(after).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/);
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('a long paragraph shows as it streams, wrapped by the terminal; then it and the blocks after it are drawn once, as Markdown', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`);
    harness.server.script([
      // The model stops mid-paragraph and keeps its stream open: the paragraph is not complete.
      { text: [...words.map((w) => `${w} `), 'with `code` in'], hangAfterText: true },
      { text: ['A paragraph ', 'with **bold** ', 'words.\n\n', '```js\nconst x = 1;\n```\n\n', '- item one\n- item two\n'] },
    ]);
    const t = await open([], { NO_COLOR: '' });
    await ready(t);
    t.type('write at length');
    t.keys('Enter');
    const streaming = await t.waitFor((s) => s.includes('word59 with code'), 'the paragraph while the model writes');
    expect(streaming).not.toContain('`code`');
    // Soft-wrapped by the terminal (100 columns): no line of it is broken by conch.
    expect(streaming.replaceAll('\n', '')).toContain(words.join(' '));
    expect(streaming).not.toContain('word59 with code in');
    t.keys('C-c');
    const after = await t.waitFor((s) => /cancelled by the user[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt after the cancel');
    // What had come is drawn once, to its last word.
    expect(after.split('word0 word1').length).toBe(2);
    expect(after).toContain('word59 with code in');
    t.type('next');
    t.keys('Enter');
    const next = await t.waitFor((s) => /• item two\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the second answer');
    expect(next.split('A paragraph').length).toBe(2);
    expect(next).toMatch(/A paragraph with bold words\.\n\n─── js ─+\n {2}const x = 1;\n─+\n\n• item one\n• item two/);
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('Ctrl-C while the host is still starting cancels that task, not the session; the next task runs', async () => {
    const gate = await gatedPlugin();
    harness.server.script([{ text: 'the next answer' }]);
    const t = await open();
    await ready(t);
    t.type('first');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('conch: starting'), 'the host still starting');
    t.keys('C-c');
    await t.waitFor((s) => /cancelled before the task was sent[^\n]*\n› $/.test(`${s.trimEnd()} `), 'the prompt after the cancel');
    await writeFile(gate, '');
    t.type('second');
    t.keys('Enter');
    await t.waitFor((s) => /the next answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the next answer');
    expect(harness.server.requests).toHaveLength(1);
    const sent = JSON.stringify(harness.server.requests[0]!.body.messages);
    expect(sent).toContain('second');
    expect(sent).not.toContain('first');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('Ctrl-C while a command waits for the host (/tools) keeps the session; the command answers', async () => {
    const gate = await gatedPlugin();
    const t = await open();
    await ready(t);
    t.type('/tools');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('conch: starting'), 'the host still starting');
    t.keys('C-c');
    await t.waitFor((s) => s.includes('conch: the command finishes first'), 'the notice');
    await writeFile(gate, '');
    await t.waitFor((s) => /\n {2}gate +g\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the tool list and the prompt');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('keys typed while a command waits for the host (/tools) are not echoed into its answer; the next prompt shows them', async () => {
    const gate = await gatedPlugin();
    const t = await open();
    await ready(t);
    t.type('/tools');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('conch: starting'), 'the host still starting');
    t.type('typed ahead');
    await writeFile(gate, '');
    const after = await t.waitFor((s) => /\n {2}gate +g\n[\s\S]*› typed ahead$/.test(s.trimEnd()), 'the tool list and the prompt holding what was typed');
    expect(after.split('typed ahead').length).toBe(2);
    t.keys('C-u', 'C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('Ctrl-C twice at an empty prompt exits 0; once it says so; with text typed it only clears the line', async () => {
    const t = await open();
    await ready(t);
    t.type('half a thought');
    t.keys('C-c');
    await t.waitFor((s) => /half a thought\^C\n› $/.test(`${s.trimEnd()} `), 'a fresh prompt');
    // One Ctrl-C too many (meant for a run that had just ended) keeps the session.
    t.keys('C-c');
    await t.waitFor((s) => /\^C {2}\(Ctrl-C again or Ctrl-D to exit\)\n› $/.test(`${s.trimEnd()} `), 'the hint and a fresh prompt');
    // A key between starts the count again.
    t.type('x');
    t.keys('BSpace');
    t.keys('C-c');
    await t.waitFor((s) => s.split('Ctrl-C again or Ctrl-D to exit').length === 3, 'the hint again');
    t.keys('C-c');
    expect(await t.exited()).toBe(0);
    expect(harness.server.requests).toHaveLength(0);
  }, SLOW);

  test('Ctrl-Z at the prompt stops conch; `fg` brings it back and the prompt takes the next task', async () => {
    harness.server.script([{ text: 'back again' }]);
    // A shell with job control, as a user's is: conch stops in a process group of its own, and the
    // shell's `fg` gives it the terminal back (a pane's own shell would not let it stop at all).
    const fg = 'set -m; "$0" "$@"; [ $? -eq 148 ] && echo "stopped, fg" && fg';
    term = await openTerminal(['bash', '-c', fg, CONCH, '--model', MODEL], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' } });
    const t = term;
    await ready(t);
    t.type('half');
    t.keys('C-z');
    await t.waitFor((s) => s.includes('stopped, fg'), 'the shell bringing conch back');
    await t.waitFor((s) => s.trimEnd().endsWith('› half'), 'the prompt redrawn');
    t.type(' a task');
    t.keys('Enter');
    await t.waitFor((s) => /back again[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('half a task');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('on a narrow terminal the welcome line and error lines break between words', async () => {
    const t = (term = await openTerminal([CONCH, '--model', MODEL], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs, openaiEnv(harness.server.openaiBaseUrl)), TERM: 'xterm-256color' }, columns: 40 }));
    await t.waitFor((s) => s.includes('Ctrl-D exits') && s.trimEnd().endsWith('›'), 'the welcome line and the prompt');
    t.type('/model a b');
    t.keys('Enter');
    const shown = await t.waitFor((s) => s.includes('the one in use') && s.trimEnd().endsWith('›'), 'the refusal and the prompt');
    // The capture joins rows the terminal wrapped itself: each line here is one conch broke.
    const lines = shown.trimEnd().split('\n');
    for (const line of lines) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(40);
    const joined = lines.join('\n').replaceAll('\n  ', ' ');
    expect(joined).toContain('conch · Enter sends, \\ at the end of a line continues, /help lists commands, Ctrl-D exits');
    expect(joined).toContain('conch: /model takes one name (provider/model), e.g.');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('slash commands are answered by conch and never sent to the model', async () => {
    const t = await open();
    await ready(t);
    t.type('/help');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('/model NAME'), 'the help');
    t.type('/frobnicate');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('unknown command /frobnicate'), 'the unknown-command answer');
    t.type('/tools');
    t.keys('Enter');
    const tools = await t.waitFor((s) => /\n\s+bash\s+\S/.test(s) && /\n\s+edit\s+\S/.test(s), 'the tool list');
    // Each tool on one line of the 100-column screen: a long first sentence is cut with an ellipsis, not wrapped.
    expect(tools).toMatch(/\n {2}bash {3}Run a shell command[^\n]*…\n {2}read /);
    t.type('/exit');
    t.keys('Enter');
    expect(await t.exited()).toBe(0);
    expect(harness.server.requests).toHaveLength(0);
  }, SLOW);

  test('a submission that starts with a path (a pasted error) goes to the model, not to the commands', async () => {
    harness.server.script([{ text: 'about that error' }]);
    const t = await open();
    await ready(t);
    t.paste('/home/u/app/src/main.ts:12:5 - error TS2322: Type string is not assignable\n  at build');
    t.keys('Enter');
    await t.waitFor((s) => /about that error\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    expect(t.screen()).not.toContain('unknown command');
    expect(JSON.stringify(harness.server.requests[0]!.body.messages.at(-1))).toContain('/home/u/app/src/main.ts:12:5 - error TS2322');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('Tab completes a slash command; elsewhere a Tab is typed as a tab', async () => {
    harness.server.script([{ text: 'tabbed' }]);
    const t = await open();
    await ready(t);
    t.type('/he');
    t.keys('Tab');
    await t.waitFor((s) => s.trimEnd().endsWith('› /help'), 'the completed command');
    // Nothing is left to complete: another Tab neither lists the command again nor types a tab.
    t.keys('Tab');
    t.type('X');
    const again = await t.waitFor((s) => s.trimEnd().endsWith('› /helpX'), 'the key after the second Tab');
    expect(again.split('/help').length).toBe(3);
    t.keys('BSpace', 'Enter');
    await t.waitFor((s) => /Tab completes a command\.\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the help');
    t.type('a');
    t.keys('Tab');
    t.type('b');
    t.keys('Enter');
    await t.waitFor((s) => /tabbed\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    expect(JSON.stringify(harness.server.requests[0]!.body.messages.at(-1))).toContain('a\\tb');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('↑ brings back the previous submission; a line ending in \\ continues on the next', async () => {
    harness.server.script([{ text: 'one' }, { text: 'two' }]);
    const t = await open();
    await ready(t);
    t.type('line one \\');
    t.keys('Enter');
    t.type('line two');
    t.keys('Enter');
    await t.waitFor((s) => /\none\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the first answer and the prompt');
    expect(JSON.stringify(harness.server.requests[0]!.body.messages)).toContain('line one \\nline two');
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('line two'), 'the recalled submission');
    t.keys('Enter');
    await t.waitFor(() => harness.server.requests.length === 2, 'a second request');
    // Sent again as typed, with its line break (readline hands a recalled entry back with \r).
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('line one \\nline two');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('a recalled entry of several lines shows as it was typed, with the continuation marks of the prompt', async () => {
    harness.server.script([{ text: 'first' }, { text: 'second' }]);
    const t = await open([], { NO_COLOR: '' });
    await ready(t);
    // A table's `| ` at a line's start is the entry's own text, and stays.
    t.paste('look at this\n| a | b |\nend');
    const typed = (await t.waitFor((s) => s.trimEnd().endsWith('… end'), 'the pasted lines')).trimEnd().split('\n').slice(-3);
    expect(typed).toEqual(['› look at this', '… | a | b |', '… end']);
    t.keys('Enter');
    await t.waitFor((s) => /\nfirst\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    t.keys('Up');
    const recalled = await t.waitFor((s) => s.trimEnd().endsWith('end') && /› look at this\n[^\n]*\n[^\n]*end$/.test(s.trimEnd()), 'the recalled entry');
    expect(recalled.trimEnd().split('\n').slice(-3)).toEqual(typed);
    t.keys('Enter');
    await t.waitFor(() => harness.server.requests.length === 2, 'a second request');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('look at this\\n| a | b |\\nend');
    await t.waitFor((s) => /\nsecond\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt again');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('pasted lines are one submission, sent with Enter; the paste is one history entry, blank lines and all', async () => {
    harness.server.script([{ text: 'pasted answer' }, { text: 'recalled answer' }, { text: 'typed answer' }]);
    const t = await open();
    await ready(t);
    // A log pasted with its line breaks (a blank line among them): nothing is sent until Enter.
    t.paste('Error: boom\n\n  at main (app.js:3)\n  at run (app.js:9)');
    await t.waitFor((s) => s.trimEnd().endsWith('at run (app.js:9)'), 'the pasted text in the editor');
    await Bun.sleep(300);
    expect(harness.server.requests).toHaveLength(0);
    t.type(' what broke?');
    t.keys('Enter');
    await t.waitFor((s) => /pasted answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    expect(harness.server.requests).toHaveLength(1);
    const sent = JSON.stringify(harness.server.requests[0]!.body.messages);
    expect(sent).toContain('Error: boom\\n\\n  at main (app.js:3)\\n  at run (app.js:9) what broke?');
    // ↑ brings the whole paste back as one entry, and a second ↑ nothing older.
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('what broke?'), 'the recalled paste');
    t.keys('Enter');
    await t.waitFor(() => harness.server.requests.length === 2, 'a second request');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('Error: boom\\n\\n  at main');
    await t.waitFor((s) => /recalled answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the prompt again');
    // Typed lines still go one by one: Enter outside a paste sends.
    t.type('typed');
    t.keys('Enter');
    await t.waitFor(() => harness.server.requests.length === 3, 'a third request');
    expect(JSON.stringify(harness.server.requests[2]!.body.messages.at(-1))).toContain('"typed"');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);
});

describe.skipIf(!hasTmux)('conch on a terminal: the prompt history across sessions', () => {
  const historyFile = () => join(harness.dirs.home, '.local', 'state', 'conch', 'history');

  test('↑ in a new conch brings back the last session\'s submissions, a multi-line one as one entry', async () => {
    harness.server.script([{ text: 'first answer' }, { text: 'again' }]);
    let t = await open();
    await ready(t);
    t.type('first line \\');
    t.keys('Enter');
    t.type('second line');
    t.keys('Enter');
    await t.waitFor((s) => /first answer[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    t.type('/help');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('/model NAME'), 'the help');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    await t.close();
    // Stored as typed, one record each, the user's alone.
    expect(await readFile(historyFile(), 'utf8')).toBe('"first line \\nsecond line"\n"/help"\n');
    expect((await stat(historyFile())).mode & 0o777).toBe(0o600);

    t = term = await open();
    await ready(t);
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('› /help'), 'the newest entry');
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('second line'), 'the multi-line entry');
    t.keys('Enter');
    await t.waitFor(() => harness.server.requests.length === 2, 'the recalled task sent');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('first line \\nsecond line');
    await t.waitFor((s) => /again[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer and the prompt');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    // The recalled entry is stored again, as the newest.
    expect((await readFile(historyFile(), 'utf8')).trimEnd().split('\n').at(-1)).toBe('"first line \\nsecond line"');
  }, SLOW);

  test('"history": false in the config: the file is neither added to nor recalled from', async () => {
    await writeConfig(harness.dirs, { history: false });
    await mkdir(join(harness.dirs.home, '.local', 'state', 'conch'), { recursive: true });
    await writeFile(historyFile(), '"stale entry"\n');
    harness.server.script([{ text: 'answered' }]);
    const t = await open();
    await ready(t);
    t.type('new task');
    t.keys('Enter');
    await t.waitFor((s) => /answered[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('› new task'), 'this session\'s entry');
    t.keys('Up');
    await Bun.sleep(300);
    expect(t.screen()).not.toContain('stale entry');
    t.keys('C-u');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    expect(await readFile(historyFile(), 'utf8')).toBe('"stale entry"\n');
  }, SLOW);

  test('CONCH_HISTORY=0 stores nothing; a damaged file is read around, with one warning', async () => {
    harness.server.script([{ text: 'kept off disk' }, { text: 'ok' }]);
    let t = await open([], { CONCH_HISTORY: '0' });
    await ready(t);
    t.type('a secret task');
    t.keys('Enter');
    await t.waitFor((s) => /kept off disk[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    await t.close();
    expect(await readFile(historyFile(), 'utf8').catch(() => 'absent')).toBe('absent');

    await mkdir(join(harness.dirs.home, '.local', 'state', 'conch'), { recursive: true });
    await writeFile(historyFile(), '"older"\nnot a record\n"newer"\n');
    t = term = await open();
    await ready(t);
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('› newer'), 'the newest good entry');
    t.keys('Up');
    await t.waitFor((s) => s.trimEnd().endsWith('› older'), 'the older one, past the damage');
    t.keys('Enter');
    const shown = await t.waitFor((s) => /\nok\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    expect(unbroken(shown).split('of the prompt history is not a JSON string and was skipped')).toHaveLength(2);
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);
});

describe.skipIf(!hasTmux)('conch on a terminal: sessions, models and approvals', () => {
  test('/model goes on with the same conversation on another model; /clear starts a new session', async () => {
    harness.server.script([{ text: 'A1' }, { text: 'A2' }, { text: 'A3' }]);
    const t = await open();
    await ready(t);
    // Nothing asked yet: no previous session is stored, and none is said to be.
    t.type('/clear');
    t.keys('Enter');
    const empty = await t.waitFor((s) => /conch: a new session\n› $/.test(`${s.trimEnd()} `), 'the new session');
    expect(empty).not.toContain('stored');
    t.type('one');
    t.keys('Enter');
    await t.waitFor((s) => /\nA1\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the first answer');
    t.type('/model nosuchprovider/x');
    t.keys('Enter');
    // A model that cannot start is said in the words the user typed, and the session goes on.
    const refused = await t.waitFor((s) => /\/model "nosuchprovider\/x"[^\n]*\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the refusal naming /model');
    expect(refused).not.toContain('--model "nosuchprovider');
    t.type('/model openai/other-model');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('model openai/other-model from the next task on'), 'the model change');
    t.type('two');
    t.keys('Enter');
    await t.waitFor((s) => /\nA2\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the second answer');
    expect(harness.server.requests[1]!.body.model).toBe('other-model');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('A1');
    t.type('/clear');
    t.keys('Enter');
    const cleared = await t.waitFor((s) => /the previous one is stored \(conch --resume [0-9a-f]+\)/.test(s), 'the new session');
    const left = /conch --resume ([0-9a-f]+)\)/.exec(cleared)![1]!;
    t.type('three');
    t.keys('Enter');
    await t.waitFor((s) => /\nA3\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the third answer');
    const third = JSON.stringify(harness.server.requests[2]!.body.messages);
    expect(third).toContain('three');
    expect(third).not.toContain('A1');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    // The id named is the conversation /clear left: --resume goes on with it.
    harness.server.script([{ text: 'A4' }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', MODEL, '--resume', left, 'four'], env: openaiEnv(harness.server.openaiBaseUrl) });
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[3]!.body.messages)).toContain('A2');
  }, SLOW);

  test('/model alone shows the model in use, its provider and how to change it; its refusals name no flag', async () => {
    const t = await open(['--fallback-model', 'openai/spare-model']);
    await ready(t);
    t.type('/model');
    t.keys('Enter');
    const shown = await t.waitFor((s) => /\/model NAME goes on[^\n]*\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the model in use');
    expect(shown).toContain(`conch: model openai/test-model (provider openai, OpenAI API at ${harness.server.openaiBaseUrl})`);
    expect(shown).toContain('then, when it is unavailable: openai/spare-model');
    // The example stays on the provider in use (no key for another may be set).
    expect(shown).toContain('/model NAME goes on with another in this conversation, e.g. /model openai/gpt-5.4');
    t.type('/model nosuchprovider/x');
    t.keys('Enter');
    const unknown = await t.waitFor((s) => /"nosuchprovider"[^\n]*\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the unknown provider');
    const userFile = join(harness.dirs.configHome, 'conch', 'config.json');
    expect(unbroken(unknown)).toContain(`define it under "providers" in ${userFile} and give /model again.`);
    t.type('/model anthropic/some-model');
    t.keys('Enter');
    const keyless = await t.waitFor((s) => /needs an API key[^\n]*\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the missing key');
    expect(unbroken(keyless)).toContain(`set "providers.anthropic.apiKey" in ${userFile} and give /model again, or start conch again with ANTHROPIC_API_KEY=… exported.`);
    // A flag cannot be added to a session under way: none is offered as the fix.
    expect(keyless).not.toContain('--base-url');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
    expect(harness.server.requests).toHaveLength(0);
  }, SLOW);

  test('/model before the first task, and after a model that could not start: the next task goes to the new model', async () => {
    harness.server.script([{ text: 'B1' }]);
    const t = await open();
    await ready(t);
    t.type('/model nosuchprovider/x');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('/model "nosuchprovider/x"'), 'the refusal');
    t.type('/model openai/other-model');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('model openai/other-model from the next task on'), 'the model change');
    t.type('one');
    t.keys('Enter');
    await t.waitFor((s) => /\nB1\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer');
    expect(harness.server.requests[0]!.body.model).toBe('other-model');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('an ask rule asks inline; the answer typed at the question decides', async () => {
    await writeConfig(harness.dirs, { shell: { commands: { default: 'ask' } } });
    const marker = `approved-${Math.floor(Math.random() * 1e9)}`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `echo ${marker}` } }] }, { text: 'ran it' }]);
    const t = await open();
    await ready(t);
    t.type('echo something');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('Run it? [y]es'), 'the question');
    t.type('y');
    // The terminal's echo is off while a run is under way, but not for the answer typed here.
    await t.waitFor((s) => /for this run: y$/m.test(s), 'the answer echoed at the question');
    t.keys('Enter');
    await t.waitFor((s) => /ran it\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the answer after the command');
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain(marker);
    expect(t.screen()).toContain('✓ exit 0');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);

  test('keys typed ahead before an ask question are not its answer; they wait for the next prompt', async () => {
    const marker = `approved-${Math.floor(Math.random() * 1e9)}`;
    await writeConfig(harness.dirs, { shell: { commands: { ask: [{ id: 't.ask', executable: 'echo', args: [marker], match: 'exact' }] } } });
    harness.server.script([
      // A plain command (a loop could not be checked against the rules, and would be asked about): it waits for the FIFO's writer.
      { toolCalls: [{ name: 'bash', arguments: { command: 'cat go' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: `echo ${marker}` } }] },
      { text: 'ran it' },
      { text: 'later answer' },
      { text: 'last answer' },
    ]);
    await Bun.$`mkfifo ${join(harness.dirs.workspace, 'go')}`;
    const t = await open();
    await ready(t);
    t.type('go on');
    t.keys('Enter');
    await t.waitFor((s) => s.includes('bash cat go'), 'the first command running');
    // A "no" with its Enter and the start of a next task, typed before any question was on screen.
    t.type('n');
    t.keys('Enter');
    t.type('typed ahead');
    await writeFile(join(harness.dirs.workspace, 'go'), 'released\n');
    await t.waitFor((s) => s.includes('Run it? [y]es'), 'the question');
    t.type('y');
    await t.waitFor((s) => /for this run: y$/m.test(s), 'only the answer typed at the question');
    t.keys('Enter');
    await t.waitFor((s) => /ran it\n/.test(s), 'the answer after the command');
    expect(t.screen()).not.toContain('not approved');
    expect(JSON.stringify(harness.server.requests[2]!.body.messages)).toContain(marker);
    // What was typed ahead reaches the prompts after the run as typed: "n" is sent, then the rest waits.
    await t.waitFor((s) => /later answer\n[\s\S]*› typed ahead$/.test(s.trimEnd()), 'the prompt holding the rest of what was typed ahead');
    expect(JSON.stringify(harness.server.requests[3]!.body.messages.at(-1))).toContain('"n"');
    t.keys('Enter');
    await t.waitFor((s) => /last answer\n[\s\S]*› $/.test(`${s.trimEnd()} `), 'the last answer');
    expect(JSON.stringify(harness.server.requests[4]!.body.messages.at(-1))).toContain('"typed ahead"');
    t.keys('C-d');
    expect(await t.exited()).toBe(0);
  }, SLOW);
});

describe.skipIf(!hasTmux)('a setup problem in interactive mode', () => {
  test('no model configured: the session ends with exit 2, as a one-shot run would', async () => {
    term = await openTerminal([CONCH], { cwd: harness.dirs.workspace, env: { ...conchEnv(harness.dirs), TERM: 'xterm-256color' } });
    expect(await term.exited()).toBe(2);
    expect(term.screen()).toContain('conch: no model is configured');
    expect(harness.server.requests).toHaveLength(0);
  }, SLOW);
});

describe('-i without a terminal', () => {
  test('is refused with a message, exit 2', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['-i', 'go'], env: openaiEnv(harness.server.openaiBaseUrl) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--interactive needs a terminal');
    expect(harness.server.requests).toHaveLength(0);
  }, SLOW);
});
