// What config resolves for the provider a run talks to (config/model.ts builds it, providers/ take
// it), prices included. Declared with config, below the providers that read it.

/** US dollars per million tokens. A cache price left out is unknown, not free. */
export interface Price {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface ProviderConfig {
  type: 'anthropic' | 'openai';
  /** Display name, e.g. 'anthropic' or a named provider from config. */
  name: string;
  model: string;
  baseUrl?: string;
  apiKey?: string;
  retry: RetryPolicy;
  /** Per-request timeout (ms) for the HTTP call; the run deadline applies on top. */
  requestTimeoutMs?: number;
  maxOutputTokens?: number;
  /** Reasoning effort asked for (families.ts maps it to what the model takes). */
  thinking?: 'off' | 'low' | 'medium' | 'high';
  temperature?: number;
  /** Prices from config "prices" (by "provider/model" or model id), over the shipped table. */
  prices?: Record<string, Price>;
  /**
   * The run's limits.model_output_bytes. The raw bytes a model server may send are bounded from
   * it (one SSE event, one response); default 4 MiB, like the limit's own default.
   */
  modelOutputBytes?: number;
  /**
   * Send an output schema as the provider's structured-output parameter (Anthropic output_config,
   * OpenAI response_format) besides describing it in the task. Default: on for the provider's own
   * API, off with a base URL (compatible servers such as Ollama and vLLM constrain the whole output
   * to it, which stops tool calls).
   */
  structuredOutput?: boolean;
  /** The most tools one request may carry (see toolLimit); from config providers.NAME.maxTools. */
  maxTools?: number;
  /** The user config file as messages show it (where a key goes; XDG_CONFIG_HOME moves it). */
  userConfigFile?: string;
}

/** OpenAI's Chat Completions API refuses a request with more tools than this (a 400). */
export const OPENAI_MAX_TOOLS = 128;

/**
 * The most tools a request to this provider may carry, or undefined for no limit. Only OpenAI's own
 * API has a documented one; Anthropic and compatible servers (vLLM, Ollama, llama.cpp) take any
 * number, and a gateway in front of OpenAI says so with maxTools.
 */
export function toolLimit(config: ProviderConfig): number | undefined {
  if (config.maxTools !== undefined) return config.maxTools;
  if (config.type !== 'openai') return undefined;
  if (config.baseUrl === undefined) return OPENAI_MAX_TOOLS;
  return URL.parse(config.baseUrl)?.hostname === 'api.openai.com' ? OPENAI_MAX_TOOLS : undefined;
}
