// More tools than the provider takes (OpenAI's own API refuses a request with over 128 with a 400,
// which ended the run at its first model call): conch offers the kernel tools, plugins, then MCP
// tools in config and list order up to the limit, and names the rest in one warning line.
// Real CLI, real OpenAI SDK, the local model server, a raw JSON-RPC MCP server (mcp-hostile.ts).
import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { BUN, openaiEnv, REPO, runConch, useHarness, writeConfig } from '../support/cli.ts';
import { toolLimit } from '../../src/config/provider-config.ts';

const HOSTILE = join(REPO, 'test/support/mcp-hostile.ts');
const harness = useHarness();
const run = (args: string[]) => runConch({ dirs: harness.dirs, args: ['--model', 'openai/test-model', ...args], env: openaiEnv(harness.server.openaiBaseUrl) });
/** Server a: its 10 plain tools; server b: only t0 … t149. 4 + 10 + 150 = 164 tools. */
const servers = {
  a: { command: BUN, args: [HOSTILE, '--tools', 'plain'] },
  b: { command: BUN, args: [HOSTILE, '--tools', 'many'], env: { COUNT: '150' }, disabledTools: ['never', 'garbage', 'stderr_flood', 'progress_flood', 'ask_client', 'bogus_image', 'mislabeled_image', 'not_an_image', 'mislabeled_resource', 'empty_error'] },
};
const offered = (i = 0) => (harness.server.requests[i]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
const toolMessages = (i: number) => (harness.server.requests[i]!.body.messages as any[]).filter((m) => m.role === 'tool');

describe('more tools than the provider takes', () => {
  test('"maxTools": 128 offers the kernel tools, then MCP tools in config and list order up to 128; the rest are named in one warning and a call to one is refused', async () => {
    // OpenAI's own API (what "maxTools" defaults to 128 for) is played by the local server here.
    await writeConfig(harness.dirs, { providers: { openai: { type: 'openai', maxTools: 128 } }, mcpServers: servers });
    harness.server.script([{ toolCalls: [{ name: 'mcp__b__t149', arguments: {} }, { name: 'mcp__b__t113', arguments: {} }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const names = offered();
    expect(names.length).toBe(128);
    // The request lists them sorted by name (a stable prompt cache); which ones is what counts.
    expect(names).toEqual(expect.arrayContaining(['bash', 'read', 'write', 'edit']));
    expect(names.filter((n) => n.startsWith('mcp__a__')).length).toBe(10);
    expect(names.filter((n) => n.startsWith('mcp__b__')).sort()).toEqual(Array.from({ length: 114 }, (_, i) => `mcp__b__t${i}`).sort());
    const lines = r.stderr.split('\n').filter((l) => l.includes('tools are not offered'));
    expect(lines.length).toBe(1);
    expect(lines[0]).toContain('at most 128 tools');
    expect(lines[0]).toContain('36 tools are not offered');
    expect(lines[0]).toContain('mcp__b__t114');
    expect(lines[0]).toContain('"enabledTools"');
    // The dropped tool never reaches its server; the offered one does.
    const [dropped, kept] = toolMessages(1);
    expect(dropped.content).toContain("tool 'mcp__b__t149' is not available in this run");
    expect(dropped.content).not.toContain('called t149');
    expect(kept.content).toBe('called t113');
  }, 30_000);

  test('an OpenAI-compatible server by base URL gets every tool and no warning', async () => {
    await writeConfig(harness.dirs, { mcpServers: servers });
    harness.server.script([{ text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(offered().length).toBe(4 + 10 + 150);
    expect(r.stderr).not.toContain('not offered');
  }, 30_000);
});

describe('toolLimit', () => {
  const retry = { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 1 };
  test("128 for OpenAI's own API, none for a compatible server or Anthropic; maxTools decides over both", () => {
    expect(toolLimit({ type: 'openai', name: 'openai', model: 'm', retry })).toBe(128);
    expect(toolLimit({ type: 'openai', name: 'openai', model: 'm', retry, baseUrl: 'https://api.openai.com/v1' })).toBe(128);
    expect(toolLimit({ type: 'openai', name: 'local', model: 'm', retry, baseUrl: 'http://localhost:11434/v1' })).toBeUndefined();
    expect(toolLimit({ type: 'anthropic', name: 'anthropic', model: 'm', retry })).toBeUndefined();
    expect(toolLimit({ type: 'openai', name: 'gateway', model: 'm', retry, baseUrl: 'https://gw.example/v1', maxTools: 64 })).toBe(64);
  });
});
