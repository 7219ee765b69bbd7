// Anthropic prompt caching. A request is tools → system → messages; each breakpoint caches the
// prefix up to the block that carries it. Three are set (the API allows four): the stable prefix
// (tools and system prompt), the end of the previous request (so this request reads it from
// cache, however many blocks the last turn added) and the end of this request (written for the
// next one). Without breakpoints every turn re-bills the whole growing conversation at full price.
import type Anthropic from '@anthropic-ai/sdk';

const EPHEMERAL = { type: 'ephemeral' } as const;

/** The API's own cap on cache_control blocks per request. */
export const MAX_BREAKPOINTS = 4;

type Cacheable = { cache_control?: Anthropic.CacheControlEphemeral | null };

/**
 * Marks the last block of messages[index]. The message and its blocks may be shared with earlier
 * requests (anthropic.ts converts each message once), so the marked block is a copy in a copy.
 */
function markLast(messages: Anthropic.MessageParam[], index: number): boolean {
  const message = messages[index];
  if (!message || typeof message.content === 'string' || message.content.length === 0) return false;
  const last = message.content[message.content.length - 1] as Anthropic.ContentBlockParam & Cacheable;
  // Thinking blocks cannot carry cache_control; the user turns this marks never end in one.
  if (last.type === 'thinking' || last.type === 'redacted_thinking') return false;
  messages[index] = { ...message, content: [...message.content.slice(0, -1), { ...last, cache_control: EPHEMERAL }] } as Anthropic.MessageParam;
  return true;
}

/** Sets the breakpoints in place on params built by toAnthropicParams (plain system string or none). */
export function addCacheBreakpoints(params: Anthropic.MessageCreateParamsStreaming): void {
  if (typeof params.system === 'string' && params.system !== '') {
    params.system = [{ type: 'text', text: params.system, cache_control: EPHEMERAL }];
  } else if (params.tools && params.tools.length > 0) {
    (params.tools[params.tools.length - 1] as Cacheable).cache_control = EPHEMERAL;
  }
  const { messages } = params;
  const lastIndex = messages.length - 1;
  markLast(messages, lastIndex);
  // The previous request ended with the user turn before the latest assistant turn.
  for (let i = lastIndex - 1; i >= 0; i--) {
    if (messages[i]!.role === 'assistant') {
      if (i > 0) markLast(messages, i - 1);
      break;
    }
  }
}
