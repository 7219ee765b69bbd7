// AGENTS.md through the real CLI: run in a monorepo's package, the model server receives the
// guidance of the repository root, then of each folder down to the working directory, and never a
// denied file an AGENTS.md links to.
import { describe, expect, test } from 'bun:test';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, openaiEnv, runConch, useHarness, writeConfig, type Sandbox } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await writeConfig(d, { read: { denySecretFiles: true } });
  // The harness's workspace is the repository; the run happens two folders down in it.
  await mkdir(join(d.workspace, '.git'));
  await mkdir(join(d.workspace, 'packages', 'api'), { recursive: true });
  await writeFile(join(d.workspace, '..', 'AGENTS.md'), 'Above the repository: never sent.\n');
  await writeFile(join(d.workspace, 'AGENTS.md'), 'Root guidance: use pnpm.\n');
  await writeFile(join(d.workspace, 'packages', 'AGENTS.md'), 'Packages guidance: one package per folder.\n');
});

const protocols = [
  { name: 'anthropic', model: 'anthropic/test-model', env: () => anthropicEnv(harness.server.anthropicBaseUrl) },
  { name: 'openai', model: 'openai/test-model', env: () => openaiEnv(harness.server.openaiBaseUrl) },
] as const;

function systemOf(body: any): string {
  if (typeof body.system === 'string') return body.system;
  if (Array.isArray(body.system)) return body.system.map((b: any) => b.text).join('\n');
  const sys = (body.messages ?? []).find((m: any) => m.role === 'system' || m.role === 'developer');
  return typeof sys?.content === 'string' ? sys.content : JSON.stringify(sys?.content ?? '');
}

for (const p of protocols) {
  describe(`AGENTS.md over ${p.name}`, () => {
    const inApi = (): Sandbox => ({ ...harness.dirs, workspace: join(harness.dirs.workspace, 'packages', 'api') });
    const run = (args: string[]) => runConch({ dirs: inApi(), args: ['--model', p.model, ...args], env: p.env() });

    test('from the repository root down to the working directory, in that order, labelled from it', async () => {
      await writeFile(join(inApi().workspace, 'AGENTS.md'), 'API guidance: never touch the schema.\n');
      harness.server.script([{ text: 'ok' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      const system = systemOf(harness.server.requests[0]!.body);
      const at = ['# Guidance from ../../AGENTS.md', 'Root guidance: use pnpm.', '# Guidance from ../AGENTS.md', 'Packages guidance', '# Guidance from AGENTS.md', 'API guidance'].map((s) =>
        system.indexOf(s),
      );
      expect(at.every((i) => i >= 0)).toBe(true);
      expect([...at].sort((a, b) => a - b)).toEqual(at);
      expect(system).not.toContain('Above the repository');
    });

    test('a nested AGENTS.md linking to a denied .env in the repository is not sent', async () => {
      await writeFile(join(harness.dirs.workspace, '.env'), 'API_TOKEN=hunter2-very-secret\n');
      await symlink('../../.env', join(inApi().workspace, 'AGENTS.md'));
      harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: 'AGENTS.md' } }] }, { text: 'done' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      // The read tool refuses the same file (so the policy does deny it) ...
      expect(JSON.stringify(harness.server.requests[1]!.body.messages.at(-1))).toContain('read.deny');
      // ... and the system prompt carries the rest of the chain but not its bytes.
      const system = systemOf(harness.server.requests[0]!.body);
      expect(system).toContain('Root guidance: use pnpm.');
      expect(system).toContain('Packages guidance');
      expect(system).not.toContain('hunter2');
    });
  });
}
