// The README's "Embedding" example, run the way a user's project runs it: its own package directory
// that depends on conch by path (node_modules/conch is a link to this checkout, as `npm install
// ../conch` makes it), a separate Bun process, and the local model server as the provider.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUN, REPO } from '../support/cli.ts';
import { startModelServer, type ModelServer } from '../support/model-server.ts';

/** The first ```ts block under the README's "## Embedding" heading. */
async function readmeExample(): Promise<string> {
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Embedding'));
  const code = section?.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code) throw new Error('README.md has no ```ts block under "## Embedding"');
  return code;
}

let server: ModelServer;
let base: string;

beforeAll(async () => {
  server = await startModelServer();
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-embed-')));
});
afterAll(async () => {
  await server.close();
  await rm(base, { recursive: true, force: true });
});

describe('embedding (README example)', () => {
  test('runs a task from TypeScript in a project that depends on conch by path: streamed text, a tool call, the outcome', async () => {
    const project = join(base, 'my-app');
    const home = join(base, 'home');
    await mkdir(join(project, 'node_modules'), { recursive: true });
    await mkdir(join(home, '.config', 'conch'), { recursive: true });
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'my-app', type: 'module', dependencies: { conch: `file:${REPO}` } }));
    await symlink(REPO, join(project, 'node_modules', 'conch'));
    await writeFile(join(project, 'run.ts'), await readmeExample());
    await writeFile(join(project, 'notes.txt'), 'hello\n');
    server.script([
      { toolCalls: [{ name: 'read', arguments: { path: 'notes.txt' } }] },
      { text: 'There are three files here.' },
    ]);

    const child = Bun.spawn([BUN, 'run.ts'], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: process.env.TMPDIR ?? tmpdir(), MODEL_URL: server.openaiBaseUrl, MODEL: 'test-model' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);

    expect({ code, stderr }).toEqual({ code: 0, stderr: '[read]\n' });
    expect(stdout).toBe('There are three files here.\ncompleted after 1 tool calls\n');
    // The tool really ran in that project: its result went back to the model.
    expect(JSON.stringify(server.requests[1]!.body)).toContain('hello');
  });
});
