// A route of models: when the current one fails in a way retries could not cure (unavailable after
// the retry budget, overloaded, a 404 for an unknown model), the same turn goes to the next one.
// The conversation is provider-neutral (types.ts), so each provider translates it to its own
// protocol: tool calls, tool results and images travel as they are. Never after any output of the
// turn was shown (it cannot be taken back), and never on an auth error (a wrong key is the user's
// to fix). The route stays on the model that answered: the one before it was just found failing.
import { controlsFor, outputLimit } from './families.ts';
import { priceFor } from './cost.ts';
import { ProviderError, type Provider, type StreamHooks } from './types.ts';
import type { ProviderConfig } from '../config/provider-config.ts';

/** Whether a failure is one the next model may succeed at. */
export function canFallBack(error: unknown): error is ProviderError {
  if (!(error instanceof ProviderError)) return false;
  if (error.code === 'provider_unavailable') return true;
  return error.code === 'provider_rejected' && error.status === 404;
}

const label = (c: Pick<ProviderConfig, 'name' | 'model'>) => `${c.name}/${c.model}`;

export function createRoute(configs: ProviderConfig[], create: (config: ProviderConfig) => Promise<Provider>, first: Provider): Provider {
  const made: (Provider | undefined)[] = [first];
  let at = 0;
  const current = () => configs[at]!;
  return {
    get name() {
      return current().name;
    },
    get model() {
      return current().model;
    },
    // What each model cannot take is known without its SDK: say it once, up front.
    warnings: configs.flatMap((c, i) => (i === 0 ? (first.warnings ?? []) : controlsFor(c).warnings)),
    get price() {
      return made[at]?.price ?? priceFor(current(), current().prices);
    },
    get outputLimit() {
      return outputLimit(current());
    },
    get priceFile() {
      return current().userConfigFile;
    },
    get protocol() {
      return current().type;
    },
    async stream(request, hooks, signal) {
      for (;;) {
        // Runs share the route (`conch run A B`): only the first of the calls that failed together moves it on.
        const tried = at;
        let shown = false;
        const tracked: StreamHooks = {
          ...hooks,
          onText: (d) => {
            shown = true;
            hooks.onText(d);
          },
          onThinking: (d) => {
            shown = true;
            hooks.onThinking?.(d);
          },
          onToolArgumentDelta: (i, d) => {
            shown = true;
            hooks.onToolArgumentDelta?.(i, d);
          },
        };
        try {
          const provider = (made[tried] ??= await create(configs[tried]!));
          return await provider.stream(request, tracked, signal);
        } catch (error) {
          if (shown || signal.aborted || tried + 1 >= configs.length || !canFallBack(error)) throw error;
          if (at === tried) at++;
          hooks.onFallback?.({ from: label(configs[tried]!), to: label(current()), reason: error.message });
        }
      }
    },
  };
}
