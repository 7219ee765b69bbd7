// Issue 14 through the real CLI and the local model server: what the model is told when the network
// allowlist refuses a host or a credential location is hidden.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness } from '../support/cli.ts';
import { canRun } from '../sandbox/harness.ts';

const harness = useHarness();
let a: ReturnType<typeof Bun.serve>;
let b: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  a = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('from A\n') });
  b = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('from B\n') });
});
afterAll(() => {
  a.stop(true);
  b.stop(true);
});

function toolResults(body: any): string {
  const out: string[] = [];
  for (const m of body.messages ?? []) if (m.role === 'user' && Array.isArray(m.content)) for (const c of m.content) if (c.type === 'tool_result') out.push(JSON.stringify(c.content));
  return out.join('\n');
}

const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });

describe.skipIf(!canRun)('sandbox policy the model sees', () => {
  test('--allow-net: the allowed host answers, the other gets 403 and the tool result names the rule', async () => {
    const command = `curl -sS --noproxy "" http://127.0.0.1:${a.port}/; curl -sS --noproxy "" http://127.0.0.1:${b.port}/`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'done' }]);
    const r = await run(['--json', '--allow-net', `127.0.0.1:${a.port}`, 'fetch both']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).sandbox).toBe('bwrap, network allowlist (1)');
    const seen = toolResults(harness.server.requests[1]!.body);
    expect(seen).toContain('from A');
    expect(seen).not.toContain('from B');
    expect(seen).toContain(`[network: 127.0.0.1:${b.port} denied by the network allowlist`);
    expect(JSON.stringify(harness.server.requests[0]!.body.system)).toContain(`network limited to 127.0.0.1:${a.port}`);
  });

  test('a toolchain cache that cannot be made (a home nobody may write): commands run without it, and one line says why and what to set', async () => {
    const blocked = join(harness.dirs.home, 'not-a-dir');
    await writeFile(blocked, 'a file where the cache directory would be\n');
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo ran; echo "cache=${npm_config_cache:-none}"' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo again' } }] },
      { text: 'done' },
    ]);
    const r = await runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', '--ephemeral', 'go'], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), XDG_CACHE_HOME: blocked } });
    expect(r.code).toBe(0);
    const warning = `conch: cannot create the toolchain cache for shell commands, ${join(blocked, 'conch', 'sandbox')} (a file is in the way): set XDG_CACHE_HOME to a directory you can write. Shell commands run without it`;
    expect(r.stderr).toContain(warning);
    expect(r.stderr.split(warning)).toHaveLength(2);
    const results = toolResults(harness.server.requests.at(-1)!.body);
    expect(results).toContain('ran\\ncache=none');
    expect(results).toContain('again');
    expect(results).not.toContain('could not run');
  });

  test('a credential location: the read tool refuses it naming the rule', async () => {
    await mkdir(join(harness.dirs.home, '.aws'), { recursive: true });
    await writeFile(join(harness.dirs.home, '.aws', 'credentials'), 'AWS-SECRET\n');
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: join(harness.dirs.home, '.aws', 'credentials') } }] }, { text: 'done' }]);
    const r = await run(['read it']);
    expect(r.code).toBe(0);
    const seen = toolResults(harness.server.requests[1]!.body);
    expect(seen).not.toContain('AWS-SECRET');
    expect(seen).toContain('hidden by policy');
    expect(seen).toContain('read.secret:aws');
  });

  test("--allow-write DIR: neither bash nor the write tool can create DIR's absent .git/hooks or .env; DIR keeps only what was allowed", async () => {
    const extra = join(harness.dirs.home, 'sibling');
    await mkdir(extra);
    const command = `mkdir -p ${extra}/.git/hooks && echo evil > ${extra}/.git/hooks/pre-commit && echo WROTE; echo T=1 > ${extra}/.env && echo WROTE; echo ok > ${extra}/f`;
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command } }] },
      { toolCalls: [{ name: 'write', arguments: { path: join(extra, '.git/hooks/post-checkout'), content: 'evil' } }] },
      { text: 'done' },
    ]);
    const r = await run(['--allow-write', extra, 'go']);
    expect(r.code).toBe(0);
    expect(toolResults(harness.server.requests[1]!.body)).not.toContain('WROTE');
    expect(toolResults(harness.server.requests[2]!.body)).toContain('is protected');
    expect(readdirSync(extra)).toEqual(['f']);
  });
});
