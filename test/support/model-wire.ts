// Wire encodings for the test model server: turns a ScriptedTurn into a real Anthropic Messages or
// OpenAI Chat Completions HTTP response (SSE stream, plain JSON, or the protocol's error body).
import type { Flood, ScriptedToolCall, ScriptedTurn } from './model-server.ts';

export type Protocol = 'anthropic' | 'openai';
type Ending = 'close' | 'drop' | 'hang';

const DEFAULT_USAGE = { input: 10, output: 5 };

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

const OPENAI_STOP: Record<string, string> = { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length' };

export function textDeltas(text: ScriptedTurn['text']): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  return text === '' ? [] : text.split(/(?<=\s)/);
}

export function argumentText(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** Split into three pieces so clients must assemble arguments from several deltas. */
export function argumentChunks(args: string): string[] {
  if (args.length < 3) return [args];
  const size = Math.ceil(args.length / 3);
  const out: string[] = [];
  for (let i = 0; i < args.length; i += size) out.push(args.slice(i, i + size));
  return out;
}

function usageOf(turn: ScriptedTurn): NonNullable<ScriptedTurn['usage']> | null {
  return turn.usage === null ? null : (turn.usage ?? DEFAULT_USAGE);
}

function stopReasonOf(turn: ScriptedTurn, protocol: Protocol): string | null {
  if (turn.stopReason === null) return null;
  const neutral = turn.stopReason ?? (turn.toolCalls?.length ? 'tool_use' : 'end_turn');
  return protocol === 'openai' ? (OPENAI_STOP[neutral] ?? neutral) : neutral;
}

function ending(turn: ScriptedTurn): Ending {
  if (turn.hangAfterText) return 'hang';
  if (turn.dropAfterText) return 'drop';
  return 'close';
}

function sse(frames: string[], end: Ending): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (i < frames.length) {
        c.enqueue(enc.encode(frames[i++]));
        return;
      }
      if (end === 'close') return c.close();
      // Let the frames already queued reach the client before the socket goes away.
      await Bun.sleep(20);
      if (end === 'drop') return c.error();
      await new Promise(() => {}); // hang: only the client's disconnect ends this response
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
}

function errorResponse(protocol: Protocol, err: NonNullable<ScriptedTurn['error']>): Response {
  const message = err.message ?? `scripted HTTP ${err.status} error`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (err.retryAfter !== undefined) headers['retry-after'] = err.retryAfter;
  if (err.retryAfterMs !== undefined) headers['retry-after-ms'] = err.retryAfterMs;
  const body =
    protocol === 'anthropic'
      ? { type: 'error', error: { type: err.type ?? ANTHROPIC_ERROR_TYPES[err.status] ?? 'api_error', message } }
      : { error: { message, type: err.type ?? (err.status >= 500 ? 'server_error' : 'invalid_request_error'), param: null, code: null } };
  return new Response(JSON.stringify(body), { status: err.status, headers });
}

let counter = 0;
const nextId = (prefix: string) => `${prefix}${++counter}`;

// ---------------------------------------------------------------- Anthropic Messages

export function anthropicResponse(turn: ScriptedTurn, opts: { stream: boolean; model: string }): Response {
  if (turn.error) return errorResponse('anthropic', turn.error);
  const usage = usageOf(turn);
  const calls = (turn.toolCalls ?? []).map((c) => ({ id: c.id ?? nextId('toolu_'), name: c.name, args: argumentText(c) }));
  const texts = textDeltas(turn.text);
  const stop = stopReasonOf(turn, 'anthropic');
  const startUsage =
    usage &&
    strip({
      input_tokens: usage.input,
      output_tokens: usage.output === undefined ? undefined : 1,
      cache_read_input_tokens: usage.cacheRead,
      cache_creation_input_tokens: usage.cacheWrite,
    });
  const message = strip({
    id: nextId('msg_'),
    type: 'message',
    role: 'assistant',
    model: opts.model,
    content: [] as unknown[],
    stop_reason: null,
    stop_sequence: null,
    usage: startUsage ?? undefined,
  });

  if (!opts.stream) {
    if (texts.length) message.content.push({ type: 'text', text: texts.join('') });
    for (const c of calls) message.content.push({ type: 'tool_use', id: c.id, name: c.name, input: safeParse(c.args) });
    return Response.json({ ...message, stop_reason: stop, usage: usage && strip({ input_tokens: usage.input, output_tokens: usage.output }) });
  }

  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const frames = [ev('message_start', { message }), ev('ping', {})];
  let index = 0;
  if (turn.thinking) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    for (const t of textDeltas(turn.thinking.text)) frames.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: t } }));
    frames.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: turn.thinking.signature ?? 'sig-scripted' } }));
    frames.push(ev('content_block_stop', { index: index++ }));
    if (turn.thinking.redacted !== undefined) {
      frames.push(ev('content_block_start', { index, content_block: { type: 'redacted_thinking', data: turn.thinking.redacted } }));
      frames.push(ev('content_block_stop', { index: index++ }));
    }
  }
  if (texts.length) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    const shown = turn.failMidStream || turn.malformedEvent ? texts.slice(0, 1) : texts;
    for (const t of shown) frames.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: t } }));
  }
  if (turn.failMidStream) {
    frames.push(ev('error', { error: { type: 'overloaded_error', message: 'Overloaded (scripted mid-stream failure)' } }));
    return sse(frames, 'close');
  }
  if (turn.malformedEvent) {
    frames.push('event: content_block_delta\ndata: {"type": "content_block_delta", "index": \n\n');
    return sse(frames, 'close');
  }
  if (turn.hangAfterText || turn.dropAfterText) return sse(frames, ending(turn));
  if (texts.length) frames.push(ev('content_block_stop', { index: index++ }));
  for (const c of calls) {
    frames.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }));
    for (const part of argumentChunks(c.args)) {
      frames.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }));
    }
    frames.push(ev('content_block_stop', { index: index++ }));
  }
  const deltaUsage = usage && strip({ output_tokens: usage.output });
  frames.push(
    ev('message_delta', strip({ delta: { stop_reason: stop, stop_sequence: null }, usage: deltaUsage ?? undefined })),
    ev('message_stop', {}),
  );
  return sse(frames, 'close');
}

// ---------------------------------------------------------------- OpenAI Chat Completions

export function openaiResponse(
  turn: ScriptedTurn,
  opts: { stream: boolean; model: string; includeUsage: boolean },
): Response {
  if (turn.error) return errorResponse('openai', turn.error);
  const usage = usageOf(turn);
  const wireUsage =
    usage &&
    strip({
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input !== undefined && usage.output !== undefined ? usage.input + usage.output : undefined,
      prompt_tokens_details: usage.cacheRead === undefined ? undefined : { cached_tokens: usage.cacheRead },
      completion_tokens_details: usage.reasoning === undefined ? undefined : { reasoning_tokens: usage.reasoning },
    });
  const calls = (turn.toolCalls ?? []).map((c) => ({ id: c.id ?? nextId('call_'), name: c.name, args: argumentText(c) }));
  const texts = textDeltas(turn.text);
  const finish = stopReasonOf(turn, 'openai');
  const id = nextId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);

  if (!opts.stream) {
    const tool_calls = calls.map((c) => strip({ id: c.id || undefined, type: 'function', function: { name: c.name, arguments: c.args } }));
    const msg = strip({ role: 'assistant', content: texts.length ? texts.join('') : null, tool_calls: tool_calls.length ? tool_calls : undefined });
    return Response.json(strip({ id, object: 'chat.completion', created, model: opts.model, choices: [{ index: 0, message: msg, finish_reason: finish }], usage: wireUsage ?? undefined }));
  }

  const chunk = (choices: unknown[], extra: object = {}) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: opts.model, choices, ...extra })}\n\n`;
  const delta = (d: object, finish_reason: string | null = null) => chunk([{ index: 0, delta: d, finish_reason }]);
  const frames = [delta({ role: 'assistant', content: '' })];
  for (const t of textDeltas(turn.thinking?.text)) frames.push(delta({ reasoning_content: t }));
  const shown = turn.failMidStream || turn.malformedEvent ? texts.slice(0, 1) : texts;
  for (const t of shown) frames.push(delta({ content: t }));
  if (turn.failMidStream) {
    // What OpenAI-compatible servers (vLLM, OpenRouter) send when generation fails after the 200.
    frames.push(`data: ${JSON.stringify({ error: { message: 'scripted mid-stream failure', type: 'server_error' } })}\n\n`);
    return sse(frames, 'close');
  }
  if (turn.malformedEvent) {
    frames.push('data: {"id": "broken", "choices": [\n\n');
    return sse(frames, 'close');
  }
  if (turn.hangAfterText || turn.dropAfterText) return sse(frames, ending(turn));
  calls.forEach((c, index) => {
    const [first = '', ...rest] = argumentChunks(c.args);
    frames.push(delta({ tool_calls: [strip({ index, id: c.id || undefined, type: 'function', function: { name: c.name, arguments: first } })] }));
    for (const part of rest) frames.push(delta({ tool_calls: [{ index, function: { arguments: part } }] }));
  });
  frames.push(finish === null ? delta({}) : delta({}, finish));
  if (opts.includeUsage && wireUsage) frames.push(chunk([], { usage: wireUsage }));
  frames.push('data: [DONE]\n\n');
  return sse(frames, 'close');
}

function strip<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function safeParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
}

// ---------------------------------------------------------------- Hostile bodies

const FLOOD_CHUNK = 64 * 1024;

/** The opening and the repeated unit of each flood shape, in the protocol's own framing. */
function floodParts(protocol: Protocol, shape: Flood['shape']): { head: string; unit: string } {
  if (shape === 'line') return { head: 'data: ', unit: 'A' };
  if (shape === 'lines') return { head: '', unit: 'data: x\n' };
  if (shape === 'error') return { head: '{"error": {"message": "', unit: 'A' };
  // Padded so the flood is a few thousand events, not millions: the SDKs' decoders are slow per event.
  const pad = 'p'.repeat(4000);
  if (protocol === 'anthropic') {
    const start = { type: 'message_start', message: { id: nextId('msg_'), type: 'message', role: 'assistant', model: 'flood', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } };
    return { head: `event: message_start\ndata: ${JSON.stringify(start)}\n\n`, unit: `event: ping\ndata: {"type": "ping", "pad": "${pad}"}\n\n` };
  }
  const empty = { id: nextId('chatcmpl-'), object: 'chat.completion.chunk', created: 0, model: 'flood', choices: [{ index: 0, delta: {}, finish_reason: null }], pad };
  return { head: '', unit: `data: ${JSON.stringify(empty)}\n\n` };
}

/** A response whose body never ends; `onBytes` counts what is handed to the socket. */
export function floodResponse(protocol: Protocol, flood: Flood, onBytes: (n: number) => void): Response {
  const { head, unit } = floodParts(protocol, flood.shape);
  const enc = new TextEncoder();
  const chunk = enc.encode(unit.repeat(Math.max(1, Math.floor(FLOOD_CHUNK / unit.length))));
  const limit = flood.maxBytes ?? Infinity;
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      const bytes = sent === 0 && head !== '' ? enc.encode(head) : sent >= limit ? null : chunk;
      if (bytes === null) return new Promise<void>(() => {}); // stall with the connection open
      c.enqueue(bytes);
      sent += bytes.length;
      onBytes(bytes.length);
    },
  });
  const status = flood.shape === 'error' ? (flood.status ?? 400) : 200;
  const type = flood.shape === 'error' ? 'application/json' : 'text/event-stream';
  return new Response(body, { status, headers: { 'content-type': type } });
}
