// Prompt caching on the wire, through the real CLI and SDKs: Anthropic breakpoints on the stable
// prefix and on the conversation's ends, a byte-stable prefix across turns and runs, OpenAI's
// prompt_cache_key only where the server accepts it, and cache figures in the envelope.
import { describe, expect, test } from 'bun:test';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness } from '../support/cli.ts';
import type { RecordedRequest } from '../support/model-server.ts';

const harness = useHarness(async (dirs) => {
  await writeFile(join(dirs.workspace, 'a.txt'), 'alpha\n');
  await writeFile(join(dirs.workspace, 'b.txt'), 'beta\n');
});

const THREE_TURNS = [
  { toolCalls: [{ name: 'read', arguments: { path: 'a.txt' } }], usage: { input: 900, output: 20, cacheRead: 0, cacheWrite: 1500 } },
  { toolCalls: [{ name: 'read', arguments: { path: 'b.txt' } }], usage: { input: 40, output: 20, cacheRead: 1500, cacheWrite: 60 } },
  { text: 'both read', usage: { input: 30, output: 10, cacheRead: 1560, cacheWrite: 50 } },
];

const run = (env: Record<string, string>, args: string[] = []) =>
  runConch({ dirs: harness.dirs, args: ['--json', '--ephemeral', ...args, 'read a.txt then b.txt'], env });

/** Where cache_control sits: 'system', 'tool:NAME', 'message:I:BLOCK'. */
function breakpoints(body: any): string[] {
  const out: string[] = [];
  for (const b of Array.isArray(body.system) ? body.system : []) if (b.cache_control) out.push('system');
  for (const t of body.tools ?? []) if (t.cache_control) out.push(`tool:${t.name}`);
  body.messages.forEach((m: any, i: number) => {
    if (Array.isArray(m.content)) m.content.forEach((b: any, j: number) => b.cache_control && out.push(`message:${i}:${j}`));
  });
  return out;
}

const strip = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x) => (k === 'cache_control' ? undefined : x)));

describe('Anthropic prompt caching', () => {
  test('a 3-turn run: breakpoints on the system prompt, the previous request end and the latest turn; never more than 4', async () => {
    harness.server.script(THREE_TURNS);
    const r = await run(anthropicEnv(harness.server.anthropicBaseUrl));
    expect(r.code).toBe(0);
    const bodies = harness.server.requests.map((q) => q.body);
    expect(bodies).toHaveLength(3);
    expect(bodies.map(breakpoints)).toEqual([
      ['system', 'message:0:0'],
      ['system', 'message:0:0', 'message:2:0'],
      ['system', 'message:2:0', 'message:4:0'],
    ]);
    for (const b of bodies) {
      expect(b.system).toEqual([{ type: 'text', text: expect.any(String), cache_control: { type: 'ephemeral' } }]);
      expect(breakpoints(b).length).toBeLessThanOrEqual(4);
    }
    // Cache figures as reported, summed over the calls.
    const env = JSON.parse(r.stdout);
    expect(env.usage).toEqual({ inputTokens: 970, outputTokens: 50, cacheReadTokens: 3060, cacheWriteTokens: 1610 });
  });

  test("turn 2's prefix bytes equal turn 1's; tools and system are byte-identical across turns and runs", async () => {
    harness.server.script(THREE_TURNS);
    expect((await run(anthropicEnv(harness.server.anthropicBaseUrl))).code).toBe(0);
    harness.server.script([{ text: 'again' }]);
    expect((await run(anthropicEnv(harness.server.anthropicBaseUrl))).code).toBe(0);
    const bodies = harness.server.requests.map((q) => q.body);
    expect(bodies).toHaveLength(4);
    const prefix = (b: any) => JSON.stringify({ tools: b.tools, system: b.system });
    for (const b of bodies) expect(prefix(b)).toBe(prefix(bodies[0]));
    // The tools are sent in name order, whatever order they were registered in.
    const names = bodies[0].tools.map((t: any) => t.name);
    expect(names).toEqual([...names].sort());
    // Turn 2 starts with exactly the bytes turn 1 sent (breakpoint included).
    const [t1, t2, t3] = bodies;
    expect(JSON.stringify(t2.messages.slice(0, t1.messages.length))).toBe(JSON.stringify(t1.messages));
    // Turn 3 repeats turn 2's conversation; only the moved breakpoint differs.
    expect(JSON.stringify(strip(t3.messages.slice(0, t2.messages.length)))).toBe(JSON.stringify(strip(t2.messages)));
  });
});

describe('OpenAI prompt_cache_key', () => {
  test('one stable key for every request of a run', async () => {
    harness.server.script(THREE_TURNS);
    const r = await run(openaiEnv(harness.server.openaiBaseUrl));
    expect(r.code).toBe(0);
    const keys = harness.server.requests.map((q) => q.body.prompt_cache_key);
    expect(keys).toHaveLength(3);
    expect(typeof keys[0]).toBe('string');
    expect(new Set(keys).size).toBe(1);
  });

  test('a server that rejects the field: one 400, then the run goes on without it, saying so once', async () => {
    const answers = [...THREE_TURNS];
    harness.server.script((req: RecordedRequest) =>
      'prompt_cache_key' in req.body
        ? { error: { status: 400, message: "Unrecognized request argument supplied: prompt_cache_key" } }
        : answers.shift()!,
    );
    const r = await runConch({ dirs: harness.dirs, args: ['--ephemeral', 'read a.txt then b.txt'], env: openaiEnv(harness.server.openaiBaseUrl) });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('both read');
    const sent = harness.server.requests.map((q) => 'prompt_cache_key' in q.body);
    expect(sent).toEqual([true, false, false, false]);
    expect(r.stderr.match(/rejected the request field "prompt_cache_key"/g)).toHaveLength(1);
  });

  test('a 400 about anything else is not retried without fields', async () => {
    harness.server.script([{ error: { status: 400, message: 'messages: too long' } }]);
    const r = await run(openaiEnv(harness.server.openaiBaseUrl));
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).code).toBe('provider_rejected');
    expect(harness.server.requests).toHaveLength(1);
  });
});
