/**
 * The one provider interface. A provider turns a provider-neutral conversation into one streamed
 * model call through an official SDK and returns the assistant turn. It never runs tools.
 */
import type { ContentBlock, ToolSpec } from '../core/content.ts';
import type { Price, ProviderConfig } from '../config/provider-config.ts';

export interface ToolCall {
  id: string;
  name: string;
  /** The raw JSON text of the arguments exactly as the model produced it (may be malformed). */
  arguments: string;
}

export interface ToolResultMessage {
  callId: string;
  name: string;
  content: ContentBlock[];
  isError: boolean;
}

/**
 * Reasoning the model showed. Anthropic signs its thinking: a signed (or redacted) block must go
 * back unchanged in a tool-use turn; unsigned reasoning (OpenAI-compatible servers) is never sent back.
 */
export type ThinkingBlock =
  | { type: 'thinking'; text: string; signature?: string }
  | { type: 'redacted_thinking'; data: string };

export type Message =
  | { role: 'user'; content: ContentBlock[] }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[]; thinking?: ThinkingBlock[] }
  | { role: 'tool'; results: ToolResultMessage[] };

export interface ModelRequest {
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  maxOutputTokens?: number;
  /**
   * Stable for a whole session: OpenAI routes requests with the same prompt_cache_key to the same
   * prompt cache. Anthropic needs none (its breakpoints are in the request itself).
   */
  cacheKey?: string;
  /**
   * The JSON Schema the final answer must match, for the provider's structured-output parameter
   * where the provider takes it alongside tools (never in a way that turns tools off).
   */
  outputSchema?: Record<string, unknown>;
}

/** Token figures as reported by the provider; a figure not reported is null, never 0. */
export interface Usage {
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
}

export interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
  /** Normalised: 'end_turn' | 'tool_use' | 'max_tokens' | other provider string. */
  stopReason: string;
  usage: Usage;
  /** In the order the model produced them; empty when it showed none. */
  thinking: ThinkingBlock[];
  /** Reasoning tokens as reported (OpenAI); null when not reported separately. */
  thinkingTokens: number | null;
}

export interface StreamHooks {
  /** Called for every text delta as it arrives. */
  onText(delta: string): void;
  /** Called for every delta of the model's visible reasoning. */
  onThinking?(delta: string): void;
  /** Called as tool-call argument bytes arrive (for the model-output limit). */
  onToolArgumentDelta?(callIndex: number, delta: string): void;
  /** Called before a retry sleep. */
  onRetry?(info: { attempt: number; delayMs: number; reason: string }): void;
  /** Something the user should know that does not stop the call (a dropped request field, say). */
  onWarning?(text: string): void;
  /** A fallback route (fallback.ts) moved the call to its next model. */
  onFallback?(info: { from: string; to: string; reason: string }): void;
}

export type ProviderErrorCode = 'provider_auth' | 'provider_unavailable' | 'provider_protocol' | 'provider_rejected';

/** Thrown by providers for failures the user can act on; anything else is a bug. */
export class ProviderError extends Error {
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

/** A price and where it came from: the user's config is their own figure, the shipped table a list price. */
export interface PriceInfo extends Price {
  protocol: ProviderConfig['type'];
  fromConfig: boolean;
}

export interface Provider {
  readonly name: string;
  readonly model: string;
  /** Controls asked for that this model cannot take (left out, never a failed run); for stderr. */
  readonly warnings?: string[];
  /** What this model's tokens cost (null: not known); for a route, the model now in use. */
  readonly price?: PriceInfo | null;
  /** The output-token limit its calls are sent with (undefined: the server decides). */
  readonly outputLimit?: number;
  /** The user's config file, where a price is added (for messages; `~` for the home folder). */
  readonly priceFile?: string;
  /** Which wire protocol's usage figures it reports (Anthropic input excludes cached tokens, OpenAI's includes them). */
  readonly protocol?: ProviderConfig['type'];
  /**
   * One streamed model call. Honours `signal` (abort stops the HTTP stream and rejects with an
   * AbortError-like error). Retries transient failures itself per the RetryPolicy, but never after
   * any output has been streamed to hooks.
   */
  stream(request: ModelRequest, hooks: StreamHooks, signal: AbortSignal): Promise<ModelResponse>;
}
