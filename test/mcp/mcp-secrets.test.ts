// An MCP server's env and header values (API tokens, Authorization headers) are as secret as the
// provider key: neither a --trace-content trace nor the session file holds them, wherever they show up
// (a server that reports its environment, a model that quotes a token in a call's arguments).
import { describe, expect, test } from 'bun:test';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { anthropicEnv, BUN, runConch, useHarness, writeConfig } from '../support/cli.ts';
import { everything, EVERYTHING, httpEverything } from './harness.ts';

const harness = useHarness();
const TOKEN = 'mcp-tok-9d41be07c3a2';
const run = (args: string[], env: Record<string, string>) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), ...env } });

/** Every file under `dir` (the session store lives under HOME), read as text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((rel) => join(dir, rel))
    .filter((path) => lstatSync(path).isFile())
    .map((path) => ({ path, text: readFileSync(path, 'utf8') }));
}

function expectNowhere(trace: string, marker: string) {
  const text = readFileSync(trace, 'utf8');
  expect(text).toContain(`[redacted ${marker}]`);
  expect(text).not.toContain(TOKEN);
  const sessions = filesUnder(harness.dirs.home).filter((f) => f.path.endsWith('.jsonl') && f.path !== trace);
  expect(sessions.length).toBeGreaterThan(0);
  for (const file of sessions) expect(file.text).not.toContain(TOKEN);
}

describe("MCP servers' secrets stay out of traces and sessions", () => {
  test('a stdio server env value (from ${VAR}) that the server reports back', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID(), { env: { API_TOKEN: '${MY_TOKEN}' } }) } });
    harness.server.script([{ toolCalls: [{ name: 'mcp__everything__get-env', arguments: {} }] }, { text: 'done' }]);
    const trace = join(harness.dirs.home, 'trace.jsonl');
    const r = await run(['--trace', trace, '--trace-content', 'go'], { MY_TOKEN: TOKEN });
    expect(r.code).toBe(0);
    // The model got it (the tool result is the model's business), the files did not.
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain(TOKEN);
    expectNowhere(trace, 'MCP server everything env API_TOKEN');
  });

  test('an HTTP server Authorization header, and the bare token of it that the model quotes', async () => {
    const http = await httpEverything();
    try {
      await writeConfig(harness.dirs, { mcpServers: { web: { url: http.url, headers: { Authorization: `Bearer ${TOKEN}` } } } });
      harness.server.script([{ toolCalls: [{ name: 'mcp__web__echo', arguments: { message: `my token is ${TOKEN}` } }] }, { text: `it was ${TOKEN}` }]);
      const trace = join(harness.dirs.home, 'trace.jsonl');
      const r = await run(['--trace', trace, '--trace-content', 'go'], {});
      expect(r.code).toBe(0);
      expectNowhere(trace, 'MCP server web header Authorization');
    } finally {
      await http.stop();
    }
  });
});
