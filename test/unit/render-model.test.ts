// The terminal display of the model layer: thinking dimmed on stderr (never on stdout, never off a
// terminal), and warnings as one line.
import { describe, expect, test } from 'bun:test';
import { humanSink } from '../../src/cli/render.ts';
import type { EventBody, RunEvent } from '../../src/agent/events.ts';

function sink(interactive: boolean, color = true) {
  const out = { stdout: '', stderr: '' };
  const s = humanSink(
    { stdout: { write: (t: string) => (out.stdout += t) }, stderr: { write: (t: string) => (out.stderr += t) } },
    { color, interactive, streamText: interactive },
  );
  let seq = 0;
  const emit = (body: EventBody) => s.emit({ ...body, runId: 'r', seq: seq++, time: '' } as RunEvent);
  return { out, emit };
}

describe('thinking on a terminal', () => {
  test('streams dimmed on stderr and ends its line before the answer', () => {
    const { out, emit } = sink(true);
    emit({ type: 'thinking.delta', text: 'let me ' });
    emit({ type: 'thinking.delta', text: 'see' });
    emit({ type: 'text.delta', text: 'answer' });
    expect(out.stderr).toContain('\x1b[2mlet me \x1b[0m\x1b[2msee\x1b[0m\n');
    expect(out.stdout).toBe('answer');
  });

  test('off a terminal it is not shown at all', () => {
    const { out, emit } = sink(false, false);
    emit({ type: 'thinking.delta', text: 'private' });
    emit({ type: 'text.delta', text: 'x' });
    expect(out.stderr + out.stdout).not.toContain('private');
  });

  test('control characters in thinking cannot reach the terminal', () => {
    const { out, emit } = sink(true, false);
    emit({ type: 'thinking.delta', text: 'a\x1b]52;c;AAAA\x07b' });
    expect(out.stderr).toBe('a]52;c;AAAAb');
  });
});

test('a model warning is one line on stderr, terminal or not', () => {
  const { out, emit } = sink(false, false);
  emit({ type: 'model.warning', turn: 1, text: 'server rejected "prompt_cache_key"' });
  expect(out.stderr).toBe('conch: server rejected "prompt_cache_key"\n');
});

test("a retry's reason, which quotes the model server's error message, cannot put control sequences on the terminal", () => {
  // A server answering 529 with this message set the clipboard (OSC 52) and cleared the screen.
  const { out, emit } = sink(true, false);
  emit({ type: 'model.retry', turn: 1, attempt: 1, delayMs: 500, reason: 'HTTP 529: overloaded\x1b]52;c;Y3VybCBldmlsfHNo\x07\x1b[2J\x9b2J' });
  expect(out.stderr).toBe('  retrying the model call in 0.5 s (HTTP 529: overloaded]52;c;Y3VybCBldmlsfHNo[2J2J)\n');
});

describe('the closing line', () => {
  const outcome = {
    status: 'completed' as const,
    output: 'x',
    stopReason: 'end_turn',
    usage: { inputTokens: 500, outputTokens: 1204, cacheReadTokens: 7500, cacheWriteTokens: 2000 },
    counts: { modelCalls: 3, toolCalls: 2, toolErrors: 0 },
    durationMs: 12_345,
    promptTokens: 10_000,
    cost: { usd: 0.01234, estimated: true },
  };

  test('on a terminal: duration, turns, tokens with the cache hit ratio, cost', () => {
    const { out, emit } = sink(true, false);
    emit({ type: 'run.finished', outcome });
    expect(out.stderr).toBe('conch · 12.3 s · 3 turns · 10,000 tokens in (75% from cache), 1,204 out · $0.0123 (list prices)\n');
  });

  test('unknown figures are left out, never shown as 0; off a terminal there is no closing line', () => {
    const { out, emit } = sink(true, false);
    emit({ type: 'run.finished', outcome: { ...outcome, promptTokens: null, cost: null, counts: { ...outcome.counts, modelCalls: 1 } } });
    expect(out.stderr).toBe('conch · 12.3 s · 1 turn\n');
    const piped = sink(false, false);
    piped.emit({ type: 'run.finished', outcome });
    expect(piped.out.stderr).toBe('');
  });
});
