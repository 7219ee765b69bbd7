// Anthropic Messages through the official SDK, streamed. The SDK is loaded on first use so that
// runs on another provider (and `conch --help`) never pay for it.
import type Anthropic from '@anthropic-ai/sdk';
import { sdkClientOptions, credentialHint, notFoundHint, emptyUsage, figure, historyArguments, structuredOutputOn } from './common.ts';
import { addCacheBreakpoints } from './anthropic-cache.ts';
import { historyConverter } from './converted-history.ts';
import { JSON_HEADERS, keptJsonClient, useKeptTexts, withStandInMessages } from './request-json.ts';
import { controlsFor } from './families.ts';
import { StreamInterruptedError, abortError, withRetry, type RetryContext } from './retry.ts';
import { ProviderError, type Message, type ModelRequest, type ModelResponse, type Provider, type StreamHooks, type ThinkingBlock, type ToolCall, type ToolResultMessage, type Usage } from './types.ts';
import type { ProviderConfig } from '../config/provider-config.ts';
import type { ContentBlock } from '../core/content.ts';

/** Anthropic requires max_tokens; this is used when neither the request nor the config sets one. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192;

type ImageMediaType = Anthropic.Base64ImageSource['media_type'];
type UserBlock = Anthropic.TextBlockParam | Anthropic.ImageBlockParam;

function block(b: ContentBlock): UserBlock {
  return b.type === 'text'
    ? { type: 'text', text: b.text }
    : { type: 'image', source: { type: 'base64', media_type: b.mediaType as ImageMediaType, data: b.data } };
}

/** Anthropic ids match ^[a-zA-Z0-9_-]+$; a call made by another provider (a fallback route) may not. */
function toolUseId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'call';
}

function toolResult(r: ToolResultMessage): Anthropic.ToolResultBlockParam {
  const content = r.content.filter((b) => b.type !== 'text' || b.text !== '').map(block);
  return { type: 'tool_result', tool_use_id: toolUseId(r.callId), ...(content.length > 0 ? { content } : {}), is_error: r.isError };
}

/** One neutral message as Anthropic takes it: tool results travel as a user turn of tool_result blocks. */
function convert(m: Message): Anthropic.MessageParam[] {
  if (m.role === 'tool') return [{ role: 'user', content: m.results.map(toolResult) }];
  if (m.role === 'user') return [{ role: 'user', content: m.content.map(block) }];
  const content: Anthropic.ContentBlockParam[] = [];
  // Signed thinking goes back byte for byte, first, as the API requires in a tool-use turn.
  for (const t of m.thinking ?? []) {
    if (t.type === 'redacted_thinking') content.push({ type: 'redacted_thinking', data: t.data });
    else if (t.signature) content.push({ type: 'thinking', thinking: t.text, signature: t.signature });
  }
  // The API rejects empty text blocks.
  if (m.text !== '') content.push({ type: 'text', text: m.text });
  for (const c of m.toolCalls) {
    content.push({ type: 'tool_use', id: toolUseId(c.id), name: c.name, input: historyArguments(c.arguments) });
  }
  return content.length > 0 ? [{ role: 'assistant', content }] : [];
}

/** Neutral conversation → Anthropic messages, converted from scratch. */
export function toAnthropicMessages(messages: readonly Message[]): Anthropic.MessageParam[] {
  return messages.flatMap(convert);
}

/**
 * Neutral conversation → Anthropic messages, converting only what was added since the last request
 * of the same conversation (converted-history.ts). The cache breakpoints never mark the kept
 * objects; they mark copies (anthropic-cache.ts).
 */
export const keptAnthropicMessages = historyConverter(convert);

/**
 * `format`: the output schema as Anthropic's structured output (output_config.format), which
 * constrains the answer's text and leaves the tools callable.
 */
export function toAnthropicParams(
  config: ProviderConfig,
  request: ModelRequest,
  format?: Anthropic.JSONOutputFormat,
): Anthropic.MessageCreateParamsStreaming {
  const controls = controlsFor(config);
  const kept = keptAnthropicMessages(request.messages);
  const params: Anthropic.MessageCreateParamsStreaming = {
    model: config.model,
    max_tokens: request.maxOutputTokens ?? controls.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
    stream: true,
    ...(controls.thinkingBudget !== undefined ? { thinking: { type: 'enabled', budget_tokens: controls.thinkingBudget } } : {}),
    ...(controls.temperature !== undefined ? { temperature: controls.temperature } : {}),
    ...(format ? { output_config: { format } } : {}),
    // A copy of the kept array: the breakpoints replace two of its entries.
    messages: kept.messages.slice(),
    ...(request.system !== '' ? { system: request.system } : {}),
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            name: t.name,
            description: t.description,
            input_schema: t.parameters as Anthropic.Tool.InputSchema,
          })),
        }
      : {}),
  };
  addCacheBreakpoints(params);
  useKeptTexts(params.messages, kept);
  return params;
}

function normaliseStop(reason: string | null | undefined, hasCalls: boolean): string {
  if (reason == null || reason === '') return hasCalls ? 'tool_use' : 'end_turn';
  return reason;
}

/** Later reports win: message_start carries the input figures, message_delta the final output count. */
function mergeUsage(usage: Usage, reported: unknown): void {
  if (!reported || typeof reported !== 'object') return;
  const r = reported as Record<string, unknown>;
  usage.inputTokens = figure(r.input_tokens) ?? usage.inputTokens;
  usage.outputTokens = figure(r.output_tokens) ?? usage.outputTokens;
  usage.cacheReadTokens = figure(r.cache_read_input_tokens) ?? usage.cacheReadTokens;
  usage.cacheWriteTokens = figure(r.cache_creation_input_tokens) ?? usage.cacheWriteTokens;
}

function protocolError(what: string): ProviderError {
  return new ProviderError('provider_protocol', `Anthropic stream: ${what}`);
}

/** Folds the raw event stream into one response, forwarding deltas to hooks as they arrive. */
export async function consumeAnthropicStream(
  events: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  hooks: StreamHooks,
  signal: AbortSignal,
): Promise<ModelResponse> {
  let text = '';
  const calls: ToolCall[] = [];
  const callAt = new Map<number, number>(); // content-block index → position in calls
  const thinking: ThinkingBlock[] = [];
  const thinkingAt = new Map<number, Extract<ThinkingBlock, { type: 'thinking' }>>();
  const usage = emptyUsage();
  let stop: string | null = null;
  let started = false;
  let finished = false;

  for await (const ev of events) {
    if (ev.type !== 'message_start' && !started) throw protocolError(`"${ev.type}" arrived before message_start`);
    switch (ev.type) {
      case 'message_start':
        started = true;
        mergeUsage(usage, ev.message?.usage);
        break;
      case 'content_block_start': {
        const cb = ev.content_block;
        if (cb.type === 'tool_use') {
          callAt.set(ev.index, calls.length);
          calls.push({ id: cb.id, name: cb.name, arguments: '' });
        } else if (cb.type === 'text' && cb.text) {
          text += cb.text;
          hooks.onText(cb.text);
        } else if (cb.type === 'thinking') {
          const t = { type: 'thinking' as const, text: cb.thinking ?? '', signature: cb.signature || undefined };
          thinking.push(t);
          thinkingAt.set(ev.index, t);
          if (t.text) hooks.onThinking?.(t.text);
        } else if (cb.type === 'redacted_thinking') {
          thinking.push({ type: 'redacted_thinking', data: cb.data });
        }
        break;
      }
      case 'content_block_delta': {
        const d = ev.delta;
        if (d.type === 'text_delta') {
          text += d.text;
          hooks.onText(d.text);
        } else if (d.type === 'input_json_delta') {
          const pos = callAt.get(ev.index);
          const call = pos === undefined ? undefined : calls[pos];
          if (pos === undefined || !call) throw protocolError(`input_json_delta for block ${ev.index}, which is not a tool_use block`);
          call.arguments += d.partial_json;
          hooks.onToolArgumentDelta?.(pos, d.partial_json);
        } else if (d.type === 'thinking_delta' || d.type === 'signature_delta') {
          const t = thinkingAt.get(ev.index);
          if (!t) throw protocolError(`${d.type} for block ${ev.index}, which is not a thinking block`);
          if (d.type === 'signature_delta') t.signature = (t.signature ?? '') + d.signature;
          else {
            t.text += d.thinking;
            hooks.onThinking?.(d.thinking);
          }
        }
        // Citation deltas carry nothing this interface exposes.
        break;
      }
      case 'message_delta':
        stop = ev.delta?.stop_reason ?? stop;
        mergeUsage(usage, ev.usage);
        break;
      case 'message_stop':
        finished = true;
        break;
      default:
        // content_block_stop and event types newer than this code: nothing to do.
        break;
    }
  }
  // The SDK ends the iteration quietly when its request is aborted.
  if (signal.aborted) throw abortError(signal);
  if (!finished) throw new StreamInterruptedError('the Anthropic response stream ended before message_stop');
  for (const c of calls) if (c.arguments === '') c.arguments = '{}';
  return { text, toolCalls: calls, stopReason: normaliseStop(stop, calls.length > 0), usage, thinking, thinkingTokens: null };
}

/**
 * The schema as Anthropic's structured output takes it: the SDK's own transform closes objects and
 * moves constraints the API does not enforce into descriptions (conch still checks them all).
 * null when it cannot (a schema without a type at some level): the task's description must do.
 */
async function outputFormat(schema: Record<string, unknown>): Promise<Anthropic.JSONOutputFormat | null> {
  const { transformJSONSchema } = await import('./anthropic-sdk.ts');
  try {
    return { type: 'json_schema', schema: transformJSONSchema(schema) as Record<string, unknown> };
  } catch {
    return null;
  }
}

export async function createAnthropicProvider(config: ProviderConfig): Promise<Provider> {
  const provider = `Anthropic (${config.name})`;
  const options = sdkClientOptions(config, provider);
  const sdk = await import('./anthropic-sdk.ts');
  const client = new (keptJsonClient(sdk.MessagesClient))(options);
  const ctx: RetryContext = { provider, credentialHint: credentialHint(config), notFoundHint: notFoundHint(config), ...(config.baseUrl ? { endpoint: config.baseUrl } : {}), sdk };
  let structured = structuredOutputOn(config);
  // create() reads the messages only to walk them for its x-stainless-helper header (which marks
  // objects the SDK's own helpers made: conch's never are) and, in its tracing's content mode, to
  // record them on the span; the walk grew with the conversation (5 % of a 2,000-turn run).
  const recordsContent = client.openTelemetry.traces.enabled && client.openTelemetry.traces.contentMode === 'content';
  const sdkParams = (params: Anthropic.MessageCreateParamsStreaming) => (recordsContent ? params : withStandInMessages(params));
  const formats = new WeakMap<object, Anthropic.JSONOutputFormat | null>();
  return {
    name: config.name,
    model: config.model,
    warnings: controlsFor(config).warnings,
    async stream(request, hooks, signal) {
      const schema = structured ? request.outputSchema : undefined;
      let format = schema ? formats.get(schema) : null;
      if (schema && format === undefined) formats.set(schema, (format = await outputFormat(schema)));
      const params = toAnthropicParams(config, request, format ?? undefined);
      return withRetry(config.retry, ctx, hooks, signal, async (attempt) => {
        for (;;) {
          try {
            const events = await client.messages.create(sdkParams(params), { signal, headers: JSON_HEADERS });
            return await consumeAnthropicStream(events, attempt.hooks, signal);
          } catch (error) {
            // A model without structured outputs, or a schema it cannot take: conch checks the answer alone.
            if (!params.output_config || !(error instanceof sdk.APIError) || error.status !== 400) throw error;
            delete params.output_config;
            structured = false;
            hooks.onWarning?.(`${provider} rejected the output schema as structured output (${error.message.slice(0, 300)}); it is sent without it for the rest of the run, and conch alone checks the answer`);
          }
        }
      });
    },
  };
}
