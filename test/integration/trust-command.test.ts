// `conch trust` says everything the trust unlocks in this workspace, not only the plugins folder:
// the project's .mcp.json servers and its .conch/config.json model follow the same trust.
import { describe, expect, test } from 'bun:test';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runConch, useHarness } from '../support/cli.ts';

const harness = useHarness();

describe('conch trust', () => {
  test('names the .mcp.json servers and the project config it lets in', async () => {
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers: { docs: { command: 'docs-mcp' } } }));
    await mkdir(join(harness.dirs.workspace, '.conch'), { recursive: true });
    await writeFile(join(harness.dirs.workspace, '.conch', 'config.json'), '{}\n');
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('.mcp.json: its MCP servers start here while the file stays as it is now');
    expect(r.stdout).toContain('.conch/config.json: its model, providers and model settings (maxOutputTokens, thinking, temperature, models) apply here');
  });

  test('lists each server with what it runs or reaches and the variables of the user\'s environment it is given', async () => {
    const mcpServers = {
      docs: { command: 'npx', args: ['-y', 'docs-mcp', '--root', '${PWD}'] },
      remote: { type: 'http', url: 'https://mcp.example.com/v1', headers: { Authorization: 'Bearer ${ANTHROPIC_API_KEY}', 'X-Team': '${TEAM:-core}' } },
      'evil\u001b]0;x\u0007': { command: 'x' },
    };
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers }));
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('    docs: npx -y docs-mcp --root ${PWD}  (given $PWD from your environment)');
    expect(r.stdout).toContain('    remote: https://mcp.example.com/v1  (given $ANTHROPIC_API_KEY, $TEAM from your environment)');
    expect(r.stdout).toContain('    evil\\u{1b}]0;x\\u{7}: x\n');
  });

  test('says when a server may write the workspace or runs in another folder (where a relative command is looked for)', async () => {
    const mcpServers = { writer: { command: 'node', args: ['s.mjs'], workspace: 'write' }, away: { command: './server', cwd: '/tmp/elsewhere' } };
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), JSON.stringify({ mcpServers }));
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('    writer: node s.mjs; it may write the workspace\n');
    expect(r.stdout).toContain('    away: ./server; it runs in /tmp/elsewhere\n');
  });

  test('a .mcp.json with a byte-order mark (which runs read as JSON) lists its servers and pins the files they run', async () => {
    // Runs accept the mark (config/json-text.ts); had the list not, the file would start servers that
    // \`conch trust\` showed none of, a header handing $ANTHROPIC_API_KEY to a URL among them.
    const mcpServers = {
      remote: { url: 'https://mcp.example.com/v1', headers: { Authorization: 'Bearer ${ANTHROPIC_API_KEY}' } },
      local: { command: 'node', args: ['mcp/server.mjs'] },
    };
    await mkdir(join(harness.dirs.workspace, 'mcp'), { recursive: true });
    await writeFile(join(harness.dirs.workspace, 'mcp', 'server.mjs'), '// v1\n');
    await writeFile(join(harness.dirs.workspace, '.mcp.json'), `\uFEFF${JSON.stringify({ mcpServers })}`);
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('    remote: https://mcp.example.com/v1  (given $ANTHROPIC_API_KEY from your environment)');
    expect(r.stdout).toContain('    local: node mcp/server.mjs\n');
    const trusted = JSON.parse(await readFile(join(harness.dirs.configHome, 'conch', 'trusted.json'), 'utf8')) as { workspaces: Record<string, { mcpFiles?: Record<string, string> }> };
    const files = Object.values(trusted.workspaces)[0]?.mcpFiles ?? {};
    expect(Object.keys(files).map((f) => f.split('/').slice(-2).join('/'))).toEqual(['mcp/server.mjs']);
  });

  test('without a .mcp.json says nothing of one', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('.mcp.json');
  });

  test('without a .conch/config.json says it is absent, not what its settings would do', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  .conch/config.json is absent; the model and providers of one added later apply only after `conch trust` again\n');
    expect(r.stdout).not.toContain('apply here while it');
  });

  test('refuses a workspace every user can write (exit 2, no stack), naming it and the fix', async () => {
    await chmod(harness.dirs.workspace, 0o1777);
    const r = await runConch({ dirs: harness.dirs, args: ['trust'] });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('is writable by every user (mode 1777): another user could plant the plugins, MCP servers, model and skills');
    expect(r.stderr).toContain('chmod o-w');
    expect(r.stderr).not.toContain('    at ');
  });

  test('the help says what it trusts', async () => {
    const r = await runConch({ dirs: harness.dirs, args: ['--help'] });
    expect(r.stdout).toMatch(/trust +Trust this workspace: .*\.mcp\.json servers/);
  });
});
