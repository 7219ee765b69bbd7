// The providers' kept conversion of a conversation: only new messages are converted, anything
// changed before the end is found by identity, and the kept array is rebuilt as it doubles.
import { describe, expect, test } from 'bun:test';
import { ConvertedHistory, FIRST_REBUILD, historyConverter } from '../../src/providers/converted-history.ts';
import type { Message } from '../../src/providers/types.ts';

type Out = { from: string; n: number };
/** Tool messages convert to one entry per result, assistant turns without text to none (like the providers). */
function counting() {
  const seen: Message[] = [];
  const convert = (m: Message): Out[] => {
    seen.push(m);
    if (m.role === 'tool') return m.results.map((r, n) => ({ from: r.callId, n }));
    if (m.role === 'assistant') return m.text === '' ? [] : [{ from: m.text, n: 0 }];
    return [{ from: m.content[0]!.type === 'text' ? m.content[0]!.text : 'image', n: 0 }];
  };
  return { convert, seen, scratch: (messages: Message[]) => messages.flatMap(convert) };
}
const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const said = (text: string): Message => ({ role: 'assistant', text, toolCalls: [] });
const results = (...ids: string[]): Message => ({ role: 'tool', results: ids.map((callId) => ({ callId, name: 'read', content: [{ type: 'text', text: 'r' }], isError: false })) });

describe('ConvertedHistory', () => {
  test('a growing conversation: each message is converted once, the output equals a conversion from scratch', () => {
    const { convert, seen, scratch } = counting();
    const history = new ConvertedHistory(convert);
    const messages: Message[] = [user('task')];
    expect(history.update(messages)).toEqual([{ from: 'task', n: 0 }]);
    messages.push(said(''), results('a', 'b'), said('answer'));
    const out = history.update(messages);
    expect(seen).toEqual(messages);
    expect(history.update(messages)).toBe(out);
    expect(seen.length).toBe(4);
    seen.length = 0;
    expect(out).toEqual(scratch(messages));
    expect(history.texts).toEqual(out.map((o) => JSON.stringify(o)));
    expect(history.rewrites).toBe(0);
  });

  test('a message replaced before the end: only it is converted again', () => {
    const { convert, seen, scratch } = counting();
    const history = new ConvertedHistory(convert);
    const messages: Message[] = [user('task'), said('one'), results('a'), said('two'), results('b')];
    history.update(messages);
    seen.length = 0;
    messages[2] = results('a', 'elided');
    const out = history.update(messages);
    expect(history.rewrites).toBe(1);
    expect(seen).toEqual([messages[2]!]);
    seen.length = 0;
    expect(out).toEqual(scratch(messages));
    // The next request after the rewrite appends again.
    expect(history.texts).toEqual(out.map((o) => JSON.stringify(o)));
    seen.length = 0;
    messages.push(said('three'));
    expect(history.update(messages)).toEqual(scratch(messages));
    expect(history.texts).toEqual(scratch(messages).map((o) => JSON.stringify(o)));
    expect(history.rewrites).toBe(1);
  });

  test('a conversation cut back and grown with other messages (an ACP prompt that failed), or compacted at its start', () => {
    const { convert, seen, scratch } = counting();
    const history = new ConvertedHistory(convert);
    const messages: Message[] = [user('task'), said('one'), results('a'), said('two')];
    history.update(messages);
    messages.length = 2;
    messages.push(user('again'), said('three'));
    seen.length = 0;
    const grown = history.update(messages);
    expect(history.rewrites).toBe(1);
    expect(seen).toEqual([messages[2]!, messages[3]!]);
    seen.length = 0;
    expect(grown).toEqual(scratch(messages));
    seen.length = 0;
    // The same length, the same last message, a different one before it.
    const last = messages[3]!;
    messages.splice(0, 3, user('summary'), said('ok'), user('go on'));
    expect(messages[3]).toBe(last);
    const out = history.update(messages);
    expect(history.rewrites).toBe(2);
    expect(seen).toEqual([messages[0]!, messages[1]!, messages[2]!]);
    seen.length = 0;
    expect(out).toEqual(scratch(messages));
    expect(history.texts).toEqual(out.map((o) => JSON.stringify(o)));
    // Emptied.
    messages.length = 0;
    expect(history.update(messages)).toEqual([]);
    expect(history.texts).toEqual([]);
  });

  test('the kept array is rebuilt, with new objects, each time its count doubles', () => {
    const { convert, seen, scratch } = counting();
    const history = new ConvertedHistory(convert);
    const messages: Message[] = [];
    let before: readonly Out[] = [];
    for (let i = 0; history.rebuilds === 0; i++) {
      before = history.update(messages).slice();
      messages.push(said(`m${i}`));
      history.update(messages);
    }
    expect(messages.length).toBe(FIRST_REBUILD);
    // Each converted once as it came, and all once more in the rebuild.
    expect(seen.length).toBe(2 * FIRST_REBUILD);
    const out = history.update(messages);
    expect(out).toEqual(scratch(messages));
    expect(out[0]).not.toBe(before[0]);
    expect(out[0]).toEqual(before[0]!);
    while (messages.length < 2 * FIRST_REBUILD - 1) messages.push(said(`m${messages.length}`));
    history.update(messages);
    expect(history.rebuilds).toBe(1);
    messages.push(said('the doubling'));
    expect(history.update(messages)).toEqual(scratch(messages));
    expect(history.rebuilds).toBe(2);
    expect(history.texts).toEqual(scratch(messages).map((o) => JSON.stringify(o)));
  });
});

describe('historyConverter', () => {
  test('each conversation array keeps its own conversion (runs sharing a provider)', () => {
    const { convert, seen } = counting();
    const kept = historyConverter(convert);
    const a: Message[] = [user('a')];
    const b: Message[] = [user('b')];
    for (let turn = 0; turn < 3; turn++) {
      a.push(said(`a${turn}`));
      b.push(said(`b${turn}`));
      expect(kept(a).messages.map((o) => o.from)).toEqual(a.map((m) => (m.role === 'user' ? 'a' : (m as { text: string }).text)));
      expect(kept(b).messages.length).toBe(b.length);
    }
    // Every message converted once, although the two conversations alternated.
    expect(seen.length).toBe(a.length + b.length);
  });
});
