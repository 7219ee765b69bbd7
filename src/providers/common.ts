// Small pieces both providers share. No SDK imports here.
import { boundedFetch, responseBounds } from './bounded-fetch.ts';
import { ProviderError, type Usage } from './types.ts';
import type { ProviderConfig } from '../config/provider-config.ts';

export function emptyUsage(): Usage {
  return { inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null };
}

/** A reported token figure, or null when the provider left it out (never 0 by default). */
export function figure(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * The arguments object to send back in conversation history. Malformed or non-object arguments
 * become `{}`: the APIs reject anything else, and the tool's error result already told the model.
 */
export function historyArguments(raw: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(raw);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Whether an output schema goes to this provider as its structured-output parameter (see ProviderConfig). */
export function structuredOutputOn(config: ProviderConfig): boolean {
  return config.structuredOutput ?? config.baseUrl === undefined;
}

const STANDARD_ENV: Record<ProviderConfig['type'], string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
};

/** Where the user puts the key for this provider, for auth error messages. */
export function credentialHint(config: ProviderConfig): string {
  // --base-url with a bare model name (config/model.ts) sends OPENAI_API_KEY; no config entry is involved.
  if (config.name === 'openai-compatible') return 'OPENAI_API_KEY (the key conch sends to a --base-url server)';
  const configKey = `providers.${config.name}.apiKey in ${config.userConfigFile ?? '~/.config/conch/config.json'}`;
  return config.name === config.type ? `${STANDARD_ENV[config.type]} (or ${configKey})` : configKey;
}

/**
 * What a 404 means to fix: the model's name, or a base URL that is not where the API is (a local
 * server's root instead of its /v1, the most common slip with Ollama and vLLM).
 */
export function notFoundHint(config: ProviderConfig): string {
  const model = `the model '${config.model}'`;
  if (config.baseUrl === undefined) return `Check ${model}: is it a model this provider serves?`;
  const where = config.type === 'openai' ? 'an OpenAI-compatible server serves it under /v1, e.g. http://localhost:11434/v1' : 'give the server root, without /v1: the SDK adds the API path';
  return `Check the base URL ${config.baseUrl} (${where}) and that the server serves ${model}.`;
}

/** The key to hand the SDK. Local servers need none, but the SDKs insist on one. */
export function apiKeyFor(config: ProviderConfig): string {
  if (config.apiKey) return config.apiKey;
  if (config.baseUrl) return 'not-needed';
  throw new ProviderError(
    'provider_auth',
    `No API key for provider "${config.name}". Set ${credentialHint(config)}, or give a baseUrl for a local server that needs no key.`,
  );
}

/** Options both official SDK clients take the same way. `provider` names it in error messages. */
export function sdkClientOptions(config: ProviderConfig, provider: string) {
  return {
    apiKey: apiKeyFor(config),
    baseURL: config.baseUrl,
    // Retries are ours (retry.ts): the SDK's would retry after output was already shown.
    maxRetries: 0,
    ...(config.requestTimeoutMs !== undefined ? { timeout: config.requestTimeoutMs } : {}),
    logLevel: 'off' as const,
    // Bounds what a model server can make conch buffer (bounded-fetch.ts).
    fetch: boundedFetch(responseBounds(config.modelOutputBytes), provider),
  };
}
