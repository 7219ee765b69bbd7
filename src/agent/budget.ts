// The run's cost: summed per model call from the answering model's price, and the cost_usd limit,
// checked before each call against the worst case that call could cost.
import type { ModelResponse, Provider } from '../providers/types.ts';
import { callCost, estimateTokens, worstCaseCost } from '../providers/cost.ts';

export class CostMeter {
  private usd = 0;
  private known = true;
  private estimated = false;
  private prompt: number | null = 0;

  /** Add one call's cost, priced for the model that answered it. */
  add(provider: Provider, response: ModelResponse): void {
    const price = provider.price ?? null;
    const cost = price ? callCost(price, response.usage) : null;
    if (cost === null) this.known = false;
    else {
      this.usd += cost;
      if (!price!.fromConfig) this.estimated = true;
    }
    const u = response.usage;
    const prompt = u.inputTokens === null ? null : provider.protocol === 'openai' ? u.inputTokens : u.inputTokens + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0);
    this.prompt = this.prompt === null || prompt === null ? null : this.prompt + prompt;
  }

  /**
   * A call that ended without its usage (cancelled, timed out, cut off, failed mid-stream) may
   * still have been billed: from then on the total is unknown, not the sum of the calls that reported.
   */
  unreported(): void {
    this.known = false;
    this.prompt = null;
  }

  total(): { usd: number; estimated: boolean } | null {
    return this.known ? { usd: this.usd, estimated: this.estimated } : null;
  }

  promptTokens(): number | null {
    return this.prompt;
  }

  /**
   * Why the next call may not start under a budget of `limit` USD (null: it may). Its input is
   * estimated from the request's bytes, all uncached; its output is the whole output limit.
   */
  refuse(limit: number, provider: Provider, requestBytes: number): string | null {
    const label = `${provider.name}/${provider.model}`;
    const flag = '(limit cost_usd; flag --max-cost)';
    if (!this.known) return `the cost so far is not known (a call reported no token counts), so the cost limit of $${limit} cannot be kept ${flag}`;
    const price = provider.price;
    if (!price) return `no price is known for ${label}, so the cost limit of $${limit} cannot be kept; add its price in USD per million tokens to your user config (${provider.priceFile ?? '~/.config/conch/config.json'}), e.g. "prices": { "${label}": { "input": 3, "output": 15 } } ${flag}`;
    if (provider.outputLimit === undefined) return `${label} has no output-token limit, so the worst case of a call is unbounded; set --max-output-tokens to use the cost limit of $${limit} ${flag}`;
    const worst = worstCaseCost(price, estimateTokens(requestBytes), provider.outputLimit);
    if (this.usd + worst <= limit) return null;
    return `the next model call could cost up to $${worst.toFixed(4)} (${provider.outputLimit} output tokens at most) and $${this.usd.toFixed(4)} is spent, over the cost limit of $${limit} ${flag}`;
  }
}
