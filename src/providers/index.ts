// The one entry point for getting a Provider. Each provider module (and through it its SDK) is
// imported only when a run asks for it: `conch --help` and a run on the other provider never load it.
import type { Provider } from './types.ts';
import type { ProviderConfig } from '../config/provider-config.ts';
import { priceFor } from './cost.ts';
import { outputLimit } from './families.ts';

export async function createProvider(config: ProviderConfig): Promise<Provider> {
  const facts = { price: priceFor(config, config.prices), outputLimit: outputLimit(config), protocol: config.type, priceFile: config.userConfigFile };
  switch (config.type) {
    case 'anthropic':
      return Object.assign(await (await import('./anthropic.ts')).createAnthropicProvider(config), facts);
    case 'openai':
      return Object.assign(await (await import('./openai.ts')).createOpenAIProvider(config), facts);
    default: {
      const unknown: never = config.type;
      throw new Error(`unknown provider type ${String(unknown)}`);
    }
  }
}

export { isAbortError } from './retry.ts';

/** The first model, with the rest of the route behind it (fallback.ts); without a rest, just the first. */
export async function createRouteProvider(first: ProviderConfig, rest: ProviderConfig[]): Promise<Provider> {
  const provider = await createProvider(first);
  if (rest.length === 0) return provider;
  const { createRoute } = await import('./fallback.ts');
  return createRoute([first, ...rest], createProvider, provider);
}
