// The terminal renderer as text: a fixed event sequence through humanSink, with and without colour.
import { describe, expect, jest, test } from 'bun:test';
import type { EventBody } from '../../src/agent/events.ts';
import { humanSink, type HumanOptions } from '../../src/cli/render.ts';
import { markdownStream, renderMarkdown } from '../../src/cli/markdown.ts';

const CWD = '/work/proj';
const ESC = '\x1b';
const strip = (t: string) => t.replace(/\x1b\[[0-9;]*m/g, '');

function capture(options: Partial<HumanOptions> & { color: boolean }, columns = 80) {
  const out = { stdout: '', stderr: '' };
  const markdown = options.streamText === false ? undefined : markdownStream({ color: options.color, width: () => columns });
  const sink = humanSink(
    { stdout: { write: (t: string) => (out.stdout += t) }, stderr: { write: (t: string) => (out.stderr += t), columns } },
    { interactive: true, streamText: true, markdown, cwd: CWD, ...options },
  );
  let seq = 0;
  const emit = (body: EventBody) => sink.emit({ runId: 'r', seq: seq++, time: '', ...body } as never);
  return { out, emit };
}

const diff = '--- a/src/app.js\n+++ b/src/app.js\n@@ -1,3 +1,5 @@\n const a = 1;\n-const b = 2;\n+const b = 3;\n+const c = 4;\n+const d = 5;\n export { a };\n';
const answer = '# Done\n\nI changed **two** files:\n\n- `src/app.js`\n- `notes.md`\n\n```js\nconst b = 3;\n```\n\n| file | lines |\n| --- | ---: |\n| src/app.js | 5 |\n';

function run(emit: (b: EventBody) => void) {
  emit({ type: 'run.started', provider: 'anthropic', model: 'claude-x', mode: 'restricted', sandbox: 'bwrap', tools: ['bash', 'edit'] });
  emit({ type: 'model.started', turn: 1 });
  emit({ type: 'text.delta', text: 'Let me look.' });
  emit({ type: 'tool.started', callId: 'c1', name: 'edit', args: { path: 'src/app.js', edits: [] } });
  emit({ type: 'tool.finished', callId: 'c1', name: 'edit', isError: false, truncated: false, durationMs: 3, output: 'Edited', details: { path: `${CWD}/src/app.js`, diff } });
  emit({ type: 'tool.started', callId: 'c2', name: 'write', args: { path: 'notes.md', content: 'a\nb\n' } });
  emit({ type: 'tool.finished', callId: 'c2', name: 'write', isError: false, truncated: false, durationMs: 2, output: 'Created', details: { path: `${CWD}/notes.md`, oldText: null, newText: 'a\nb\n', diff: '' } });
  emit({ type: 'tool.started', callId: 'c3', name: 'bash', args: { command: 'npm test' } });
  const lines = Array.from({ length: 8 }, (_, i) => `line ${i + 1}`).join('\n');
  emit({ type: 'tool.finished', callId: 'c3', name: 'bash', isError: false, truncated: false, durationMs: 1500, output: `${lines}\n[exit 1]`, details: { exitCode: 1, signal: null, logPath: null, durationMs: 1500 } });
  emit({ type: 'model.finished', turn: 1, stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 } });
  emit({ type: 'model.started', turn: 2 });
  // The answer arrives in pieces that cut blocks in the middle.
  for (let i = 0; i < answer.length; i += 7) emit({ type: 'text.delta', text: answer.slice(i, i + 7) });
  emit({ type: 'model.finished', turn: 2, stopReason: 'end_turn', usage: { inputTokens: 20, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0 } });
  emit({
    type: 'run.finished',
    outcome: { status: 'completed', output: answer, stopReason: 'end_turn', usage: { inputTokens: 30, outputTokens: 45, cacheReadTokens: 0, cacheWriteTokens: 0 }, counts: { modelCalls: 2, toolCalls: 3, toolErrors: 0 }, durationMs: 4200, promptTokens: 30, cost: { usd: 0.0123, estimated: false } },
  });
}

describe('humanSink on a terminal', () => {
  test('without colour: Markdown laid out as plain text, tool lines with counts, diff, command tail, header and closing line', () => {
    const { out, emit } = capture({ color: false });
    run(emit);
    expect(out.stdout).toBe(
      [
        'Let me look.',
        '',
        '# Done',
        '',
        'I changed two files:',
        '',
        '• `src/app.js`',
        '• `notes.md`',
        '',
        '─── js ─────────────────────────────────',
        '  const b = 3;',
        '────────────────────────────────────────',
        '',
        '┌────────────┬───────┐',
        '│ file       │ lines │',
        '├────────────┼───────┤',
        '│ src/app.js │     5 │',
        '└────────────┴───────┘',
        '',
      ].join('\n'),
    );
    expect(out.stdout).not.toContain(ESC);
    expect(out.stderr).not.toContain(ESC);
    expect(out.stderr).toBe(
      [
        'conch · anthropic/claude-x · restricted, sandbox bwrap · /work/proj',
        '› edit src/app.js  +3 −1',
        '    @@ -1,3 +1,5 @@',
        '     const a = 1;',
        '    -const b = 2;',
        '    +const b = 3;',
        '    +const c = 4;',
        '    +const d = 5;',
        '     export { a };',
        '› write notes.md  2 lines, new',
        '› bash npm test',
        '  │ line 4',
        '  │ line 5',
        '  │ line 6',
        '  │ line 7',
        '  │ line 8',
        '  ✗ exit 1 · 1.5s · 3 earlier lines',
        'conch · 4.2 s · 2 turns · 30 tokens in (0% from cache), 45 out · $0.0123',
        '',
      ].join('\n'),
    );
  });

  test('with colour: styles on headings, emphasis, diff lines, exit codes and code (highlighted); the same text underneath', () => {
    const { out, emit } = capture({ color: true });
    run(emit);
    expect(out.stdout).toContain(`${ESC}[1m${ESC}[4mDone`); // h1: bold underlined, no '#'
    expect(out.stdout).toContain(`${ESC}[1mtwo${ESC}[22m`);
    expect(out.stdout).toContain(`${ESC}[35mconst${ESC}[39m`); // highlight.js: a keyword
    expect(out.stderr).toContain(`${ESC}[32m    +const b = 3;${ESC}[0m`);
    expect(out.stderr).toContain(`${ESC}[31m    -const b = 2;${ESC}[0m`);
    expect(out.stderr).toContain(`${ESC}[31m✗ exit 1${ESC}[0m`);
    expect(strip(out.stderr)).toContain('› edit src/app.js  +3 −1\n');
    expect(strip(out.stdout)).toContain('• src/app.js\n• notes.md\n');
  });

  test('streaming stays live: a block is drawn as soon as the next one begins, the last at the end of the turn', () => {
    const { out, emit } = capture({ color: false });
    emit({ type: 'model.started', turn: 1 });
    emit({ type: 'text.delta', text: '## Plan\n\nFirst paragraph' });
    expect(out.stdout).toBe('## Plan\n');
    emit({ type: 'text.delta', text: ' goes on.\n\n- a' });
    expect(out.stdout).toBe('## Plan\n\nFirst paragraph goes on.\n');
    emit({ type: 'model.finished', turn: 1, stopReason: 'end_turn', usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null } });
    expect(out.stdout).toBe('## Plan\n\nFirst paragraph goes on.\n\n• a\n');
  });

  test('piped stdout keeps the raw Markdown of the answer', () => {
    const { out, emit } = capture({ color: false, interactive: false, streamText: false });
    run(emit);
    expect(out.stdout).toBe(answer);
    expect(out.stderr).toBe('');
  });

  test('tool lines and tables fit the width they are drawn at (a narrower terminal after a resize)', () => {
    let columns = 80;
    const out = { stderr: '', stdout: '' };
    const sink = humanSink(
      { stdout: { write: (t: string) => (out.stdout += t) }, stderr: { write: (t: string) => (out.stderr += t), get columns() { return columns; } } },
      { color: false, interactive: true, streamText: true, cwd: CWD, markdown: markdownStream({ color: false, width: () => columns - 1 }) },
    );
    const base = { runId: 'r', seq: 0, time: '' };
    const long = `echo ${'x'.repeat(200)}`;
    sink.emit({ ...base, type: 'tool.started', callId: 'a', name: 'bash', args: { command: long } } as never);
    columns = 30;
    sink.emit({ ...base, type: 'tool.started', callId: 'b', name: 'bash', args: { command: long } } as never);
    sink.emit({ ...base, type: 'text.delta', text: `| a | b |\n| - | - |\n| ${'y'.repeat(60)} | ${'z'.repeat(60)} |\n\nend` } as never);
    sink.emit({ ...base, type: 'model.finished', turn: 1, stopReason: 'end_turn', usage: {} } as never);
    const [first, second] = out.stderr.split('\n');
    expect(Bun.stringWidth(first!)).toBe(79);
    expect(Bun.stringWidth(second!)).toBe(29);
    for (const line of out.stdout.split('\n')) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(29);
    expect(out.stdout).toContain('…');
  });
});

test('the closing line goes on to another line on a narrow terminal instead of losing the cost at its end', () => {
  const { out, emit } = capture({ color: false }, 60);
  emit({
    type: 'run.finished',
    outcome: { status: 'completed', output: 'ok', stopReason: 'end_turn', usage: { inputTokens: 45678, outputTokens: 2345, cacheReadTokens: 40000, cacheWriteTokens: 0 }, counts: { modelCalls: 12, toolCalls: 11, toolErrors: 0 }, durationMs: 83_400, promptTokens: 45678, cost: { usd: 0.1234, estimated: true } },
  } as never);
  const lines = out.stderr.split('\n').filter(Boolean);
  expect(lines).toEqual(['conch · 83.4 s · 12 turns', '  45,678 tokens in (88% from cache), 2,345 out', '  $0.1234 (list prices)']);
  for (const line of lines) expect(Bun.stringWidth(line)).toBeLessThanOrEqual(59);
  // Where it fits, it stays one line.
  const wide = capture({ color: false }, 200);
  wide.emit({ type: 'run.finished', outcome: { status: 'completed', output: 'ok', stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: null, cacheWriteTokens: null }, counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 }, durationMs: 100, promptTokens: 10, cost: { usd: 0.0001, estimated: true } } } as never);
  expect(wide.out.stderr.split('\n').filter(Boolean)).toEqual(['conch · 0.1 s · 1 turn · 10 tokens in, 5 out · $0.0001 (list prices)']);
});

test('on a narrow terminal an outcome that is no success breaks between words', () => {
  const { out, emit } = capture({ color: false }, 40);
  emit({ type: 'run.finished', outcome: { status: 'failed', code: 'provider_unavailable', message: 'the provider did not answer within the time allowed', stopReason: null, usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null }, counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 }, durationMs: 100 } } as never);
  const lines = out.stderr.split('\n').filter(Boolean);
  expect(lines.slice(0, 3)).toEqual(['conch: failed (provider_unavailable):', '  the provider did not answer within the', '  time allowed']);
});

describe('the spinner', () => {
  test("a command's time counts from its start through its output lines, not from the latest line", () => {
    jest.useFakeTimers();
    try {
      const { out, emit } = capture({ color: false });
      emit({ type: 'tool.started', callId: 'c1', name: 'bash', args: { command: 'make' } });
      for (let i = 1; i <= 5; i++) {
        jest.advanceTimersByTime(1000);
        emit({ type: 'tool.updated', callId: 'c1', name: 'bash', text: `step ${i}\n` });
      }
      jest.advanceTimersByTime(500);
      // Each frame is drawn from its line's start and leaves the cursor back there.
      const frames = out.stderr.split('\r\x1b[J').filter(Boolean);
      expect(frames.at(-1)).toMatch(/ bash: step 5 5s\r$/);
      emit({ type: 'tool.finished', callId: 'c1', name: 'bash', isError: false, truncated: false, durationMs: 5500, output: 'step 5\n[exit 0]', details: { exitCode: 0, signal: null, logPath: null, durationMs: 5500 } });
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('renderMarkdown', () => {
  test('struck-out text keeps its ~~ marks without colour, and is struck through with it', () => {
    expect(renderMarkdown('~~rm -rf build~~ use make clean\n', { color: false, width: () => 60 })).toBe('~~rm -rf build~~ use make clean\n');
    expect(renderMarkdown('~~old~~ new\n', { color: true, width: () => 60 })).toBe(`${ESC}[9mold${ESC}[29m new\n`);
  });

  test('a code block without a language opens with an unbroken rule', () => {
    expect(renderMarkdown('```\nplain\n```\n', { color: false, width: () => 60 })).toBe(`${'─'.repeat(40)}\n  plain\n${'─'.repeat(40)}\n`);
  });

  test('task lists: one box per item, on the line of its text, tight or loose', () => {
    const options = { color: false, width: () => 60 };
    expect(renderMarkdown('- [ ] todo\n- [x] done *now*\n', options)).toBe('☐ todo\n☑ done now\n');
    expect(renderMarkdown('- [ ] todo\n\n- [x] done\n', options)).toBe('☐ todo\n\n☑ done\n');
  });

  test('links show their address; ordered lists, quotes and rules', () => {
    const text = 'See [the docs](https://x.org/d) or <https://y.org>.\n\n3. three\n4. four\n\n> careful\n\n---\n';
    expect(renderMarkdown(text, { color: false, width: () => 20 })).toBe(
      'See the docs (https://x.org/d) or https://y.org.\n\n3. three\n4. four\n\n│ careful\n\n────────────────────\n',
    );
  });
});

describe('lazy loading', () => {
  test('a piped run loads no Markdown, highlighting or colour library: only a terminal pays for them', () => {
    const script = `await import(${JSON.stringify(`${import.meta.dir}/../../src/cli/run.ts`)});
      console.log(JSON.stringify(Object.keys(require.cache).filter((k) => /marked|highlight|chalk|markdown/.test(k))));`;
    const r = Bun.spawnSync([process.execPath, '-e', script], { stdout: 'pipe', stderr: 'pipe' });
    expect(r.stderr.toString()).toBe('');
    expect(JSON.parse(r.stdout.toString())).toEqual([]);
  });
});

describe('humanSink with an output schema (jsonAnswer)', () => {
  const value = { owner: 'ada@example.org', tags: ['a', 'b'] };
  const finishWith = (emit: (b: EventBody) => void) => {
    emit({ type: 'model.started', turn: 1 });
    emit({ type: 'text.delta', text: 'Let me look.' });
    emit({ type: 'model.finished', turn: 1, stopReason: 'tool_use', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 } });
    emit({ type: 'output.repair', turn: 1, errors: [{ path: '/owner', message: 'must match format "email"' }] });
    emit({
      type: 'run.finished',
      outcome: { status: 'completed', output: JSON.stringify(value), outputValue: value, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 }, counts: { modelCalls: 2, toolCalls: 0, toolErrors: 0 }, durationMs: 10 },
    });
  };

  test('on a terminal: no streamed turn text, the value indented as a JSON block at the end', () => {
    const { out, emit } = capture({ color: false, jsonAnswer: true });
    finishWith(emit);
    expect(out.stdout).not.toContain('Let me look.');
    expect(out.stdout).toContain('"owner": "ada@example.org",');
    expect(out.stdout).toContain('  "tags": [');
    expect(out.stderr).toContain('conch: the answer does not match the output schema (/owner: must match format "email"); asking the model once to correct it');
  });

  test('piped: the value as compact JSON on one line', () => {
    const { out, emit } = capture({ color: false, interactive: false, streamText: false, jsonAnswer: true });
    finishWith(emit);
    expect(out.stdout).toBe('{"owner":"ada@example.org","tags":["a","b"]}\n');
  });
});

describe('a paragraph shown as it streams (live Markdown on a terminal)', () => {
  const live = () => {
    const out = { stdout: '', stderr: '', both: '' };
    const markdown = markdownStream({ color: false, width: () => 59, live: { columns: () => 60, rows: () => 40 } });
    const sink = humanSink(
      { stdout: { write: (t: string) => ((out.stdout += t), (out.both += t)) }, stderr: { write: (t: string) => ((out.stderr += t), (out.both += t)), columns: 60 } },
      { color: false, interactive: true, streamText: true, markdown, cwd: CWD },
    );
    let seq = 0;
    const emit = (body: EventBody) => sink.emit({ runId: 'r', seq: seq++, time: '', ...body } as never);
    return { out, emit, sink };
  };

  test('a warning mid-paragraph takes it off its line; it comes back whole below the warning', async () => {
    const { screen } = await import('../support/screen.ts');
    const { out, emit } = live();
    emit({ type: 'model.started', turn: 1 });
    emit({ type: 'text.delta', text: 'The first words of a long ' });
    expect(out.stdout).toBe('The first words of a long');
    emit({ type: 'model.warning', turn: 1, text: 'something to know' });
    emit({ type: 'text.delta', text: 'paragraph.\n\nNext.' });
    emit({ type: 'model.finished', turn: 1, stopReason: 'end_turn', usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 } });
    expect(screen(out.both, 60)).toBe('conch: something to know\nThe first words of a long paragraph.\n\nNext.');
  });

  test('no spinner is drawn over a paragraph that stops mid-line; a text that ends mid-line is finished before a tool line', async () => {
    jest.useFakeTimers();
    try {
      const { out, emit } = live();
      emit({ type: 'model.started', turn: 1 });
      emit({ type: 'text.delta', text: 'Let me look at the ' });
      out.stderr = '';
      emit({ type: 'text.delta', text: 'fi' });
      jest.advanceTimersByTime(500);
      expect(out.stderr).toBe('');
      emit({ type: 'text.delta', text: 'les.' });
      emit({ type: 'tool.started', callId: 'c1', name: 'bash', args: { command: 'ls' } });
      expect(out.both).toBe('Let me look at the files.\n› bash ls\n');
    } finally {
      jest.useRealTimers();
    }
  });
});

test('an elision notice counts its results in words that agree with the number', () => {
  const { out, emit } = capture({ color: false });
  emit({ type: 'context.elided', results: 1, bytes: 900 } as EventBody);
  emit({ type: 'context.elided', results: 3, bytes: 2700 } as EventBody);
  expect(out.stderr).toContain('conch: 1 earlier tool result (900 bytes) elided');
  expect(out.stderr).toContain('conch: 3 earlier tool results (2700 bytes) elided');
});
