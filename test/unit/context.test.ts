// context_bytes: the oldest tool results are elided first, with a note the model reads.
import { describe, expect, test } from 'bun:test';
import { elisionNote, fitContext } from '../../src/agent/context.ts';
import type { Message, ModelRequest } from '../../src/providers/types.ts';

const big = (n: number) => 'x'.repeat(n);
function conversation(): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < 3; i++) {
    out.push({ role: 'user', content: [{ type: 'text', text: `task ${i}` }] });
    out.push({ role: 'assistant', text: '', toolCalls: [{ id: `c${i}`, name: 'read', arguments: '{}' }] });
    out.push({ role: 'tool', results: [{ callId: `c${i}`, name: 'read', content: [{ type: 'text', text: big(1000) }], isError: false }] });
  }
  return out;
}
const size = (r: ModelRequest) => new TextEncoder().encode(JSON.stringify(r)).length;
const resultText = (m: Message) => (m.role === 'tool' && m.results[0]!.content[0]!.type === 'text' ? m.results[0]!.content[0]!.text : null);

describe('fitContext', () => {
  test('a request within the limit is left alone', () => {
    const request: ModelRequest = { system: 's', messages: conversation(), tools: [] };
    const fit = fitContext(request, 1_000_000);
    expect(fit).toEqual({ bytes: size(request), elided: null });
  });

  test('over the limit, the oldest results are elided first, just enough, each with a note', () => {
    const request: ModelRequest = { system: 's', messages: conversation(), tools: [] };
    const full = size(request);
    const fit = fitContext(request, full - 1500);
    expect(fit.elided).toEqual({ results: 2, bytes: 2 * JSON.stringify([{ type: 'text', text: big(1000) }]).length });
    expect(fit.bytes).toBe(size(request));
    expect(fit.bytes).toBeLessThanOrEqual(full - 1500);
    expect(resultText(request.messages[2]!)).toContain('elided by conch');
    expect(resultText(request.messages[5]!)).toContain('elided by conch');
    expect(resultText(request.messages[8]!)).toBe(big(1000));
  });

  test('already elided results are not counted again; when nothing is left it reports what it could', () => {
    const request: ModelRequest = { system: 's', messages: conversation(), tools: [] };
    fitContext(request, size(request) - 1500);
    const second = fitContext(request, 10);
    expect(second.elided?.results).toBe(1);
    expect(second.bytes).toBeGreaterThan(10);
    expect(elisionNote(5)).toContain('context_bytes');
  });
});
