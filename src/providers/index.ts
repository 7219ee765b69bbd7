// The one entry point for getting a Provider. Each provider module (and through it its SDK) is
// imported only when a run asks for it: `conch --help` and a run on the other provider never load it.
import type { Provider, ProviderConfig } from './types.ts';

export async function createProvider(config: ProviderConfig): Promise<Provider> {
  switch (config.type) {
    case 'anthropic':
      return (await import('./anthropic.ts')).createAnthropicProvider(config);
    case 'openai':
      return (await import('./openai.ts')).createOpenAIProvider(config);
    default: {
      const unknown: never = config.type;
      throw new Error(`unknown provider type ${String(unknown)}`);
    }
  }
}

export { isAbortError } from './retry.ts';
