// What config decides about a session, as an editor sees it: conch acp logs it on stderr (the
// editor's agent log), and a repository's config cannot choose the model server there either.
import { afterAll, afterEach, beforeAll, beforeEach, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '../support/model-server.ts';
import { makeDirs, runConch, writeConfig, type Sandbox } from '../support/cli.ts';
import { startAgent, type AgentProcess } from '../support/acp-client.ts';

let mine: ModelServer;
let theirs: ModelServer;
let dirs: Sandbox;
let agent: AgentProcess | undefined;
beforeAll(async () => {
  [mine, theirs] = await Promise.all([startModelServer(), startModelServer()]);
});
afterAll(() => Promise.all([mine.close(), theirs.close()]));
beforeEach(async () => {
  dirs = await makeDirs();
});
afterEach(async () => {
  await agent?.close();
  await dirs.cleanup();
});

test("an untrusted project config's model is ignored and the agent log says so", async () => {
  await writeConfig(dirs, { model: 'mine/my-model', providers: { mine: { type: 'openai', baseUrl: mine.openaiBaseUrl } } });
  await mkdir(join(dirs.workspace, '.conch'));
  await writeFile(
    join(dirs.workspace, '.conch', 'config.json'),
    JSON.stringify({ model: 'team/their-model', providers: { team: { type: 'openai', baseUrl: theirs.openaiBaseUrl } } }),
  );
  mine.script([{ text: 'from mine' }]);
  theirs.script([{ text: 'from theirs' }]);
  agent = startAgent({ dirs, args: [], env: {} });
  await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.conn.agent.request('session/new', { cwd: dirs.workspace, mcpServers: [] });
  const response = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
  expect(response.stopReason).toBe('end_turn');
  expect(mine.requests).toHaveLength(1);
  expect(theirs.requests).toHaveLength(0);
  expect(agent.stderr()).toContain(`session ${sessionId}: ${join(dirs.workspace, '.conch', 'config.json')}: "model" and "providers" ignored: this workspace is not trusted`);
});

test('a project config changed since `conch trust` is not used, and the agent log says to trust it again', async () => {
  await writeConfig(dirs, { model: 'mine/my-model', providers: { mine: { type: 'openai', baseUrl: mine.openaiBaseUrl } } });
  await mkdir(join(dirs.workspace, '.conch'));
  const file = join(dirs.workspace, '.conch', 'config.json');
  const pointAt = (server: ModelServer) => writeFile(file, JSON.stringify({ model: 'team/their-model', providers: { team: { type: 'openai', baseUrl: server.openaiBaseUrl } } }));
  // Trusted while the project's provider was this one…
  await pointAt(mine);
  expect((await runConch({ dirs, args: ['trust'] })).code).toBe(0);
  // …then repointed.
  await pointAt(theirs);
  mine.requests.length = theirs.requests.length = 0;
  mine.script([{ text: 'from mine' }]);
  theirs.script([{ text: 'from theirs' }]);
  agent = startAgent({ dirs, args: [], env: {} });
  await agent.conn.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
  const { sessionId } = await agent.conn.agent.request('session/new', { cwd: dirs.workspace, mcpServers: [] });
  const response = await agent.conn.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'go' }] });
  expect(response.stopReason).toBe('end_turn');
  expect(theirs.requests).toHaveLength(0);
  expect(mine.requests).toHaveLength(1);
  expect(mine.requests[0]!.body.model).toBe('my-model');
  expect(agent.stderr()).toContain(`session ${sessionId}: ${file}: "model" and "providers" ignored: the file changed since you trusted this workspace`);
  expect(agent.stderr()).toContain('run `conch trust` here again');
});
