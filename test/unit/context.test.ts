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

  test('the size stays exact as the conversation grows turn by turn, results arriving one by one', () => {
    const messages = conversation();
    const request: ModelRequest = { system: 'sé', messages, tools: [{ name: 'read', description: 'ünïcode', parameters: {} }], cacheKey: 'k' };
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
    const results: Extract<Message, { role: 'tool' }>['results'] = [];
    messages.push({ role: 'assistant', text: '→ two calls', toolCalls: [{ id: 'a', name: 'read', arguments: '{}' }, { id: 'b', name: 'read', arguments: '{}' }] });
    messages.push({ role: 'tool', results });
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
    // A result added to a tool message already measured (a run sealed after a stop).
    results.push({ callId: 'a', name: 'read', content: [{ type: 'text', text: '😀 one' }], isError: false });
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
    results.push({ callId: 'b', name: 'read', content: [{ type: 'text', text: 'two' }], isError: true });
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
    // After an elision the next turn's figure still matches the request as sent.
    fitContext(request, size(request) - 500);
    messages.push({ role: 'user', content: [{ type: 'text', text: 'more' }] });
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
    // A conversation cut short and grown again with other messages.
    messages.splice(4);
    messages.push({ role: 'assistant', text: 'a different answer', toolCalls: [] }, { role: 'user', content: [{ type: 'text', text: 'and again' }] });
    expect(fitContext(request, 1_000_000).bytes).toBe(size(request));
  });
});
