// The values a run knows that must never be written to a file: each model's API key (a fallback's
// is as secret as the first's) and the values of --env. Sessions and traces hide them alike, and
// with them the MCP servers' env and header values once the host has them (mcp/config.ts specSecrets).
import type { SecretValue } from '../core/secret-scrub.ts';
import type { Config } from './types.ts';

export function secretValues(config: Pick<Config, 'provider' | 'fallbacks' | 'env'>): SecretValue[] {
  return [
    ...[config.provider, ...config.fallbacks].flatMap((p) => (p?.apiKey ? [{ name: 'provider key', value: p.apiKey }] : [])),
    ...Object.entries(config.env).map(([name, value]) => ({ name: `--env ${name}`, value })),
  ];
}
