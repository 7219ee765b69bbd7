// OpenAI Chat Completions through the official SDK, streamed. Also serves any OpenAI-compatible
// server by base URL (Ollama, vLLM, llama.cpp, OpenRouter), so parsing is deliberately tolerant:
// usage, finish_reason and tool-call ids may all be missing. The SDK is loaded on first use.
import type OpenAI from 'openai';
import { sdkClientOptions, credentialHint, notFoundHint, emptyUsage, figure, historyArguments, structuredOutputOn } from './common.ts';
import { historyConverter } from './converted-history.ts';
import { JSON_HEADERS, keptJsonClient, useKeptTexts } from './request-json.ts';
import { controlsFor } from './families.ts';
import { abortError, withRetry, type RetryContext } from './retry.ts';
import { ProviderError, type Message, type ModelRequest, type ModelResponse, type Provider, type StreamHooks, type ThinkingBlock, type ToolCall, type Usage } from './types.ts';
import type { ProviderConfig } from '../config/provider-config.ts';
import type { ContentBlock } from '../core/content.ts';

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
type ContentPart = OpenAI.Chat.ChatCompletionContentPart;

function part(b: ContentBlock): ContentPart {
  return b.type === 'text'
    ? { type: 'text', text: b.text }
    : { type: 'image_url', image_url: { url: `data:${b.mediaType};base64,${b.data}` } };
}

/** Arguments for history: the raw text when it is a JSON object, else `{}` (servers that parse it would choke). */
function historyArgumentText(call: ToolCall): string {
  return Object.keys(historyArguments(call.arguments)).length === 0 ? '{}' : call.arguments;
}

/**
 * One neutral message as Chat Completions takes it. A `tool` message may carry only text, so an
 * image a tool returned is announced in the tool message and sent in a user message right after
 * the tool messages (they must directly follow the assistant's tool calls).
 */
function convert(m: Message): ChatMessage[] {
  if (m.role === 'user') {
    const only = m.content.length === 1 ? m.content[0] : undefined;
    // Plain string content is what every compatible server understands.
    return [{ role: 'user', content: only?.type === 'text' ? only.text : m.content.map(part) }];
  }
  if (m.role === 'assistant') {
    const msg: OpenAI.Chat.ChatCompletionAssistantMessageParam = {
      role: 'assistant',
      content: m.text !== '' || m.toolCalls.length === 0 ? m.text : null,
    };
    if (m.toolCalls.length > 0) {
      msg.tool_calls = m.toolCalls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: historyArgumentText(c) },
      }));
    }
    return [msg];
  }
  const out: ChatMessage[] = [];
  const images: ContentPart[] = [];
  for (const r of m.results) {
    const lines: string[] = [];
    for (const b of r.content) {
      if (b.type === 'text') {
        lines.push(b.text);
      } else {
        images.push(part(b));
        lines.push(`[image ${images.length} (${b.mediaType}) follows in the next user message]`);
      }
    }
    let text = lines.join('\n');
    // Chat Completions has no error flag on tool results; say it in the text.
    if (r.isError && !/^error\b/i.test(text)) text = `Error: ${text}`;
    out.push({ role: 'tool', tool_call_id: r.callId, content: text });
  }
  if (images.length > 0) {
    out.push({ role: 'user', content: [{ type: 'text', text: 'Images returned by the tool calls above:' }, ...images] });
  }
  return out;
}

const systemMessage = (system: string): ChatMessage[] => (system !== '' ? [{ role: 'system', content: system }] : []);

/** Neutral conversation → Chat Completions messages, converted from scratch. */
export function toOpenAIMessages(system: string, messages: readonly Message[]): ChatMessage[] {
  return [...systemMessage(system), ...messages.flatMap(convert)];
}

/**
 * The conversation's messages converted only as far as they were not for the last request of the
 * same conversation (converted-history.ts).
 */
const keptOpenAIMessages = historyConverter(convert);

export function toOpenAIParams(
  config: ProviderConfig,
  request: ModelRequest,
): OpenAI.Chat.ChatCompletionCreateParamsStreaming {
  const controls = controlsFor(config);
  const maxTokens = request.maxOutputTokens ?? controls.maxOutputTokens;
  const system = systemMessage(request.system);
  const kept = keptOpenAIMessages(request.messages);
  const messages = [...system, ...kept.messages];
  useKeptTexts(messages, kept, system.length);
  return {
    model: config.model,
    stream: true,
    stream_options: { include_usage: true },
    messages,
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: 'function' as const,
            function: { name: t.name, description: t.description, parameters: t.parameters },
          })),
        }
      : {}),
    ...(request.cacheKey ? { prompt_cache_key: request.cacheKey } : {}),
    // strict: false takes any schema, and Chat Completions keeps the tools callable beside it.
    ...(request.outputSchema && structuredOutputOn(config)
      ? { response_format: { type: 'json_schema' as const, json_schema: { name: 'final_answer', schema: request.outputSchema, strict: false } } }
      : {}),
    ...(controls.effort ? { reasoning_effort: controls.effort } : {}),
    ...(controls.temperature !== undefined ? { temperature: controls.temperature } : {}),
    // OpenAI itself wants max_completion_tokens (reasoning models reject max_tokens); compatible servers know max_tokens.
    ...(maxTokens === undefined ? {} : config.baseUrl ? { max_tokens: maxTokens } : { max_completion_tokens: maxTokens }),
  };
}

function normaliseFinish(reason: string | null | undefined, hasCalls: boolean): string {
  if (reason === 'tool_calls' || reason === 'function_call') return 'tool_use';
  if (reason === 'length') return 'max_tokens';
  // Some compatible servers say "stop" (or nothing) even when the turn ends in tool calls.
  if (reason == null || reason === '' || reason === 'stop') return hasCalls ? 'tool_use' : 'end_turn';
  return reason;
}

function mapUsage(reported: unknown): Usage {
  const usage = emptyUsage();
  if (!reported || typeof reported !== 'object') return usage;
  const r = reported as Record<string, unknown>;
  const details = (r.prompt_tokens_details ?? {}) as Record<string, unknown>;
  usage.inputTokens = figure(r.prompt_tokens);
  usage.outputTokens = figure(r.completion_tokens);
  usage.cacheReadTokens = figure(details.cached_tokens);
  usage.cacheWriteTokens = figure(details.cache_write_tokens);
  return usage;
}

/** A loosely typed tool-call delta: compatible servers do not all follow the schema. */
interface ToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: unknown } | null;
}

/** Folds the chunk stream into one response, forwarding deltas to hooks as they arrive. */
export async function consumeOpenAIStream(
  chunks: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>,
  hooks: StreamHooks,
  signal: AbortSignal,
): Promise<ModelResponse> {
  let text = '';
  const calls: ToolCall[] = [];
  const callAt = new Map<number, number>(); // delta index → position in calls
  let usage = emptyUsage();
  let thinkingTokens: number | null = null;
  let reasoning = '';
  let finish: string | null = null;
  let sawChunk = false;

  for await (const chunk of chunks) {
    sawChunk = true;
    if (chunk.usage) {
      usage = mapUsage(chunk.usage);
      thinkingTokens = figure((chunk.usage.completion_tokens_details as Record<string, unknown> | undefined)?.reasoning_tokens);
    }
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = (choice.delta ?? {}) as {
      content?: unknown;
      refusal?: unknown;
      tool_calls?: ToolCallDelta[] | null;
      reasoning_content?: unknown;
      reasoning?: unknown;
    };
    // Compatible servers (vLLM, DeepSeek, OpenRouter, Ollama) stream visible reasoning under one of these names.
    const thought = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : delta.reasoning;
    if (typeof thought === 'string' && thought !== '') {
      reasoning += thought;
      hooks.onThinking?.(thought);
    }
    for (const piece of [delta.content, delta.refusal]) {
      if (typeof piece === 'string' && piece !== '') {
        text += piece;
        hooks.onText(piece);
      }
    }
    for (const tc of delta.tool_calls ?? []) {
      let pos = typeof tc.index === 'number' ? callAt.get(tc.index) : undefined;
      if (pos === undefined && tc.id) {
        const found = calls.findIndex((c) => c.id === tc.id);
        if (found >= 0) pos = found;
      }
      // No index and no id: a continuation of the latest call.
      if (pos === undefined && typeof tc.index !== 'number' && !tc.id && calls.length > 0) pos = calls.length - 1;
      if (pos === undefined) {
        pos = calls.length;
        calls.push({ id: '', name: '', arguments: '' });
        if (typeof tc.index === 'number') callAt.set(tc.index, pos);
      }
      const call = calls[pos]!;
      if (tc.id && !call.id) call.id = tc.id;
      if (tc.function?.name && !call.name) call.name = tc.function.name;
      const args = tc.function?.arguments;
      const piece = typeof args === 'string' ? args : args == null ? '' : JSON.stringify(args);
      if (piece !== '') {
        call.arguments += piece;
        hooks.onToolArgumentDelta?.(pos, piece);
      }
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  // The SDK ends the iteration quietly when its request is aborted.
  if (signal.aborted) throw abortError(signal);
  if (!sawChunk) throw new ProviderError('provider_protocol', 'OpenAI-compatible stream: the response contained no completion chunks');
  calls.forEach((c, i) => {
    if (!c.name) throw new ProviderError('provider_protocol', `OpenAI-compatible stream: tool call ${i + 1} has no function name`);
    if (!c.id) c.id = `call_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`;
    if (c.arguments === '') c.arguments = '{}';
  });
  const thinking: ThinkingBlock[] = reasoning ? [{ type: 'thinking', text: reasoning }] : [];
  return { text, toolCalls: calls, stopReason: normaliseFinish(finish, calls.length > 0), usage, thinking, thinkingTokens };
}

export async function createOpenAIProvider(config: ProviderConfig): Promise<Provider> {
  const provider = `OpenAI-compatible (${config.name})`;
  const options = sdkClientOptions(config, provider);
  const sdk = await import('openai');
  const client = new (keptJsonClient(sdk.OpenAI))(options);
  const ctx: RetryContext = { provider, credentialHint: credentialHint(config), notFoundHint: notFoundHint(config), ...(config.baseUrl ? { endpoint: config.baseUrl } : {}), sdk };
  // Fields a compatible server may not know: once one is rejected it is left out for the rest of the run.
  const dropped = new Set<string>();
  return {
    name: config.name,
    model: config.model,
    warnings: controlsFor(config).warnings,
    stream(request, hooks, signal) {
      const params = toOpenAIParams(config, request);
      return withRetry(config.retry, ctx, hooks, signal, async (attempt) => {
        for (;;) {
          for (const field of dropped) delete (params as unknown as Record<string, unknown>)[field];
          try {
            const chunks = await client.chat.completions.create(params, { signal, headers: JSON_HEADERS });
            return await consumeOpenAIStream(chunks, attempt.hooks, signal);
          } catch (error) {
            const field = rejectedField(error, params, sdk.APIError);
            if (!field) throw error;
            dropped.add(field);
            hooks.onWarning?.(`${provider} rejected the request field "${field}"; it is not sent again in this run`);
          }
        }
      });
    },
  };
}

/** Optional fields conch adds that a compatible server may reject with a 400 naming them. */
export const OPTIONAL_FIELDS = ['prompt_cache_key', 'reasoning_effort', 'temperature', 'stream_options', 'response_format'] as const;

/** The optional field a 400 names, when it names one this request carries. */
function rejectedField(error: unknown, params: object, APIError: abstract new (...args: never[]) => Error): string | null {
  if (!(error instanceof APIError) || (error as { status?: unknown }).status !== 400) return null;
  const body = JSON.stringify((error as { error?: unknown }).error ?? '') + error.message;
  return OPTIONAL_FIELDS.find((f) => f in params && body.includes(f)) ?? null;
}
