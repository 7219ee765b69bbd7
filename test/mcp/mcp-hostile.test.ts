// A misbehaving MCP server (test/support/mcp-hostile.ts, raw JSON-RPC) against the real CLI, the
// real SDK on conch's side and the local model server: what it sends must not end or flood the run.
import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { anthropicEnv, BUN, REPO, runConch, useHarness, writeConfig } from '../support/cli.ts';

const HOSTILE = join(REPO, 'test/support/mcp-hostile.ts');
const HOSTILE_HTTP = join(REPO, 'test/support/mcp-hostile-http.ts');
const harness = useHarness();
const run = (args: string[]) => runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const hostile = (tools = 'plain', extra: Record<string, unknown> = {}) => writeConfig(harness.dirs, { mcpServers: { h: { command: BUN, args: [HOSTILE, '--tools', tools], ...extra } } });
const call = (...names: string[]) => harness.server.script([{ toolCalls: names.map((name) => ({ name: `mcp__h__${name}`, arguments: {} })) }, { text: 'done' }]);
/** The tool_result blocks of the i-th request's last message. */
const results = (i: number) => harness.server.requests[i]!.body.messages.at(-1).content as any[];

describe('a hostile MCP server', () => {
  test('a flood of progress notifications reaches the trace throttled, and the call still ends at toolTimeoutMs', async () => {
    // Thousands a second, each 10 kB: every one became an event (a trace line, an editor update).
    await hostile('plain', { toolTimeoutMs: 2000 });
    call('progress_flood');
    const trace = join(harness.dirs.home, 'trace.jsonl');
    const r = await run(['--trace', trace, '--trace-content', 'go']);
    expect(r.code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain('2000 ms');
    const updates = readFileSync(trace, 'utf8').split('\n').filter((l) => l.includes('"tool.updated"')).map((l) => JSON.parse(l));
    expect(updates.length).toBeGreaterThan(0);
    expect(updates.length).toBeLessThan(100);
    // The first 4096 characters of the message, then its count.
    for (const u of updates) expect(u.text.length).toBeLessThan(4096 + 32);
  }, 30_000);

  test('an image labelled with a type its bytes are not is sent as what it is; bytes that are no image are named in text; data that is no base64 is a one-line tool error', async () => {
    // A JPEG sent as image/png, or text sent as an image, makes the provider refuse the whole next request (a 400 ends the run).
    await hostile();
    call('mislabeled_image', 'mislabeled_resource', 'not_an_image', 'bogus_image');
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const [mislabeled, resource, notImage, bogus] = results(1);
    expect(mislabeled.content).toEqual([{ type: 'image', source: expect.objectContaining({ media_type: 'image/jpeg' }) }]);
    expect(resource.content.find((b: any) => b.type === 'image').source.media_type).toBe('image/jpeg');
    expect(notImage.content.some((b: any) => b.type === 'image')).toBe(false);
    expect(JSON.stringify(notImage.content)).toContain('an image of type image/png');
    expect(JSON.stringify(notImage.content)).toContain('not shown');
    // Refused by the SDK: a tool error in one line, not a dump of its validation issues.
    expect(bogus.is_error).toBe(true);
    expect(bogus.content[0].text).toBe("tool 'mcp__h__bogus_image' failed: the MCP server h answered bogus_image with a result that is not valid MCP (content.0.data: Invalid Base64 string)");
  }, 30_000);

  test("a tool with an invalid inputSchema is refused by name and why; the server's other tools are offered", async () => {
    // One such tool failed the whole tools/list, and the server, with a dump of the SDK's validation issues.
    await hostile('badschema');
    call('empty_error');
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const offered = (harness.server.requests[0]!.body.tools as { name: string }[]).map((t) => t.name);
    expect(offered).toContain('mcp__h__empty_error');
    expect(offered).not.toContain('mcp__h__bad');
    expect(offered).not.toContain('mcp__h__nots');
    expect(r.stderr).toContain('MCP server h: tools not offered:');
    expect(r.stderr).toContain('tool "bad": inputSchema.type');
    expect(r.stderr).toContain('tool "nots": inputSchema');
    expect(r.stderr).not.toContain('"code"');
  }, 30_000);

  test('tools whose names read the same once made provider-safe (a.b and a_b, or the same first 64 characters) are all offered, apart, and each call reaches its own', async () => {
    // The second of each pair was dropped with a hint about plugins.allowOverride.
    await hostile('lookalike');
    harness.server.script([{ text: 'listed' }]);
    const listed = await run(['go']);
    expect(listed.code).toBe(0);
    expect(listed.stderr).not.toContain('allowOverride');
    const names = (harness.server.requests[0]!.body.tools as { name: string }[]).map((t) => t.name).filter((n) => /^mcp__h__(a_b|x)/.test(n));
    expect(names.length).toBe(4);
    expect(new Set(names).size).toBe(4);
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(listed.stderr).toContain('MCP server h: tool "a_b" is offered as mcp__h__a_b_');
    harness.server.script([{ toolCalls: names.map((name) => ({ name, arguments: {} })) }, { text: 'done' }]);
    expect((await run(['go'])).code).toBe(0);
    const answers = results(2).map((r) => r.content[0].text).sort();
    expect(answers).toEqual(['called a.b', 'called a_b', `called ${'x'.repeat(70)}1`, `called ${'x'.repeat(70)}2`]);
  }, 30_000);

  test('a tool list past toolListBytes (five 8 MB pages, or pages without end) is cut there, saying so; the run goes on with the first tools', async () => {
    // Five pages were 42 MB of definitions: the first request was over context_bytes and the run
    // ended (limit_exceeded) before any model call; pages without end grew conch by gigabytes until startupTimeoutMs.
    for (const pages of [{ PAGES: '5' }, {}]) {
      harness.server.requests.length = 0;
      await hostile('paged', { env: pages });
      call('empty_error');
      const r = await run(['go']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('MCP server h: tools not offered: its tool list is over 4194304 bytes (toolListBytes); pick the tools you need with enabledTools');
      expect(results(1)[0].content[0].text).toBe('(the tool returned no content)');
    }
  }, 60_000);

  test('a schema nested thousands deep is refused by name, the server\'s other tools are offered and called', async () => {
    // Measuring or checking it overflowed the stack: the server did not start, saying only "Maximum call stack size exceeded".
    await hostile('deep', { env: { DEPTH: '100000' } });
    call('empty_error');
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('MCP server h: tools not offered: tool "deep": inputSchema is nested more than 128 levels deep');
    expect(results(1)[0].content[0].text).toBe('(the tool returned no content)');
  }, 30_000);

  test('a call to a tool whose schema refers to itself without end ($ref a → b → a) is a tool error; the run goes on', async () => {
    // Checking the arguments overflowed the stack: the run failed (internal error) at the first such call.
    await hostile('refcycle');
    harness.server.script([
      { toolCalls: [{ name: 'mcp__h__cycle', arguments: { a: 1 } }] },
      { toolCalls: [{ name: 'mcp__h__empty_error', arguments: {} }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain("the parameters schema of 'mcp__h__cycle' cannot be checked");
    expect(results(2)[0].content[0].text).toBe('(the tool returned no content)');
  }, 30_000);

  for (const sse of ['0', '1']) {
    test(`over HTTP (${sse === '1' ? 'an SSE event' : 'a JSON body'}): an answer over the 10 MiB a server may send fails that call, and the server answers the next one`, async () => {
      // conch read all of it: a 300 MB answer held 1.9 GB; over stdio the same answer fails at 10 MiB.
      const server = Bun.spawn([BUN, HOSTILE_HTTP], { stdout: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SSE: sse } });
      try {
        const { value } = await server.stdout.getReader().read();
        const port = new TextDecoder().decode(value).trim();
        await writeConfig(harness.dirs, { mcpServers: { h: { url: `http://127.0.0.1:${port}/mcp`, toolTimeoutMs: 20_000 } } });
        harness.server.script([
          { toolCalls: [{ name: 'mcp__h__big', arguments: { mb: 20 } }] },
          { toolCalls: [{ name: 'mcp__h__big', arguments: { mb: 0 } }] },
          { text: 'done' },
        ]);
        const r = await run(['go']);
        expect(r.code).toBe(0);
        expect(results(1)[0].is_error).toBe(true);
        expect(JSON.stringify(results(1)[0].content)).toContain('longer than 10 MiB');
        expect(results(2)[0].is_error).toBeFalsy();
      } finally {
        server.kill();
        await server.exited;
      }
    }, 60_000);
  }
});
