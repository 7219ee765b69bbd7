// The fallback route is shared by every run of one start (`conch run A B`): calls that fail together
// on one model move the route on by one model, not one per call.
import { expect, test } from 'bun:test';
import type { ProviderConfig } from '../../src/config/provider-config.ts';
import { createRoute } from '../../src/providers/fallback.ts';
import { ProviderError, type ModelResponse, type Provider } from '../../src/providers/types.ts';

const config = (model: string) => ({ type: 'openai', name: 'local', model, retry: { maxRetries: 0, initialDelayMs: 0, maxDelayMs: 0 } }) as ProviderConfig;

test('two calls failing at once on the first model both go to the second, and the route stays there', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const served: string[] = [];
  const make = (model: string, fail: boolean): Provider => ({
    name: 'local',
    model,
    async stream() {
      served.push(model);
      if (fail) {
        await gate; // both calls are in flight before either fails
        throw new ProviderError('provider_unavailable', `${model} is overloaded`, 529);
      }
      return { model } as unknown as ModelResponse;
    },
  });
  const configs = [config('one'), config('two'), config('three')];
  const providers = new Map([['one', make('one', true)], ['two', make('two', false)], ['three', make('three', false)]]);
  const route = createRoute(configs, async (c) => providers.get(c.model)!, providers.get('one')!);
  const moves: string[] = [];
  const hooks = { onText() {}, onFallback: (f: { from: string; to: string }) => moves.push(`${f.from}->${f.to}`) };
  const calls = [route.stream({} as never, hooks as never, new AbortController().signal), route.stream({} as never, hooks as never, new AbortController().signal)];
  await Bun.sleep(0);
  release();
  await Promise.all(calls);
  expect(served).toEqual(['one', 'one', 'two', 'two']);
  expect(moves).toEqual(['local/one->local/two', 'local/one->local/two']);
  expect(route.model).toBe('two');
});
