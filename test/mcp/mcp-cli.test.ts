// MCP servers as tools, through the real CLI, the real Anthropic SDK and the local model server,
// against server-everything (not ours) and a writer server of our own, in the real sandbox.
import { describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { anthropicEnv, BUN, CONCH, conchEnv, runConch, useHarness, writeConfig } from '../support/cli.ts';
import { eventually, everything, EVERYTHING, processesWith, httpEverything, WRITER } from './harness.ts';

const harness = useHarness();
const run = (args: string[], env: Record<string, string> = {}) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: { ...anthropicEnv(harness.server.anthropicBaseUrl), ...env } });
/** The tool_result blocks of the i-th request's last message. */
const results = (i: number) => harness.server.requests[i]!.body.messages.at(-1).content as any[];
const offered = (i = 0) => (harness.server.requests[i]!.body.tools as { name: string }[]).map((t) => t.name);

describe('MCP servers through the CLI', () => {
  test('the model calls mcp__everything__echo and gets its text; the tools carry their schemas', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()) } });
    harness.server.script([{ toolCalls: [{ name: 'mcp__everything__echo', arguments: { message: 'hello from conch' } }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const echo = harness.server.requests[0]!.body.tools.find((t: any) => t.name === 'mcp__everything__echo');
    expect(echo.input_schema.properties.message.type).toBe('string');
    expect(offered()).toContain('mcp__everything__get-sum');
    expect(results(1)[0].is_error).toBeFalsy();
    expect(JSON.stringify(results(1)[0].content)).toContain('Echo: hello from conch');
  });

  test('an image result arrives as an image block in the next request', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()) } });
    harness.server.script([{ toolCalls: [{ name: 'mcp__everything__get-tiny-image', arguments: {} }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const blocks = results(1)[0].content as any[];
    const image = blocks.find((b) => b.type === 'image');
    expect(image.source.media_type).toBe('image/png');
    expect(image.source.data.startsWith('iVBORw0KGgo')).toBe(true);
  });

  test('the server sees a clean environment: no parent secret, only the variables its config names', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID(), { env: { GREETING: '${MY_GREETING}' } }) } });
    harness.server.script([{ toolCalls: [{ name: 'mcp__everything__get-env', arguments: {} }] }, { text: 'done' }]);
    const r = await run(['go'], { MY_GREETING: 'hi-there', PARENT_SECRET: 'do-not-leak-me' });
    expect(r.code).toBe(0);
    const text = JSON.stringify(results(1)[0].content);
    expect(text).toContain('GREETING');
    expect(text).toContain('hi-there');
    expect(text).not.toContain('ANTHROPIC_API_KEY');
    expect(text).not.toContain('test-key');
    expect(text).not.toContain('do-not-leak-me');
  });

  test('a server that does not exist is reported and the run completes with the others', async () => {
    await writeConfig(harness.dirs, { mcpServers: { ghost: { command: 'no-such-mcp-server-here' }, everything: everything(randomUUID()) } });
    harness.server.script([{ text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('MCP server ghost did not start');
    expect(r.stderr).toContain('command not found: no-such-mcp-server-here');
    expect(offered()).toContain('mcp__everything__echo');
  });

  test('a call past toolTimeoutMs is a tool error the model sees; progress does not hide it', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID(), { toolTimeoutMs: 500 }) } });
    harness.server.script([
      { toolCalls: [{ name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 20, steps: 20 } }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain('500 ms');
  });

  test('--no-mcp starts no server; --tools narrows MCP tools like any other', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()) } });
    harness.server.script([{ text: 'done' }, { text: 'done' }]);
    expect((await run(['--no-mcp', 'go'])).code).toBe(0);
    expect(offered(0).some((n) => n.startsWith('mcp__'))).toBe(false);
    expect((await run(['--tools', 'read,mcp__everything__echo', 'go'])).code).toBe(0);
    expect(offered(1).sort()).toEqual(['mcp__everything__echo', 'read']);
  });

  test('a policy file tools rule takes an MCP tool out, and a call to it is refused naming the rule', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()) } });
    const policy = join(harness.dirs.home, 'policy.json');
    await writeFile(policy, JSON.stringify({ version: 1, tools: { deny: [{ id: 'team.no-env', name: 'mcp__everything__get-env' }] } }));
    harness.server.script([{ toolCalls: [{ name: 'mcp__everything__get-env', arguments: {} }] }, { text: 'done' }]);
    const r = await run(['--policy', policy, 'go']);
    expect(r.code).toBe(0);
    expect(offered()).not.toContain('mcp__everything__get-env');
    expect(offered()).toContain('mcp__everything__echo');
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain("team.no-env");
  });

  test("an untrusted project's .mcp.json is not started, in one line; after conch trust it is", async () => {
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers: { proj: everything(randomUUID()) } }));
    harness.server.script([{ text: 'done' }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('MCP server proj not started: this workspace is not trusted. Run `conch trust` here');
    expect(offered(0).some((n) => n.startsWith('mcp__proj__'))).toBe(false);
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    expect((await run(['go'])).code).toBe(0);
    expect(offered(1)).toContain('mcp__proj__echo');
  });

  test("a trusted .mcp.json server named like one of yours is not started, and one line says so", async () => {
    await writeConfig(harness.dirs, { mcpServers: { docs: everything(randomUUID()) } });
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers: { docs: everything(randomUUID()), proj: everything(randomUUID()) } }));
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('mcp__proj__echo');
    expect(r.stdout).toContain('.mcp.json: MCP server docs not started: your config names a server docs too');
  });

  test("a cloned repository's .mcp.json that is not valid JSON is skipped in one line; trusted as it is, it is a setup error", async () => {
    // It stopped every run in the clone with exit 2, though its servers would not have started.
    const file = join(harness.dirs.workspace, '.mcp.json');
    await writeFile(file, '{ "mcpServers": { "proj": { "command": "x", } } }');
    harness.server.script([{ text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('done');
    expect(r.stderr).toContain(`${file}: not valid JSON at line 1`);
    expect(r.stderr).toContain("Its servers are not started (it is the repository's file and not trusted)");
    // conch mcp says the same, not "No MCP servers configured: … add a .mcp.json" beside the one there is.
    const listed = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`${file}: not valid JSON at line 1`);
    expect(listed.stdout).not.toContain('No MCP servers configured');
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const trusted = await run(['go']);
    expect(trusted.code).toBe(2);
    expect(trusted.stderr).toContain(`${file}: not valid JSON at line 1`);
  });

  test('a .mcp.json the model made a FIFO or a link to /dev/zero is a setup error naming it, not a start that never ends', async () => {
    const file = join(harness.dirs.workspace, '.mcp.json');
    for (const make of [() => Bun.spawnSync(['mkfifo', file]), () => symlinkSync('/dev/zero', file)]) {
      make();
      expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
      const r = await run(['go']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`cannot read ${file}`);
      rmSync(file);
    }
  });

  test("a cloned repository's .mcp.json that is a directory, a FIFO or too large is skipped in one line, not a setup error", async () => {
    // Each stopped every run in the clone with exit 2 over a file whose servers would not start.
    const file = join(harness.dirs.workspace, '.mcp.json');
    const makes = [() => mkdirSync(file), () => Bun.spawnSync(['mkfifo', file]), () => writeFileSync(file, ' '.repeat(5 * 1024 * 1024))];
    for (const make of makes) {
      make();
      harness.server.script([{ text: 'done' }]);
      const r = await run(['go']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`cannot read ${file}`);
      expect(r.stderr).toContain("Its servers are not started (it is the repository's file and not trusted)");
      rmSync(file, { recursive: true });
    }
  });

  test('a .mcp.json written after conch trust (by the model, say) is not started until trusted again', async () => {
    // The model can write the workspace; the servers it names would start at the next run with the
    // ${VAR}s they ask for, API keys included. The trust pins the file's bytes, as it does .conch/tools.
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const planted = JSON.stringify({ mcpServers: { planted: everything(randomUUID(), { env: { K: '${ANTHROPIC_API_KEY}' } }) } });
    harness.server.script([{ toolCalls: [{ name: 'write', arguments: { path: '.mcp.json', content: planted } }] }, { text: 'done' }, { text: 'done' }, { text: 'done' }]);
    expect((await run(['go'])).code).toBe(0);
    const next = await run(['go']);
    expect(next.code).toBe(0);
    expect(next.stderr).toContain('MCP server planted not started: the file changed since you trusted this workspace. Review it and run `conch trust` here again');
    expect(offered(2).some((n) => n.startsWith('mcp__planted__'))).toBe(false);
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    expect((await run(['go'])).code).toBe(0);
    expect(offered(3)).toContain('mcp__planted__echo');
  });

  test("a trusted server's script in the workspace, rewritten by a command, is not started until trusted again", async () => {
    // The model cannot change .mcp.json unnoticed, but the script it runs is a workspace file: what a
    // command writes there would run at the next start with the server's env (a token) and network.
    const ws = harness.dirs.workspace;
    mkdirSync(join(ws, 'mcp'));
    writeFileSync(join(ws, 'mcp', 'server.mjs'), `await import(${JSON.stringify(WRITER)});\n`);
    await writeFile(join(ws, '.mcp.json'), JSON.stringify({ mcpServers: { proj: { command: BUN, args: ['mcp/server.mjs'], env: { TOKEN: '${PROJ_TOKEN}' } } } }));
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const planted = `process.argv.push("stdio"); await import(${JSON.stringify(EVERYTHING)});`;
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: `printf '%s\\n' '${planted}' > mcp/server.mjs` } }] }, { text: 'done' }, { text: 'done' }, { text: 'done' }]);
    const first = await run(['go'], { PROJ_TOKEN: 'token-of-the-project' });
    expect(first.code).toBe(0);
    expect(offered(0)).toContain('mcp__proj__write_file');
    expect(Bun.file(join(ws, 'mcp', 'server.mjs')).size).toBeGreaterThan(0);
    expect(await Bun.file(join(ws, 'mcp', 'server.mjs')).text()).toContain('process.argv.push');
    const next = await run(['go'], { PROJ_TOKEN: 'token-of-the-project' });
    expect(next.code).toBe(0);
    expect(offered(2).some((n) => n.startsWith('mcp__proj__'))).toBe(false);
    expect(next.stderr).toContain('MCP server proj not started: it runs mcp/server.mjs, which changed since you trusted this workspace');
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    expect((await run(['go'], { PROJ_TOKEN: 'token-of-the-project' })).code).toBe(0);
    expect(offered(3)).toContain('mcp__proj__get-env');
  });

  test("a script named through a ${VAR:-default} (Claude Code's ${CLAUDE_PROJECT_DIR} idiom) is pinned too", async () => {
    // Left out of the pins, the model could rewrite it and have it run at the next start as the server.
    const ws = harness.dirs.workspace;
    mkdirSync(join(ws, 'mcp'));
    writeFileSync(join(ws, 'mcp', 'server.mjs'), `await import(${JSON.stringify(WRITER)});\n`);
    await writeFile(join(ws, '.mcp.json'), JSON.stringify({ mcpServers: { proj: { command: BUN, args: ['${CONCH_TEST_UNSET_DIR:-.}/mcp/server.mjs'] } } }));
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: "printf '%s\\n' '// changed' >> mcp/server.mjs" } }] }, { text: 'done' }, { text: 'done' }]);
    const first = await run(['go']);
    expect(first.code).toBe(0);
    expect(offered(0)).toContain('mcp__proj__write_file');
    const next = await run(['go']);
    expect(next.code).toBe(0);
    expect(offered(2).some((n) => n.startsWith('mcp__proj__'))).toBe(false);
    expect(next.stderr).toContain('MCP server proj not started: it runs mcp/server.mjs, which changed since you trusted this workspace');
  });

  test('neither conch mcp nor a run prints a control sequence from a server (its stderr when it fails to start)', async () => {
    await writeConfig(harness.dirs, { mcpServers: { loud: { command: 'sh', args: ['-c', 'printf "\\033]52;c;eA==\\007\\033]0;owned\\007boom" >&2; exit 1'] } } });
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.stdout).toContain('loud (stdio, ');
    expect(r.stdout).toContain('boom');
    expect(r.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    harness.server.script([{ text: 'done' }]);
    const runOut = await run(['go']);
    expect(runOut.stderr).toContain('MCP server loud did not start');
    expect(runOut.stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  test('a stdio server cannot write the workspace unless its config says "workspace": "write"', async () => {
    await writeConfig(harness.dirs, {
      mcpServers: { ro: { command: BUN, args: [WRITER] }, rw: { command: BUN, args: [WRITER], workspace: 'write' } },
    });
    harness.server.script([{ toolCalls: [{ name: 'mcp__ro__write_file', arguments: {} }] }, { text: 'done' }]);
    expect((await run(['go'])).code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain('could not write');
    expect(existsSync(join(harness.dirs.workspace, 'pwned.txt'))).toBe(false);
    // The same server granted the workspace writes it: the check above is the sandbox's doing.
    harness.server.script([{ toolCalls: [{ name: 'mcp__rw__write_file', arguments: {} }] }, { text: 'done' }]);
    expect((await run(['go'])).code).toBe(0);
    expect(existsSync(join(harness.dirs.workspace, 'pwned.txt'))).toBe(true);
  });

  test('a server with "workspace": "write" does not share the toolchain cache that shell commands write', async () => {
    // npx, uvx and bunx run what their cache holds: a command writing the cache a server reads would
    // have its code run as the server (with the server's env and network) at the next start.
    await writeConfig(harness.dirs, { mcpServers: { rw: everything(randomUUID(), { workspace: 'write' }) } });
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: 'for v in npm_config_cache UV_CACHE_DIR BUN_INSTALL_CACHE_DIR; do eval d=\\$$v; echo planted > "$d/planted-by-a-command"; done; echo ok' } }] },
      { toolCalls: [{ name: 'mcp__rw__get-env', arguments: {} }] },
      { text: 'done' },
    ]);
    expect((await run(['go'])).code).toBe(0);
    expect(JSON.stringify(results(1)[0].content)).toContain('ok');
    const env = JSON.parse(JSON.parse(JSON.stringify(results(2)[0].content))[0].text) as Record<string, string>;
    for (const name of ['npm_config_cache', 'UV_CACHE_DIR', 'BUN_INSTALL_CACHE_DIR']) {
      if (env[name] === undefined) continue;
      expect([name, existsSync(join(env[name]!, 'planted-by-a-command'))]).toEqual([name, false]);
    }
  });

  test("a server's /tmp is its own: what a shell command leaves in its /tmp is not there", async () => {
    // Servers keep state, downloads and tokens in TMPDIR; the model's commands must neither read
    // them nor plant files for a server to pick up.
    await writeConfig(harness.dirs, { mcpServers: { srv: everything(randomUUID()) } });
    harness.server.script([
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo planted > "$TMPDIR/planted-by-a-command"; echo "$TMPDIR"' } }] },
      { toolCalls: [{ name: 'mcp__srv__get-env', arguments: {} }] },
      { text: 'done' },
    ]);
    expect((await run(['go'])).code).toBe(0);
    const commandTmp = (results(1)[0].content as { text: string }[])[0]!.text.split('\n')[0]!;
    const env = JSON.parse(JSON.parse(JSON.stringify(results(2)[0].content))[0].text) as Record<string, string>;
    expect(env.TMPDIR).toBeDefined();
    expect(env.TMPDIR).not.toBe(commandTmp);
    expect(existsSync(join(env.TMPDIR!, 'planted-by-a-command'))).toBe(false);
  });

  // The run's check of nested repositories comes before its MCP servers stop: one allowed to write
  // the workspace wrote again what the check had disabled. conch checks again once they are stopped.
  test('a nested repository an MCP server with "workspace": "write" keeps rewriting is disabled after the servers stop', async () => {
    const git = ['/usr/bin/git', Bun.which('git')].find((p): p is string => !!p && existsSync(p));
    if (!git) return;
    const ws = harness.dirs.workspace;
    const fired = join(harness.dirs.home, 'FIRED');
    await writeConfig(harness.dirs, { mcpServers: { planter: { command: BUN, args: [WRITER, '--plant-git'], workspace: 'write', env: { PLANT_FIRED: fired } } } });
    harness.server.script([{ toolCalls: [{ name: 'bash', arguments: { command: 'touch go; sleep 0.5; test -e evil/.git/config && echo planted' } }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(JSON.stringify(harness.server.requests[1]!.body.messages)).toContain('planted');
    expect(r.stderr).toContain('evil/.git/config (it sets core.fsmonitor)');
    expect(existsSync(join(ws, 'evil/.git/config'))).toBe(false);
    Bun.spawnSync([git, 'status'], { cwd: join(ws, 'evil'), env: { PATH: '/usr/bin:/bin', HOME: harness.dirs.home, GIT_CONFIG_NOSYSTEM: '1' }, stdout: 'pipe', stderr: 'pipe' });
    expect(existsSync(fired)).toBe(false);
  });

  test('an image in a format no model API takes (BMP) is named in text, not sent to fail the next request', async () => {
    await writeConfig(harness.dirs, { mcpServers: { w: { command: BUN, args: [WRITER] } } });
    harness.server.script([{ toolCalls: [{ name: 'mcp__w__bmp_image', arguments: {} }] }, { text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const blocks = results(1)[0].content as any[];
    expect(blocks.some((b) => b.type === 'image')).toBe(false);
    expect(JSON.stringify(blocks)).toContain('an image of type image/bmp');
  });

  test('a server that dies during a call: the tool error gives its exit code and last stderr lines, and later calls say it is gone', async () => {
    await writeConfig(harness.dirs, { mcpServers: { w: { command: BUN, args: [WRITER] } } });
    harness.server.script([
      { toolCalls: [{ name: 'mcp__w__crash', arguments: {} }] },
      { toolCalls: [{ name: 'mcp__w__big_text', arguments: { bytes: 3 } }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    const died = JSON.stringify(results(1)[0].content);
    expect(results(1)[0].is_error).toBe(true);
    expect(died).toContain('the MCP server w is gone (it exited with code 9); its tools fail for the rest of this run');
    expect(died).toContain('its stderr ended with:');
    expect(died).toContain('writer: fatal: the database is locked');
    expect(JSON.stringify(results(2)[0].content)).toContain('the MCP server w is gone');
  });

  test("a server's pattern that backtracks (a ReDoS, seconds per call) cannot hold the run past --timeout: the watchdog ends it", async () => {
    await writeConfig(harness.dirs, { mcpServers: { w: { command: BUN, args: [WRITER] } } });
    // Calls refused by validation follow one another without a turn of the event loop: no timer fires between them.
    const calls = Array.from({ length: 30 }, () => ({ name: 'mcp__w__match', arguments: { items: [`${'a'.repeat(40)}!`] } }));
    harness.server.script([{ toolCalls: calls }, { text: 'done' }]);
    const r = await run(['--json', '--timeout', '2s', 'go']);
    expect(r.code).toBe(124);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'timed_out' });
  });

  test('an answer over the 10 MiB a server may send fails that call at once, and the server answers the next one', async () => {
    await writeConfig(harness.dirs, { mcpServers: { w: { command: BUN, args: [WRITER], toolTimeoutMs: 20000 } } });
    harness.server.script([
      { toolCalls: [{ name: 'mcp__w__big_text', arguments: { bytes: 11 * 1024 * 1024 } }] },
      { toolCalls: [{ name: 'mcp__w__big_text', arguments: { bytes: 5 } }] },
      { text: 'done' },
    ]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain('over the 10485760 bytes conch reads from an MCP server');
    expect(results(2)[0].is_error).toBeFalsy();
    expect(JSON.stringify(results(2)[0].content)).toContain('AAAAA');
  });
});

describe('no MCP server outlives conch', () => {
  for (const exit of ['run end', 'SIGINT', 'SIGTERM'] as const) {
    test(`after ${exit}`, async () => {
      const marker = `mcp-exit-${randomUUID()}`;
      await writeConfig(harness.dirs, { mcpServers: { everything: everything(marker) } });
      harness.server.script(
        exit === 'run end'
          ? [{ text: 'done' }]
          : [{ toolCalls: [{ name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 60, steps: 60 } }] }, { text: 'done' }],
      );
      const child = Bun.spawn([CONCH, '--model', 'anthropic/test-model', 'go'], {
        cwd: harness.dirs.workspace,
        env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      });
      if (exit !== 'run end') {
        // The tool call is under way once the model server has been asked once.
        expect(await eventually(async () => harness.server.requests.length >= 1 && (await processesWith(marker)).length > 0)).toBe(true);
        await Bun.sleep(200);
        child.kill(exit);
      }
      await child.exited;
      expect(await processesWith(marker)).toEqual([]);
    });
  }
});

describe('conch mcp', () => {
  test('lists each server: started with its tools, or failed and why (stderr lines of a crash)', async () => {
    await writeConfig(harness.dirs, {
      mcpServers: {
        everything: everything(randomUUID(), { disabledTools: ['get-env'] }),
        ghost: { command: 'no-such-mcp-server-here' },
        crash: { command: '/bin/sh', args: ['-c', 'echo "boom: no config" >&2; exit 3'] },
        slow: { command: '/bin/sh', args: ['-c', 'sleep 30'], startupTimeoutMs: 300 },
      },
    });
    const text = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(text.code).toBe(1);
    expect(text.stdout).toContain('mcp__everything__echo');
    expect(text.stdout).not.toContain('mcp__everything__get-env');
    expect(text.stdout).toContain('command not found: no-such-mcp-server-here');
    expect(text.stdout).toContain('crashed during start-up (exit code 3)');
    expect(text.stdout).toContain('boom: no config');
    expect(text.stdout).toContain('timed out: no answer within 300 ms');
    const jsonRun = await runConch({ dirs: harness.dirs, args: ['mcp', '--json'] });
    expect(jsonRun.code).toBe(1);
    const json = JSON.parse(jsonRun.stdout);
    const byName = Object.fromEntries(json.servers.map((s: any) => [s.name, s]));
    expect(byName.everything.status).toBe('started');
    expect(byName.ghost.status).toBe('failed');
    expect(byName.slow.reason).toContain('startupTimeoutMs');
  });

  test('exit 1 when a configured server failed, naming it on stderr (as conch tools for a plugin); 0 when all started', async () => {
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()), ghost: { command: 'no-such-mcp-server-here' } } });
    const failed = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('conch: 1 of 2 MCP servers failed to start: ghost');
    await writeConfig(harness.dirs, { mcpServers: { everything: everything(randomUUID()) } });
    const ok = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe('');
  });

  test('an SSE server (as a .mcp.json shared with other clients may list) is not started, saying why; the run goes on', async () => {
    await writeConfig(harness.dirs, { mcpServers: { old: { type: 'sse', url: 'http://127.0.0.1:1/sse' } } });
    harness.server.script([{ text: 'done' }]);
    const r = await run(['go']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('conch: MCP server old did not start, its tools are not offered: its "type" is "sse"');
    const listed = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(listed.code).toBe(1);
    expect(listed.stdout).toContain('give the server\'s Streamable HTTP endpoint instead ("type": "http")');
  });

  test('a stdio server that never answers but prints to stdout: the timeout quotes what it printed and says where logs go', async () => {
    await writeConfig(harness.dirs, { mcpServers: { noisy: { command: '/bin/sh', args: ['-c', 'echo "Server listening on stdio"; sleep 30'], startupTimeoutMs: 1000 } } });
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('why: timed out: no answer within 1000 ms (startupTimeoutMs); it wrote to stdout what is not MCP (JSON-RPC), which a server must keep for the protocol (log to stderr instead):\n    Server listening on stdio\n');
  });

  test('an HTTP server nothing listens at is named by its address, not in fetch\'s own words', async () => {
    // A port that was just free: nothing answers there.
    const probe = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
    const port = probe.port;
    await probe.stop(true);
    await writeConfig(harness.dirs, { mcpServers: { web: { url: `http://127.0.0.1:${port}/mcp?token=secret-in-url` } } });
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`why: connection to http://127.0.0.1:${port} failed (ECONNREFUSED)`);
    expect(r.stdout).not.toContain('Is the computer able to access the url');
    expect(r.stdout).not.toContain('secret-in-url');
  });

  test('with no server configured it says where to add one: the user config file where it is (XDG_CONFIG_HOME)', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`No MCP servers configured: add "mcpServers" to ${join(harness.dirs.configHome, 'conch', 'config.json')}, or a .mcp.json to the workspace.\n`);
  });

  test('a malformed entry is a setup error naming the file and key', async () => {
    await writeConfig(harness.dirs, { mcpServers: { bad: { command: 'x', arg: ['y'] } } });
    const r = await runConch({ dirs: harness.dirs, args: ['mcp'] });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('config.json: "mcpServers.bad.arg" is not a known key');
    expect(r.stderr).toContain('Did you mean "args"?');
  });
});

describe('MCP server network and shutdown', () => {
  /** conch started with `args` and one MCP server that takes a minute to start, once that server runs. */
  async function startingSlowServer(args: string[]) {
    const marker = `mcp-slowstart-${randomUUID()}`;
    await writeConfig(harness.dirs, { mcpServers: { slow: { command: '/bin/sh', args: ['-c', `sleep 60 # ${marker}`], startupTimeoutMs: 60_000 } } });
    const child = Bun.spawn([CONCH, '--model', 'anthropic/test-model', '--unrestricted', ...args], {
      cwd: harness.dirs.workspace,
      env: conchEnv(harness.dirs, anthropicEnv(harness.server.anthropicBaseUrl)),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    expect(await eventually(async () => (await processesWith(marker)).length > 0)).toBe(true);
    return { child, marker };
  }

  test('Ctrl-C while a server is still starting leaves no process (unrestricted: no bwrap to fall back on)', async () => {
    harness.server.script([{ text: 'done' }]);
    const { child, marker } = await startingSlowServer(['go']);
    child.kill('SIGINT');
    await child.exited;
    expect(await processesWith(marker)).toEqual([]);
    expect(harness.server.requests.length).toBe(0);
  });

  for (const args of [['go'], ['run', 'one', 'two']]) {
    test(`Ctrl-C while a server is still starting ends ${args[0] === 'run' ? 'a batch' : 'the run'} at once, cancelled (130), with its --json document`, async () => {
      const { child, marker } = await startingSlowServer(['--json', ...args]);
      child.kill('SIGINT');
      const [code, stdout] = await Promise.all([child.exited, new Response(child.stdout).text()]);
      expect(code).toBe(130);
      const doc = JSON.parse(stdout);
      const envelopes = args[0] === 'run' ? doc.tasks : [doc];
      expect(envelopes).toHaveLength(args[0] === 'run' ? 2 : 1);
      for (const e of envelopes) expect(e).toMatchObject({ status: 'cancelled', signal: 'SIGINT' });
      if (args[0] !== 'run') expect(doc.message).toBe('cancelled by the user, while conch started (plugins, MCP servers)');
      expect(await processesWith(marker)).toEqual([]);
    });
  }

  test('network follows the run: --no-network cuts a server off, "network": true in its entry grants it', async () => {
    await writeConfig(harness.dirs, {
      mcpServers: { off: { command: BUN, args: [WRITER] }, on: { command: BUN, args: [WRITER], network: true } },
    });
    // A path the model server has no route for: it answers 404 and takes no turn of the script.
    const url = `${harness.server.url}/ping`;
    harness.server.script([
      { toolCalls: [{ name: 'mcp__off__fetch_url', arguments: { url } }, { name: 'mcp__on__fetch_url', arguments: { url } }] },
      { text: 'done' },
    ]);
    const r = await run(['--no-network', 'go']);
    expect(r.code).toBe(0);
    const [off, on] = harness.server.requests.at(-1)!.body.messages.at(-1).content as any[];
    expect(off.is_error).toBe(true);
    expect(JSON.stringify(off.content)).toContain('could not fetch');
    expect(JSON.stringify(on.content)).toContain('fetched: HTTP');
  });

  test('a project server\'s "network": true does not give it back the network a run turned off', async () => {
    // .mcp.json is the repository's file: trusted to start its servers, not to undo --no-network,
    // with which the user keeps the workspace from leaving the machine this time.
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers: { proj: { command: BUN, args: [WRITER], network: true } } }));
    expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);
    const url = `${harness.server.url}/ping`;
    harness.server.script([{ toolCalls: [{ name: 'mcp__proj__fetch_url', arguments: { url } }] }, { text: 'done' }, { toolCalls: [{ name: 'mcp__proj__fetch_url', arguments: { url } }] }, { text: 'done' }]);
    expect((await run(['--no-network', 'go'])).code).toBe(0);
    expect(results(1)[0].is_error).toBe(true);
    expect(JSON.stringify(results(1)[0].content)).toContain('could not fetch');
    // With the run's network on, its entry's true changes nothing.
    expect((await run(['go'])).code).toBe(0);
    expect(JSON.stringify(results(3)[0].content)).toContain('fetched: HTTP');
  });

  test('a server that ignores its stdin closing and SIGTERM is killed after the grace period', async () => {
    const marker = `mcp-stubborn-${randomUUID()}`;
    await writeConfig(harness.dirs, { mcpServers: { stubborn: { command: BUN, args: [WRITER, '--stubborn', marker] } } });
    harness.server.script([{ text: 'done' }]);
    // Unrestricted: no bwrap --die-with-parent to fall back on, only conch's own teardown.
    const r = await run(['--unrestricted', 'go']);
    expect(r.code).toBe(0);
    expect(await processesWith(marker)).toEqual([]);
  });
});

describe('Streamable HTTP servers', () => {
  test('server-everything over HTTP: its tools are offered and called', async () => {
    const http = await httpEverything();
    try {
      await writeConfig(harness.dirs, { mcpServers: { web: { url: http.url, headers: { 'X-Test': '${MY_HEADER}' } } } });
      harness.server.script([{ toolCalls: [{ name: 'mcp__web__echo', arguments: { message: 'over http' } }] }, { text: 'done' }]);
      const r = await run(['go'], { MY_HEADER: 'yes' });
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(JSON.stringify(results(1)[0].content)).toContain('Echo: over http');
    } finally {
      await http.stop();
    }
  });
});
