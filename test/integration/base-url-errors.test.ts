// A local OpenAI-compatible server given with --base-url (Ollama, vLLM, llama.cpp): when it refuses,
// the message says what to fix for that way of starting conch. Real CLI, real SDK, local model server.
import { describe, expect, test } from 'bun:test';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';

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

  test('404 from a base URL without /v1: the message names the URL and says where the API usually is', async () => {
    // The model server serves the OpenAI API under /v1, as Ollama and vLLM do; its root answers 404.
    const r = await runConch({ dirs: harness.dirs, args: ['--base-url', harness.server.url, '-m', 'qwen', 'go'] });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('provider_rejected');
    expect(r.stderr).toContain(`base URL ${harness.server.url}`);
    expect(r.stderr).toContain('/v1');
    expect(r.stderr).toContain("'qwen'");
  });

  test('--json: the same hint is in the envelope message', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['--json', '--base-url', harness.server.url, '-m', 'qwen', 'go'] });
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.stdout);
    expect(doc.code).toBe('provider_rejected');
    expect(doc.message).toContain(`base URL ${harness.server.url}`);
  });

  test('a base URL that answers with a web page (a web UI on that port, a proxy login): said at once, no retries', async () => {
    // Open WebUI on :3000 / :8080 instead of Ollama's API on :11434: every path answers 200 with HTML.
    let requests = 0;
    const web = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => (requests++, new Response('<!doctype html><html><body>Open WebUI</body></html>', { headers: { 'content-type': 'text/html; charset=utf-8' } })),
    });
    try {
      const url = `http://127.0.0.1:${web.port}`;
      const openai = await runConch({ dirs: harness.dirs, args: ['--json', '--base-url', `${url}/v1`, '-m', 'qwen', 'go'] });
      expect(openai.code).toBe(1);
      const doc = JSON.parse(openai.stdout);
      expect(doc.code).toBe('provider_protocol');
      expect(doc.message).toContain('text/html');
      expect(doc.message).toContain(`${url}/v1/chat/completions`);
      expect(doc.message).toContain('base URL');
      expect(requests).toBe(1);
      const anthropic = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', 'go'], env: anthropicEnv(url) });
      expect(anthropic.code).toBe(1);
      expect(anthropic.stderr).toContain('text/html');
      expect(requests).toBe(2);
    } finally {
      await web.stop(true);
    }
  });
});
