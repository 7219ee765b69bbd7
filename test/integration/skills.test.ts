// Skills in a run, through the real CLI, the real Anthropic SDK and the local model server: what the
// model is told (the catalog, never a body), what it reads, and what --skill and trust change.
import { describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { anthropicEnv, runConch, useHarness, writeConfig, type Sandbox } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.workspace, '.git'));
});

const BODY = 'SKILL-BODY-MARKER: run the release checklist.';

async function skill(root: string, dir: string, frontmatter: string, body = `${BODY} (${dir})\n`): Promise<string> {
  await mkdir(join(root, dir), { recursive: true });
  const file = join(root, dir, 'SKILL.md');
  await writeFile(file, `---\n${frontmatter}\n---\n${body}`);
  return file;
}
const userRoot = (d: Sandbox) => join(d.home, '.agents', 'skills');
const projectRoot = (d: Sandbox) => join(d.workspace, '.agents', 'skills');

const run = (...args: string[]) =>
  runConch({ dirs: harness.dirs, args: ['--model', 'anthropic/test-model', ...args], env: anthropicEnv(harness.server.anthropicBaseUrl) });
const trust = async () => expect((await runConch({ dirs: harness.dirs, args: ['trust'] })).code).toBe(0);

function system(index = 0): string {
  const body = harness.server.requests[index]!.body;
  return typeof body.system === 'string' ? body.system : (body.system ?? []).map((b: any) => b.text).join('\n');
}
const firstRequest = () => JSON.stringify(harness.server.requests[0]!.body);
const toolNames = (index = 0) => (harness.server.requests[index]!.body.tools ?? []).map((t: any) => t.name);

describe('skills in a run', () => {
  test('the first request carries the catalog and no body; the model reads SKILL.md and gets the body', async () => {
    await skill(userRoot(harness.dirs), 'release', 'name: release\ndescription: Cut a release of this project.');
    harness.server.script([{ toolCalls: [{ name: 'read', arguments: { path: '~/.agents/skills/release/SKILL.md' } }] }, { text: 'done' }]);
    const r = await run('ship it');
    expect(r.code).toBe(0);
    expect(system()).toContain('# Skills');
    expect(system()).toContain('- release: Cut a release of this project. (~/.agents/skills/release/SKILL.md)');
    expect(firstRequest()).not.toContain('SKILL-BODY-MARKER');
    const result = JSON.stringify(harness.server.requests[1]!.body.messages.at(-1).content);
    expect(result).toContain('SKILL-BODY-MARKER: run the release checklist. (release)');
  });

  test('skills in ~/.config/conch/skills are in the catalog and readable; the rest of that folder stays hidden, named as a path', async () => {
    const root = join(harness.dirs.configHome, 'conch', 'skills');
    const file = await skill(root, 'release', 'name: release\ndescription: Cut a release of this project.');
    await writeConfig(harness.dirs, { limits: { model_calls: 9 } });
    const config = join(harness.dirs.configHome, 'conch', 'config.json');
    harness.server.script([
      { toolCalls: [{ name: 'read', arguments: { path: file } }, { name: 'read', arguments: { path: config } }] },
      { text: 'done' },
    ]);
    const r = await run('ship it');
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('left out of the catalog');
    expect(system()).toContain(`- release: Cut a release of this project. (${file})`);
    const [body, secret] = harness.server.requests[1]!.body.messages.at(-1).content.map((b: any) => JSON.stringify(b.content));
    expect(body).toContain('SKILL-BODY-MARKER: run the release checklist. (release)');
    expect(secret).toContain(`(built-in rule read.secret:conch-config, ${join(harness.dirs.configHome, 'conch')})`);
    expect(secret).not.toContain('{configDir}');
    harness.server.script([{ text: 'ok' }]);
    const direct = await run('--skill', 'release', 'go');
    expect(direct.code).toBe(0);
    expect(JSON.stringify(harness.server.requests.at(-1)!.body.messages[0].content)).toContain('SKILL-BODY-MARKER');
  });

  test('--skill puts the body into the task of the first request; a hidden skill is usable only that way', async () => {
    await skill(userRoot(harness.dirs), 'deploy', 'name: deploy\ndescription: Deploy to production.\ndisable-model-invocation: true');
    await skill(userRoot(harness.dirs), 'notes', 'name: notes\ndescription: Write release notes.');
    harness.server.script([{ text: 'ok' }, { text: 'ok' }]);
    expect((await run('go')).code).toBe(0);
    expect(system()).not.toContain('deploy');
    expect(system()).toContain('- notes: Write release notes.');

    harness.server.requests.length = 0;
    const r = await run('--skill', 'deploy', 'go');
    expect(r.code).toBe(0);
    const task = JSON.stringify(harness.server.requests[0]!.body.messages[0].content);
    expect(task).toContain('<skill name=\\"deploy\\" path=\\"~/.agents/skills/deploy/SKILL.md\\">');
    expect(task).toContain('SKILL-BODY-MARKER: run the release checklist. (deploy)');
    expect(task).toMatch(/<\/skill>\\n\\ngo"/);
    expect(system()).not.toContain('SKILL-BODY-MARKER');
  });

  test('conch sessions lists a --skill run by the skill and the task typed, not the body the model got', async () => {
    await skill(userRoot(harness.dirs), 'deploy', 'name: deploy\ndescription: Deploy to production.');
    await skill(userRoot(harness.dirs), 'notes', 'name: notes\ndescription: Write release notes.');
    harness.server.script([{ text: 'ok' }]);
    expect((await run('--skill', 'deploy', '--skill', 'notes', 'ship it')).code).toBe(0);
    const list = await runConch({ dirs: harness.dirs, args: ['sessions'] });
    expect(list.stdout).toContain('[skill deploy, notes] ship it');
    expect(list.stdout).not.toContain('SKILL-BODY-MARKER');
  });

  test('an untrusted project skill is absent and one line says so; after `conch trust` it is offered', async () => {
    await skill(projectRoot(harness.dirs), 'lint', 'name: lint\ndescription: Lint the project.');
    harness.server.script([{ text: 'ok' }, { text: 'ok' }]);
    const r = await run('go');
    expect(r.code).toBe(0);
    expect(system()).not.toContain('lint');
    expect(system()).not.toContain('# Skills');
    expect(r.stderr).toContain('conch: 1 project skill in .agents/skills not loaded: this workspace is not trusted (run `conch trust` to load them)\n');

    await trust();
    harness.server.requests.length = 0;
    const trusted = await run('go');
    expect(trusted.stderr).not.toContain('not trusted');
    expect(system()).toContain('- lint: Lint the project. (.agents/skills/lint/SKILL.md)');
  });

  test('--skill of an untrusted project skill is a setup error naming `conch trust`', async () => {
    await skill(projectRoot(harness.dirs), 'lint', 'name: lint\ndescription: Lint the project.');
    const r = await run('--skill', 'lint', 'go');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--skill lint: .agents/skills/lint/SKILL.md is a project skill and this workspace is not trusted; run `conch trust`');
    expect(harness.server.requests.length).toBe(0);
  });

  test('an unknown --skill is a setup error listing the skills found; with --json one document', async () => {
    await skill(userRoot(harness.dirs), 'notes', 'name: notes\ndescription: Write release notes.');
    const r = await run('--skill', 'nope', 'go');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('conch: --skill nope: no skill of that name; found: notes (see `conch skills`)');
    const j = await run('--json', '--skill', 'nope', 'go');
    expect(JSON.parse(j.stdout)).toMatchObject({ status: 'failed', code: 'config_invalid', exitCode: 2 });
  });

  test('precedence in a run: the project skill wins, with one warning naming both paths', async () => {
    await skill(userRoot(harness.dirs), 'review', 'name: review\ndescription: from home');
    await skill(projectRoot(harness.dirs), 'review', 'name: review\ndescription: from the project');
    await trust();
    harness.server.script([{ text: 'ok' }]);
    const r = await run('go');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("conch: skill 'review': .agents/skills/review/SKILL.md overrides ~/.agents/skills/review/SKILL.md\n");
    expect(system()).toContain('- review: from the project (.agents/skills/review/SKILL.md)');
    expect(system()).not.toContain('from home');
  });

  test('no catalog with --no-filesystem (the model could not read a skill), nor without skills', async () => {
    harness.server.script([{ text: 'ok' }, { text: 'ok' }]);
    expect((await run('go')).code).toBe(0);
    expect(system()).not.toContain('# Skills');
    await skill(userRoot(harness.dirs), 'notes', 'name: notes\ndescription: Write release notes.');
    harness.server.requests.length = 0;
    expect((await run('--no-filesystem', 'go')).code).toBe(0);
    expect(system()).not.toContain('# Skills');
    expect(system()).not.toContain('notes');
  });

  test('allowed-tools narrows the catalog under --skill and never widens it', async () => {
    await skill(userRoot(harness.dirs), 'inspect', 'name: inspect\ndescription: Look around.\nallowed-tools: Read Bash(git status:*) WebFetch');
    harness.server.script([{ text: 'ok' }, { text: 'ok' }, { text: 'ok' }, { text: 'ok' }]);
    expect((await run('go')).code).toBe(0);
    expect(toolNames().sort()).toEqual(['bash', 'edit', 'read', 'write']);

    harness.server.requests.length = 0;
    const r = await run('--skill', 'inspect', 'go');
    expect(r.code).toBe(0);
    expect(toolNames().sort()).toEqual(['bash', 'read']);
    expect(r.stderr).toContain("conch: skill 'inspect' narrows the tools to bash, read (allowed-tools); the command patterns in Bash(git status:*) are not enforced, only the tool");

    harness.server.requests.length = 0;
    const narrow = await run('--no-shell', '--skill', 'inspect', 'go');
    expect(narrow.code).toBe(0);
    expect(toolNames()).toEqual(['read']);

    // Two skills: each narrows what the other left.
    await skill(userRoot(harness.dirs), 'editor', 'name: editor\ndescription: Edit.\nallowed-tools: read, edit');
    harness.server.requests.length = 0;
    expect((await run('--skill', 'inspect', '--skill', 'editor', 'go')).code).toBe(0);
    expect(toolNames()).toEqual(['read']);
  });

  test('a skill the read policy denies is left out of the catalog, saying why', async () => {
    await skill(userRoot(harness.dirs), 'secret', 'name: secret\ndescription: Hidden by policy.');
    await skill(userRoot(harness.dirs), 'open', 'name: open\ndescription: Readable.');
    await writeConfig(harness.dirs, { read: { deny: [join(userRoot(harness.dirs), 'secret')] } });
    harness.server.script([{ text: 'ok' }]);
    const r = await run('go');
    expect(r.code).toBe(0);
    expect(system()).toContain('- open: Readable.');
    expect(system()).not.toContain('secret');
    expect(r.stderr).toContain("conch: skill 'secret' is left out of the catalog: ~/.agents/skills/secret/SKILL.md may not be read");
  });

  test('a broken skill is reported in one line and the others load', async () => {
    await skill(userRoot(harness.dirs), 'broken', 'name: broken\ndescription: Use it when: always');
    await skill(userRoot(harness.dirs), 'fine', 'name: fine\ndescription: Works.');
    harness.server.script([{ text: 'ok' }]);
    const r = await run('go');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('conch: skill ~/.agents/skills/broken/SKILL.md skipped: invalid YAML at line 3');
    expect(system()).toContain('- fine: Works.');
  });
});
