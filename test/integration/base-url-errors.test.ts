// A local OpenAI-compatible server given with --base-url (Ollama, vLLM, llama.cpp): when it refuses,
// the message says what to fix for that way of starting conch. Real CLI, real SDK, local model server.
import { describe, expect, test } from 'bun:test';
import { runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

describe('--base-url errors name the fix', () => {
  test('401: the key to set is OPENAI_API_KEY, the one --base-url sends (no config provider is involved)', async () => {
    harness.server.script([{ error: { status: 401, message: 'invalid api key' } }]);
    const r = await runConch({ dirs: harness.dirs, args: ['--base-url', harness.server.openaiBaseUrl, '-m', 'qwen', 'go'] });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('provider_auth');
    expect(r.stderr).toContain('invalid api key');
    expect(r.stderr).toContain('OPENAI_API_KEY');
    // There is no provider of that name to configure: following this advice changed nothing.
    expect(r.stderr).not.toContain('providers.openai-compatible');
  });
});
