// Skills under `conch acp`: the same catalog as on the command line, and every skill offered to the
// editor as a slash command (available_commands_update) that puts the skill's body into the prompt.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { anthropicEnv, makeDirs, writeConfig, type Sandbox } from '../support/cli.ts';
import { startAgent, updatesOf, type AgentProcess } from '../support/acp-client.ts';

let server: ModelServer;
let dirs: Sandbox;
let agent: AgentProcess | undefined;
beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server.close());
beforeEach(async () => {
  dirs = await makeDirs();
  server.requests.length = 0;
  await writeConfig(dirs, { retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5 } });
  for (const [name, extra] of [['release', ''], ['deploy', '\ndisable-model-invocation: true']] as const) {
    const dir = join(dirs.home, '.agents', 'skills', name);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'SKILL.md'), `---\nname: ${name}\ndescription: The ${name} skill.${extra}\n---\nBODY-OF-${name.toUpperCase()}\n`);
  }
});
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  await dirs.cleanup();
});

async function open(args: string[] = []): Promise<{ agent: AgentProcess; sessionId: string }> {
  agent = startAgent({ dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(server.anthropicBaseUrl) });
  await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.conn.agent.request('session/new', { cwd: dirs.workspace, mcpServers: [] });
  return { agent, sessionId };
}

function system(i = 0): string {
  const body = server.requests[i]!.body;
  return typeof body.system === 'string' ? body.system : (body.system ?? []).map((b: any) => b.text).join('\n');
}
const lastTexts = (i: number) => server.requests[i]!.body.messages.at(-1).content.map((b: any) => b.text);
const userText = (i = 0) => JSON.stringify(server.requests[i]!.body.messages[0].content);

describe('skills under conch acp', () => {
  test('every skill is offered as a slash command; the catalog is the same as on the command line', async () => {
    const { agent, sessionId } = await open();
    server.script([{ text: 'ok' }]);
    await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] });
    const commands = updatesOf(agent, sessionId).find((u) => u.sessionUpdate === 'available_commands_update') as any;
    expect(commands.availableCommands).toEqual([
      { name: 'deploy', description: 'The deploy skill.', input: { hint: 'what to do with this skill (optional)' } },
      { name: 'release', description: 'The release skill.', input: { hint: 'what to do with this skill (optional)' } },
    ]);
    expect(system()).toContain('- release: The release skill. (~/.agents/skills/release/SKILL.md)');
    expect(system()).not.toContain('deploy');
    expect(JSON.stringify(server.requests[0]!.body)).not.toContain('BODY-OF-');
  });

  test('/name puts that skill\'s body in front of the rest of the prompt; other text starting with / is left alone', async () => {
    const { agent, sessionId } = await open();
    server.script([{ text: 'ok' }, { text: 'ok' }]);
    const r = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/deploy to staging' }] });
    expect(r.stopReason).toBe('end_turn');
    expect(userText()).toContain('<skill name=\\"deploy\\" path=\\"~/.agents/skills/deploy/SKILL.md\\">');
    expect(userText()).toContain('BODY-OF-DEPLOY');
    expect(userText()).toMatch(/<\/skill>\\n\\nto staging"/);

    await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/usr/bin is where?' }] });
    expect(lastTexts(1)).toEqual(['/usr/bin is where?']);
  });

  test('conch acp --skill NAME: the body goes in front of each session\'s first prompt only', async () => {
    const { agent, sessionId } = await open(['--skill', 'release']);
    server.script([{ text: 'ok' }, { text: 'ok' }]);
    await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'first' }] });
    expect(userText()).toContain('BODY-OF-RELEASE');
    expect(userText()).toMatch(/<\/skill>\\n\\nfirst"/);
    await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'second' }] });
    expect(lastTexts(1)).toEqual(['second']);
  });

  test('a slash skill the read policy denies is refused with the reason, and nothing reaches the model', async () => {
    await writeConfig(dirs, { retry: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 5 }, read: { deny: [join(dirs.home, '.agents', 'skills', 'deploy')] } });
    const { agent, sessionId } = await open();
    const refused = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/deploy now' }] }).catch((e) => e);
    expect(refused.code).toBe(-32602);
    expect(refused.message).toContain('/deploy: ~/.agents/skills/deploy/SKILL.md may not be read');
    expect(server.requests.length).toBe(0);
  });
});
