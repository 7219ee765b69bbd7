// Plugins end to end: files dropped into the config folder become tools the model can call,
// through the real CLI, the real SDK and the local model server.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { anthropicEnv, makeDirs, runConch, type Sandbox } from '../support/cli.ts';

let server: ModelServer;
let dirs: Sandbox;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dirs = await makeDirs();
  server.requests.length = 0;
  await mkdir(toolsDir(), { recursive: true });
});
afterEach(() => dirs.cleanup());

const toolsDir = () => join(dirs.configHome, 'conch', 'tools');
const plugin = (name: string, source: string) => writeFile(join(toolsDir(), name), source);
const run = (args: string[]) =>
  runConch({ dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(server.anthropicBaseUrl) });
const resultOf = (request: number, index = 0) => JSON.stringify(server.requests[request]!.body.messages.at(-1).content[index]);

describe('plugins through the CLI', () => {
  test('a TypeBox plugin and a plain JSON Schema plugin are offered and called; a broken one is reported', async () => {
    await plugin('jira.ts', `
      import { defineTool, Type } from 'conch';
      export default defineTool({
        name: 'jira',
        description: 'Create or update Jira tickets',
        parameters: Type.Object({ action: Type.Union([Type.Literal('create'), Type.Literal('comment')]), ticket: Type.Optional(Type.String()) }),
        async execute({ action, ticket }) { return { success: true, action, ticket: ticket ?? 'PROJ-123' }; },
      });`);
    await plugin('weather.js', `
      export default {
        name: 'weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        execute: ({ city }) => 'sunny in ' + city,
      };`);
    await plugin('broken.ts', 'export default defineTool({ name: "broken", ');
    server.script([
      { toolCalls: [
        { name: 'jira', arguments: { action: 'create' } },
        { name: 'weather', arguments: { city: 'Oslo' } },
        { name: 'weather', arguments: { city: 'Oslo', units: 'metric' } },
      ] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const tools = server.requests[0]!.body.tools.map((t: any) => t.name);
    expect(tools).toContain('jira');
    expect(tools).toContain('weather');
    expect(tools).not.toContain('broken');
    expect(r.stderr).toContain(join(toolsDir(), 'broken.ts'));
    expect(resultOf(1, 0)).toContain('PROJ-123');
    expect(resultOf(1, 1)).toContain('sunny in Oslo');
    // The plain JSON Schema was closed: the unknown key is refused before execute runs.
    expect(resultOf(1, 2)).toContain("unknown field 'units'");
  });

  test('ctx.exec runs through the same sandbox as bash: protected and outside paths stay untouched', async () => {
    await mkdir(join(dirs.workspace, '.git'));
    await writeFile(join(dirs.workspace, '.git', 'config'), 'original');
    await plugin('shell.ts', `
      import { defineTool, Type } from 'conch';
      export default defineTool({
        name: 'shell_probe',
        description: 'runs a command through ctx.exec',
        parameters: Type.Object({ command: Type.String() }),
        async execute({ command }, ctx) {
          const r = await ctx.exec(command);
          return { exitCode: r.exitCode, output: r.output, denied: r.denied ?? null };
        },
      });`);
    const outside = join(dirs.home, 'outside.txt');
    server.script([
      { toolCalls: [
        { name: 'shell_probe', arguments: { command: 'echo pwned > .git/config' } },
        { name: 'shell_probe', arguments: { command: `echo pwned > ${outside}` } },
        { name: 'bash', arguments: { command: 'echo pwned > .git/config' } },
      ] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dirs.workspace, '.git', 'config'), 'utf8')).toBe('original');
    expect(existsSync(outside)).toBe(false);
    expect(resultOf(1, 0)).not.toContain('"exitCode":0');
    expect(resultOf(1, 1)).not.toContain('"exitCode":0');
  });

  test('with --no-shell, ctx.exec refuses like the missing bash tool', async () => {
    await plugin('shell.ts', `
      import { defineTool, Type } from 'conch';
      export default defineTool({
        name: 'shell_probe',
        description: 'runs a command through ctx.exec',
        parameters: Type.Object({ command: Type.String() }),
        async execute({ command }, ctx) {
          const r = await ctx.exec(command);
          return { exitCode: r.exitCode, denied: r.denied ?? null };
        },
      });`);
    server.script([{ toolCalls: [{ name: 'shell_probe', arguments: { command: 'touch made.txt' } }] }, { text: 'done' }]);
    const r = await run(['--no-shell', 'go']);
    expect(r.code).toBe(0);
    expect(resultOf(1)).toContain('no-shell');
    expect(existsSync(join(dirs.workspace, 'made.txt'))).toBe(false);
  });

  test('a plugin that hangs is abandoned at its deadline and the run goes on', async () => {
    await plugin('stuck.ts', `
      import { defineTool, Type } from 'conch';
      export default defineTool({
        name: 'stuck',
        description: 'never returns',
        parameters: Type.Object({}),
        timeoutMs: 300,
        execute: () => new Promise(() => {}),
      });`);
    server.script([{ toolCalls: [{ name: 'stuck', arguments: {} }] }, { text: 'moved on' }]);
    const r = await run(['--json', 'go']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).output).toBe('moved on');
    expect(resultOf(1)).toContain('abandoned');
  });

  test('--no-plugins loads none', async () => {
    await plugin('weather.js', `export default { name: 'weather', description: 'w', parameters: { type: 'object', properties: {} }, execute: () => 'x' };`);
    server.script([{ text: 'ok' }]);
    const r = await run(['--no-plugins', 'go']);
    expect(r.code).toBe(0);
    expect(server.requests[0]!.body.tools.map((t: any) => t.name)).not.toContain('weather');
  });
});
