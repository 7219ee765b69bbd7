// The pure half of `conch acp`: outcomes → stop reasons, events → session updates, prompt blocks → content.
import { describe, expect, test } from 'bun:test';
import type { Outcome } from '../../src/agent/outcome.ts';
import type { RunEvent } from '../../src/agent/events.ts';
import { firstChangedLine, outcomeNotice, PromptContentError, promptContent, stopReasonFor, toolKind, UpdateMapper } from '../../src/acp/updates.ts';

const outcome = (o: Partial<Outcome>): Outcome => ({
  status: 'completed',
  output: '',
  stopReason: 'end_turn',
  usage: { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null },
  counts: { modelCalls: 1, toolCalls: 0, toolErrors: 0 },
  durationMs: 1,
  ...o,
});

describe('stop reasons', () => {
  test.each([
    [{ status: 'completed' }, 'end_turn'],
    [{ status: 'completed', stopReason: 'max_tokens' }, 'max_tokens'],
    [{ status: 'cancelled' }, 'cancelled'],
    [{ status: 'limit_exceeded', limit: 'model_calls' }, 'max_turn_requests'],
    [{ status: 'limit_exceeded', limit: 'model_output_bytes' }, 'max_tokens'],
    [{ status: 'limit_exceeded', limit: 'tool_calls' }, 'end_turn'],
    [{ status: 'policy_denied', rule: 'x' }, 'end_turn'],
    [{ status: 'timed_out' }, 'end_turn'],
  ] as [Partial<Outcome>, string][])('%o → %s', (o, reason) => {
    expect(stopReasonFor(outcome(o))).toBe(reason as never);
  });

  test('only outcomes without a stop reason of their own get a closing notice', () => {
    expect(outcomeNotice(outcome({ status: 'completed' }))).toBeNull();
    expect(outcomeNotice(outcome({ status: 'limit_exceeded', limit: 'model_calls', message: 'm' }))).toBeNull();
    expect(outcomeNotice(outcome({ status: 'limit_exceeded', limit: 'tool_calls', message: 'the tool-call limit' }))).toContain('the tool-call limit');
    expect(outcomeNotice(outcome({ status: 'policy_denied', message: 'rule r' }))).toContain('policy denied');
  });
});

describe('event mapping', () => {
  const base = { runId: 'r', seq: 0, time: '' };
  const ev = (e: object) => ({ ...base, ...e }) as RunEvent;

  test('tool kinds', () => {
    expect(['bash', 'read', 'write', 'edit', 'jobs_start'].map(toolKind)).toEqual(['execute', 'read', 'edit', 'edit', 'other']);
  });

  test('a write of a new file: diff without old text, location at line 1, file bodies kept out of rawOutput', () => {
    const m = new UpdateMapper('/ws');
    const [call] = m.map(ev({ type: 'tool.started', callId: 'c', name: 'write', args: { path: 'a/b.txt', content: 'x\n' } }));
    expect(call).toMatchObject({ sessionUpdate: 'tool_call', title: 'Write a/b.txt', locations: [{ path: '/ws/a/b.txt' }] });
    const [done] = m.map(ev({ type: 'tool.finished', callId: 'c', name: 'write', isError: false, truncated: false, durationMs: 1, output: 'Created', details: { path: '/ws/a/b.txt', oldText: null, newText: 'x\n', revision: 'r1' } }));
    expect(done).toMatchObject({ status: 'completed', locations: [{ path: '/ws/a/b.txt', line: 1 }] });
    expect((done as any).content[0]).toEqual({ type: 'diff', path: '/ws/a/b.txt', oldText: null, newText: 'x\n' });
    expect((done as any).rawOutput).toEqual({ output: 'Created', path: '/ws/a/b.txt', revision: 'r1' });
  });

  test('progress accumulates; a failed call has no diff; text deltas carry the model call as message id', () => {
    const m = new UpdateMapper('/ws');
    m.map(ev({ type: 'tool.updated', callId: 'c', name: 'p', text: 'one' }));
    const [u] = m.map(ev({ type: 'tool.updated', callId: 'c', name: 'p', text: 'two' }));
    expect((u as any).content[0].content.text).toBe('one\ntwo\n');
    const [f] = m.map(ev({ type: 'tool.finished', callId: 'c', name: 'edit', isError: true, truncated: false, durationMs: 1, output: 'no match', details: { path: '/ws/x', oldText: 'a', newText: 'b' } }));
    expect((f as any).content).toEqual([{ type: 'content', content: { type: 'text', text: 'no match' } }]);
    m.map(ev({ type: 'model.started', turn: 2 }));
    expect(m.map(ev({ type: 'text.delta', text: 'hi' }))[0]).toMatchObject({ messageId: 'r:2' });
  });

  test('first changed line', () => {
    expect(firstChangedLine('a\nb\nc\n', 'a\nb\nC\n')).toBe(3);
    expect(firstChangedLine('', 'new\n')).toBe(1);
    expect(firstChangedLine('a\n', 'a\nb\n')).toBe(2);
  });
});

describe('prompt content', () => {
  test('text, images, links and text resources pass; audio, binary resources and empty prompts are refused', () => {
    expect(
      promptContent([
        { type: 'text', text: 'look' },
        { type: 'image', mimeType: 'image/png', data: 'AAAA' },
        { type: 'resource_link', name: 'spec', uri: 'file:///ws/spec.md' },
        { type: 'resource', resource: { uri: 'file:///ws/a.ts', text: 'let a = 1;' } },
      ]),
    ).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', mediaType: 'image/png', data: 'AAAA' },
      { type: 'text', text: '[linked resource: spec <file:///ws/spec.md>]' },
      { type: 'text', text: '<resource uri="file:///ws/a.ts">\nlet a = 1;\n</resource>' },
    ]);
    expect(() => promptContent([{ type: 'audio', mimeType: 'audio/wav', data: 'AA' }])).toThrow(PromptContentError);
    expect(() => promptContent([{ type: 'resource', resource: { uri: 'file:///x.bin', blob: 'AA' } }])).toThrow(/binary/);
    expect(() => promptContent([])).toThrow(/empty/);
    // Images the providers reject are refused up front, so they never enter a session's history.
    expect(() => promptContent([{ type: 'image', mimeType: 'image/bmp', data: 'Qk0=' }])).toThrow(/image\/png/);
    expect(() => promptContent([{ type: 'image', mimeType: 'image/png', data: '', uri: 'file:///x.png' }])).toThrow(/data/);
    expect(promptContent([{ type: 'image', mimeType: 'image/png', data: 'iVBORw0K' }])).toEqual([{ type: 'image', mediaType: 'image/png', data: 'iVBORw0K' }]);
  });
});

describe('replayUpdates (session/load)', () => {
  test('prompts, answers and tool calls come back as the updates an editor saw live', async () => {
    const { replayUpdates } = await import('../../src/acp/replay.ts');
    const updates = replayUpdates([
      { role: 'user', content: [{ type: 'text', text: 'list files' }, { type: 'image', mediaType: 'image/png', data: 'AAAA' }] },
      { role: 'assistant', text: 'Looking.', toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"ls"}' }] },
      { role: 'tool', results: [{ callId: 'c1', name: 'bash', content: [{ type: 'text', text: 'a\nb' }], isError: false }] },
      { role: 'assistant', text: 'Two files.', toolCalls: [] },
    ]);
    expect(updates).toEqual([
      { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'list files' } },
      { sessionUpdate: 'user_message_chunk', content: { type: 'image', mimeType: 'image/png', data: 'AAAA' } },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Looking.' } },
      { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'ls', kind: 'execute', status: 'pending', rawInput: { command: 'ls' } },
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'a\nb' } }] },
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Two files.' } },
    ]);
  });
});

test('thinking goes to editors as agent_thought_chunk, apart from the answer, in the same message', () => {
  const mapper = new UpdateMapper('/ws');
  const base = { runId: 'r', seq: 0, time: '' };
  mapper.map({ ...base, type: 'model.started', turn: 2 } as RunEvent);
  expect(mapper.map({ ...base, type: 'thinking.delta', text: 'first, read it' } as RunEvent)).toEqual([
    { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'first, read it' }, messageId: 'r:2' },
  ]);
});
