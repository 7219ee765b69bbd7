// `conch skills` through the real CLI: what a user sees about the skills conch found, in an
// isolated HOME and config dir.
import { describe, expect, test } from 'bun:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runConch, useHarness, type Sandbox } from '../support/cli.ts';

const harness = useHarness(async (d) => {
  await mkdir(join(d.workspace, '.git'));
});

async function skill(root: string, dir: string, frontmatter: string, body = 'Steps.\n'): Promise<void> {
  await mkdir(join(root, dir), { recursive: true });
  await writeFile(join(root, dir, 'SKILL.md'), `---\n${frontmatter}\n---\n${body}`);
}
const userRoot = (d: Sandbox) => join(d.home, '.agents', 'skills');
const conchRoot = (d: Sandbox) => join(d.configHome, 'conch', 'skills');
const projectRoot = (d: Sandbox) => join(d.workspace, '.agents', 'skills');
const conch = (...args: string[]) => runConch({ dirs: harness.dirs, args });

describe('conch skills', () => {
  test('no skills: says where they would be, exit 0', async () => {
    const r = await conch('skills');
    expect(r.code).toBe(0);
    // conch's own folder where XDG_CONFIG_HOME puts it, not a fixed ~/.config/conch.
    expect(r.stdout).toBe(`Skills: none found. A skill is a folder with a SKILL.md, in ~/.agents/skills, ${conchRoot(harness.dirs)} or the project's .agents/skills.\n`);
    expect(r.stderr).toBe('');
  });

  test('--json: each SKILL.md with name, source, status, path and diagnostics', async () => {
    const d = harness.dirs;
    await skill(userRoot(d), 'review', 'name: review\ndescription: Review a change.\nlicense: MIT');
    await skill(conchRoot(d), 'deploy', 'name: deploy\ndescription: Deploy it.\ndisable-model-invocation: true\nallowed-tools: Bash(git push:*) Read');
    const r = await conch('skills', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc).toEqual({
      trusted: false,
      untrusted: 0,
      skills: [
        { name: 'review', source: 'user', status: 'loaded', path: '~/.agents/skills/review/SKILL.md', file: join(userRoot(d), 'review', 'SKILL.md'), description: 'Review a change.', modelInvocation: true, diagnostics: [] },
        { name: 'deploy', source: 'conch', status: 'loaded', path: join(conchRoot(d), 'deploy', 'SKILL.md'), file: join(conchRoot(d), 'deploy', 'SKILL.md'), description: 'Deploy it.', modelInvocation: false, allowedTools: ['bash', 'read'], diagnostics: [] },
      ],
    });
  });

  test('each diagnostic: bad name, name not its directory, missing description, invalid YAML with line, body too large', async () => {
    const root = userRoot(harness.dirs);
    await skill(root, 'Bad_Name', 'name: Bad_Name\ndescription: d');
    await skill(root, 'elsewhere', 'name: other-name\ndescription: d');
    await skill(root, 'no-description', 'name: no-description');
    await skill(root, 'broken-yaml', 'name: broken-yaml\ndescription: Use it when: always');
    await skill(root, 'huge', 'name: huge\ndescription: d', 'x'.repeat(70 * 1024));
    const r = await conch('skills');
    expect(r.code).toBe(1);
    const out = r.stdout;
    expect(out).toContain('Skills (3 loaded):');
    expect(out).toContain("warning: name 'Bad_Name' should use only lowercase letters, digits and single hyphens");
    expect(out).toContain("warning: name 'other-name' differs from its directory name 'elsewhere'");
    expect(out).toMatch(/no-description +~\/\.agents\/skills\/no-description\/SKILL\.md {2}\(skipped; ~\/\.agents\/skills\)/);
    expect(out).toContain('error: has no `description`; the model chooses skills by their description, so this one is skipped');
    expect(out).toContain('error: invalid YAML at line 3: Nested mappings are not allowed in compact mappings (a value containing ": " must be quoted)');
    expect(out).toContain('warning: the body is 70 KiB, over the 64 KiB limit');
    const doc = JSON.parse((await conch('skills', '--json')).stdout);
    const codes = Object.fromEntries(doc.skills.map((s: any) => [s.name, s.diagnostics.map((x: any) => `${x.level}:${x.code}${x.line ? `@${x.line}` : ''}`)]));
    expect(codes).toEqual({
      'Bad_Name': ['warning:name'],
      'broken-yaml': ['error:yaml@3'],
      'other-name': ['warning:name'],
      huge: ['warning:body_size'],
      'no-description': ['error:description'],
    });
  });

  test('precedence: a project skill overrides one in ~/.agents; the listing names the winner', async () => {
    const d = harness.dirs;
    await skill(userRoot(d), 'review', 'name: review\ndescription: from home');
    await skill(projectRoot(d), 'review', 'name: review\ndescription: from the project');
    expect((await conch('trust')).code).toBe(0);
    const doc = JSON.parse((await conch('skills', '--json')).stdout);
    expect(doc.trusted).toBe(true);
    expect(doc.skills.map((s: any) => [s.source, s.status, s.description])).toEqual([
      ['user', 'overridden', 'from home'],
      ['project', 'loaded', 'from the project'],
    ]);
    expect(doc.skills[0].overriddenBy).toBe(join(projectRoot(d), 'review', 'SKILL.md'));
    const text = (await conch('skills')).stdout;
    expect(text).toContain('overridden by .agents/skills/review/SKILL.md');
  });

  test('an untrusted workspace: project skills listed as untrusted, not loaded', async () => {
    await skill(projectRoot(harness.dirs), 'theirs', 'name: theirs\ndescription: from the repo');
    const r = await conch('skills');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Skills (0 loaded):');
    expect(r.stdout).toContain('theirs                   .agents/skills/theirs/SKILL.md  (untrusted; project)');
    expect(r.stdout).toContain('not loaded: this workspace is not trusted (run `conch trust`)');
  });

  test("a cloned repository's SKILL.md cannot send escape sequences to the terminal (OSC 52, the title) through conch skills", async () => {
    const d = harness.dirs;
    await skill(projectRoot(d), 'evil\x1b]0;owned\x07', 'name: evil\ndescription: "Looks fine \\e]52;c;cm0gLXJmIH4=\\a here"');
    const untrusted = await conch('skills');
    expect(untrusted.stdout).toContain('not loaded: this workspace is not trusted');
    expect(untrusted.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    expect((await conch('trust')).code).toBe(0);
    const trusted = await conch('skills');
    expect(trusted.stdout).toContain('Looks fine');
    expect(trusted.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });
});
