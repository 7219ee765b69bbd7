// What a model call costs, from a price table that is data (prices.json, overridable in config).
// A figure that is not known makes the cost unknown (null): never a made-up number.
// The shipped prices are list prices as of prices.json's "$pricesAsOf" (2026-12-01): they age, which
// is why a cost from them is marked estimated and config "prices" overrides any of them.
import table from './prices.json' with { type: 'json' };
import type { PriceInfo, Usage } from './types.ts';
import type { Price, ProviderConfig } from '../config/provider-config.ts';

const SHIPPED = table as unknown as Record<ProviderConfig['type'], Record<string, Price>>;

/** A dated or -latest id (claude-sonnet-4-5-20250929, gpt-4o-2024-08-06) names its base model. */
function baseId(id: string): string {
  return id.replace(/-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/, '');
}

/** config "prices" by "provider/model" or bare model id, then the shipped table; null when neither knows it. */
export function priceFor(config: Pick<ProviderConfig, 'type' | 'name' | 'model'>, overrides: Record<string, Price> = {}): PriceInfo | null {
  const own = overrides[`${config.name}/${config.model}`] ?? overrides[config.model];
  if (own) return { ...own, protocol: config.type, fromConfig: true };
  const id = config.model.slice(config.model.lastIndexOf('/') + 1);
  const listed = SHIPPED[config.type]?.[id] ?? SHIPPED[config.type]?.[baseId(id)];
  return listed ? { ...listed, protocol: config.type, fromConfig: false } : null;
}

const PER_TOKEN = 1 / 1_000_000;

/**
 * The cost of one call in USD, or null when a figure it needs is unknown. Anthropic's input
 * figure excludes cache reads and writes; OpenAI's prompt figure includes its cached tokens.
 */
export function callCost(price: PriceInfo, usage: Usage): number | null {
  if (usage.inputTokens === null || usage.outputTokens === null) return null;
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  if ((read > 0 && price.cacheRead === undefined) || (write > 0 && price.cacheWrite === undefined)) return null;
  const fresh = price.protocol === 'openai' ? Math.max(0, usage.inputTokens - read) : usage.inputTokens;
  return (fresh * price.input + usage.outputTokens * price.output + read * (price.cacheRead ?? 0) + write * (price.cacheWrite ?? 0)) * PER_TOKEN;
}

/** The most a call can cost: every input token uncached, and the whole output limit used. */
export function worstCaseCost(price: Price, inputTokens: number, maxOutputTokens: number): number {
  return (inputTokens * price.input + maxOutputTokens * price.output) * PER_TOKEN;
}

/** Tokens are at least ~3 bytes of text on average; a request's tokens are estimated from its bytes. */
export function estimateTokens(bytes: number): number {
  return Math.ceil(bytes / 3);
}
