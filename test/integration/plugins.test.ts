// Plugins end to end: files dropped into the config folder become tools the model can call,
// through the real CLI, the real SDK and the local model server.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, CONCH, conchEnv, runConch, useHarness } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.configHome, 'conch', 'tools'), { recursive: true });
});

const toolsDir = () => join(harness.dirs.configHome, 'conch', 'tools');
const plugin = (name: string, source: string) => writeFile(join(toolsDir(), name), source);
const run = (args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const resultOf = (request: number, index = 0) => JSON.stringify(harness.server.requests[request]!.body.messages.at(-1).content[index]);

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
    harness.server.script([
      { toolCalls: [
        { name: 'jira', arguments: { action: 'create' } },
        { name: 'weather', arguments: { city: 'Oslo' } },
        { name: 'weather', arguments: { city: 'Oslo', units: 'metric' } },
      ] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const tools = harness.server.requests[0]!.body.tools.map((t: any) => t.name);
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
    await mkdir(join(harness.dirs.workspace, '.git'));
    await writeFile(join(harness.dirs.workspace, '.git', 'config'), 'original');
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
    const outside = join(harness.dirs.home, 'outside.txt');
    harness.server.script([
      { toolCalls: [
        { name: 'shell_probe', arguments: { command: 'echo pwned > .git/config' } },
        { name: 'shell_probe', arguments: { command: `echo pwned > ${outside}` } },
        { name: 'bash', arguments: { command: 'echo pwned > .git/config' } },
      ] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(readFileSync(join(harness.dirs.workspace, '.git', 'config'), 'utf8')).toBe('original');
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
    harness.server.script([{ toolCalls: [{ name: 'shell_probe', arguments: { command: 'touch made.txt' } }] }, { text: 'done' }]);
    const r = await run(['--no-shell', 'go']);
    expect(r.code).toBe(0);
    expect(resultOf(1)).toContain('no-shell');
    expect(existsSync(join(harness.dirs.workspace, 'made.txt'))).toBe(false);
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
    harness.server.script([{ toolCalls: [{ name: 'stuck', arguments: {} }] }, { text: 'moved on' }]);
    const r = await run(['--json', 'go']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).output).toBe('moved on');
    expect(resultOf(1)).toContain('abandoned');
  });

  test('odd values a plugin throws or returns are tool results, never the end of the run or a request the API refuses', async () => {
    await plugin('odd.ts', `
      import { defineTool, Type } from 'conch';
      const tool = (name, execute) => defineTool({ name, description: name, parameters: Type.Object({}), execute });
      export default [
        tool('throws_bare', () => { throw Object.create(null); }),
        tool('throws_odd', () => { throw { toString() { throw new Error('no text'); } }; }),
        tool('returns_fn', () => () => 1),
        tool('returns_symbol', () => Symbol('s')),
      ];`);
    await plugin('bad-import.ts', 'throw Object.create(null);');
    harness.server.script([
      { toolCalls: ['throws_bare', 'throws_odd', 'returns_fn', 'returns_symbol'].map((name) => ({ name, arguments: {} })) },
      { text: 'still here' },
    ]);
    const r = await run(['--json', 'go']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).output).toBe('still here');
    expect(r.stderr).toContain(join(toolsDir(), 'bad-import.ts'));
    expect(r.stderr).toContain('a value that cannot be shown as text');
    const results = harness.server.requests[1]!.body.messages.at(-1).content as any[];
    expect(results.map((b) => b.is_error)).toEqual([true, true, false, false]);
    expect(JSON.stringify(results[0].content)).toContain('cannot be shown as text');
    for (const block of results.flatMap((b) => b.content)) expect(typeof block.text).toBe('string');
    expect(JSON.stringify(results[2].content)).toContain('returned a function');
  });

  test('a plugin that throws: the model gets the tool error, the author one stderr line with file:line:col of the throw in their source', async () => {
    // Types and odd spacing before the throw on the same line: the transpiled column differs from the source's.
    const lines = [
      `import { defineTool, Type } from 'conch';`,
      `type Ticket = { id: string };`,
      `function lookup(id: string): Ticket {  const found: Ticket | undefined = undefined;   if (!found) throw new Error('no ticket ' + id); return found; }`,
      `export default defineTool({ name: 'ticket', description: 'd', parameters: Type.Object({ id: Type.String() }),`,
      `  async execute({ id }) { return lookup(id); } });`,
    ];
    await plugin('ticket.ts', lines.join('\n'));
    await mkdir(join(harness.dirs.workspace, '.conch', 'tools'), { recursive: true });
    const projectPlugin = join(harness.dirs.workspace, '.conch', 'tools', 'proj.js');
    await writeFile(projectPlugin, `export default {\n  name: 'proj', description: 'd', parameters: { type: 'object' },\n  execute() { const a = 1;   throw new RangeError('out of range'); },\n};\n`);
    harness.server.script([
      { toolCalls: [{ name: 'ticket', arguments: { id: 'T-1' } }, { name: 'proj', arguments: {} }] },
      { text: 'handled' },
    ]);
    const r = await run(['--json', '--project-tools', 'go']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).output).toBe('handled');
    expect(r.stdout).not.toContain('threw');
    const results = harness.server.requests[1]!.body.messages.at(-1).content as any[];
    expect(results.map((b) => b.is_error)).toEqual([true, true]);
    expect(JSON.stringify(results[0].content)).toContain('no ticket T-1');
    expect(JSON.stringify(results[0].content)).not.toContain('.ts:');
    const column = lines[2]!.indexOf('new Error') + 1;
    expect(r.stderr).toContain(`conch: tool 'ticket' threw at ${join(toolsDir(), 'ticket.ts')}:3:${column}: no ticket T-1\n`);
    // A project plugin runs from a private copy; the line names the workspace's file.
    const projColumn = "  execute() { const a = 1;   throw new RangeError('out of range'); },".indexOf('new RangeError') + 1;
    expect(r.stderr).toContain(`conch: tool 'proj' threw at ${projectPlugin}:3:${projColumn}: out of range\n`);
    expect(r.stderr).not.toContain('    at ');
  });

  test("a plugin's prints go to stderr under its name: --json stays one document, a piped answer stays the answer", async () => {
    await plugin('noisy.ts', `
      import { defineTool, Type } from 'conch';
      console.log('loading noisy');
      console.info('import-time info');
      export default defineTool({
        name: 'noisy',
        description: 'prints a lot',
        parameters: Type.Object({}),
        async execute() {
          console.log('log in execute', { n: 1 });
          console.info('info in execute');
          console.dir({ dir: true });
          console.log('two\\nlines');
          await new Promise((r) => setTimeout(r, 5));
          console.log('after a timer');
          return 'noisy done';
        },
      });`);
    const script = () => harness.server.script([{ toolCalls: [{ name: 'noisy', arguments: {} }] }, { text: 'the answer' }]);
    script();
    const json = await run(['--json', 'go']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'completed', output: 'the answer' });
    for (const line of ['[noisy] loading noisy', '[noisy] import-time info', "[noisy] log in execute { n: 1 }", '[noisy] info in execute', '[noisy] { dir: true }', '[noisy] two\n[noisy] lines', '[noisy] after a timer']) {
      expect(json.stderr).toContain(`${line}\n`);
    }
    script();
    const piped = await run(['go']);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe('the answer\n');
    expect(piped.stderr).toContain('[noisy] log in execute');
  });

  test("a plugin's process.stdout.write goes to stderr too: conch --json and conch tools --json print one document", async () => {
    await plugin('writer.ts', `
      import { defineTool, Type } from 'conch';
      process.stdout.write('written at import\\n');
      console.log('logged at import');
      export default defineTool({
        name: 'writer',
        description: 'writes to stdout directly',
        parameters: Type.Object({}),
        async execute() {
          process.stdout.write('half a ');
          process.stdout.write(new TextEncoder().encode('line\\nand more\\n'));
          await new Promise((r) => process.stdout.write('with a callback\\n', r));
          console.log('logged in execute');
          return 'written';
        },
      });`);
    harness.server.script([{ toolCalls: [{ name: 'writer', arguments: {} }] }, { text: 'the answer' }]);
    const json = await run(['--json', 'go']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'completed', output: 'the answer' });
    expect(resultOf(1)).toContain('written');
    for (const line of ['[writer] written at import', '[writer] logged at import', '[writer] half a line\n[writer] and more', '[writer] with a callback', '[writer] logged in execute']) {
      expect(json.stderr).toContain(`${line}\n`);
    }
    const tools = await runConch({ dirs: harness.dirs, args: ['tools', '--json'], env: {} });
    expect(tools.code).toBe(0);
    expect(JSON.parse(tools.stdout).tools.map((t: { name: string }) => t.name)).toContain('writer');
    expect(tools.stderr).toContain('[writer] written at import\n');
    // Bun's stdout stream made the pipe non-blocking; conch puts it back for whoever writes next.
    const shell = Bun.spawnSync(['sh', '-c', `"${CONCH}" tools --json; grep flags /proc/self/fdinfo/1`], { cwd: harness.dirs.workspace, env: conchEnv(harness.dirs), stderr: 'pipe' });
    const flags = Number.parseInt(shell.stdout.toString().trim().split('\n').at(-1)!.replace('flags:', '').trim(), 8);
    expect(flags & 0o4000).toBe(0);
  });

  test("what a plugin logs when its signal fires goes to stderr under its name, and a console line after a half-written one starts its own", async () => {
    await plugin('waiter.ts', `
      import { defineTool, Type } from 'conch';
      export default defineTool({
        name: 'waiter',
        description: 'waits for its signal',
        parameters: Type.Object({}),
        async execute(_args, ctx) {
          process.stdout.write('half a line');
          console.error('then a console line');
          return await new Promise((resolve) => {
            ctx.signal.addEventListener('abort', () => { console.log('stopping:', String(ctx.signal.reason)); resolve('stopped'); });
          });
        },
      });`);
    harness.server.script([{ toolCalls: [{ name: 'waiter', arguments: {} }] }, { text: 'the answer' }]);
    const json = await run(['--json', '--limit', 'tool_timeout_ms=300', 'go']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 'completed', output: 'the answer' });
    expect(json.stderr).toContain('[waiter] half a line\n[waiter] then a console line\n');
    expect(json.stderr).toContain('[waiter] stopping: Error: tool deadline of 300 ms passed\n');
    expect(resultOf(1)).toContain('stopped');
  });

  test('an image result reaches the model as an image; a result whose blocks are misspelt is a tool error naming the fix', async () => {
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    await plugin('shots.ts', `
      import { defineTool, Type } from 'conch';
      const png = '${png}';
      const tool = (name, content) => defineTool({ name, description: name, parameters: Type.Object({}), async execute() { return { content }; } });
      export default [
        tool('shot', [{ type: 'image', mediaType: 'image/png', data: png }]),
        // MCP's spelling: it was sent to the model as JSON text, the base64 with it, and no error.
        tool('mcp_style', [{ type: 'image', mimeType: 'image/png', data: png }, { type: 'text', text: 'a pixel' }]),
        tool('numeric', [{ type: 'text', text: 42 }]),
      ];`);
    harness.server.script([
      { toolCalls: [{ name: 'shot', arguments: {} }, { name: 'mcp_style', arguments: {} }, { name: 'numeric', arguments: {} }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const [shot, misspelt, numeric] = harness.server.requests[1]!.body.messages.at(-1).content;
    expect(shot.is_error).toBeFalsy();
    expect(shot.content).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }]);
    expect(misspelt.is_error).toBe(true);
    expect(JSON.stringify(misspelt.content)).not.toContain(png);
    expect(JSON.stringify(misspelt.content)).toContain("tool 'mcp_style' failed: its result is malformed: content[0] is an image block without a string mediaType (it has mimeType)");
    expect(JSON.stringify(misspelt.content)).toContain("{ type: 'image', mediaType: 'image/png', data: '<base64>' }");
    expect(numeric.is_error).toBe(true);
    expect(JSON.stringify(numeric.content)).toContain('content[0] is a text block whose text is a number, not a string');
  });

  test('a JSON Schema type that is not one (a typo) fails that plugin naming the key; "type" as a property name or in a default is fine', async () => {
    // Accepted, it validated nothing for that field, and a provider refuses the whole request over it.
    await plugin('typo.js', `
      export default {
        name: 'typo', description: 'd',
        parameters: { type: 'object', properties: { a: { type: 'object', properties: { n: { type: ['strin', 'null'] } } } } },
        execute: () => 'x',
      };`);
    await plugin('issue.js', `
      export default {
        name: 'issue', description: 'd',
        parameters: { type: 'object', properties: { type: { type: 'string', enum: ['bug'] }, meta: { type: 'object', default: { type: 'bug' }, examples: [{ type: 'task' }] } } },
        execute: () => 'x',
      };`);
    const r = await runConch({ dirs: harness.dirs, args: ['tools'] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`tool 'typo': parameters.properties.a.properties.n.type has "strin", which is not a JSON Schema type (string, number, integer, boolean, object, array, null)`);
    expect(r.stdout).toMatch(/loaded +\S*issue\.js +\(issue\)/);
  });

  test('--no-plugins loads none', async () => {
    await plugin('weather.js', `export default { name: 'weather', description: 'w', parameters: { type: 'object', properties: {} }, execute: () => 'x' };`);
    harness.server.script([{ text: 'ok' }]);
    const r = await run(['--no-plugins', 'go']);
    expect(r.code).toBe(0);
    expect(harness.server.requests[0]!.body.tools.map((t: any) => t.name)).not.toContain('weather');
  });
});
