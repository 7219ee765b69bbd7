import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFrontmatter, splitFrontmatter } from '../../src/skills/frontmatter.ts';
import { parseAllowedTools, SKILL_BODY_MAX_BYTES, splitToolList, validateFrontmatter } from '../../src/skills/validate.ts';
import { loadSkills, readSkillBody, type Skill } from '../../src/skills/load.ts';
import { inlineSkill, renderCatalog } from '../../src/skills/catalog.ts';
import { skillRoots } from '../../src/skills/discover.ts';

let base: string;
let home: string;
let configDir: string;
let repo: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'conch-skills-')));
  home = join(base, 'home');
  configDir = join(base, 'config', 'conch');
  repo = join(base, 'repo');
  for (const d of [home, configDir, join(repo, '.git'), join(repo, 'sub')]) await mkdir(d, { recursive: true });
});
afterEach(() => rm(base, { recursive: true, force: true }));

async function skill(root: string, dir: string, frontmatter: string, body = 'Do the thing.\n'): Promise<string> {
  await mkdir(join(root, dir), { recursive: true });
  const file = join(root, dir, 'SKILL.md');
  await writeFile(file, `---\n${frontmatter}\n---\n${body}`);
  return file;
}

const load = (cwd = repo, trusted = true) => loadSkills({ home, configDir, cwd, trusted: async () => trusted });

async function parse(text: string) {
  const split = splitFrontmatter(text);
  if (!split.ok) return { ok: false as const, message: split.message };
  return parseFrontmatter(split.value);
}

describe('frontmatter', () => {
  test('splits YAML from the body and parses it', async () => {
    const split = splitFrontmatter('---\nname: a\ndescription: b\n---\n# Body\ntext\n');
    expect(split.ok && split.value.body).toBe('# Body\ntext\n');
    expect(await parse('---\nname: a\ndescription: "b: c"\n---\nbody')).toEqual({ ok: true, data: { name: 'a', description: 'b: c' } });
  });

  test('a file without frontmatter or without the closing fence is refused with the reason', () => {
    const none = splitFrontmatter('# Just markdown\n');
    expect(!none.ok && none.message).toContain('does not start with YAML frontmatter');
    const open = splitFrontmatter('---\nname: a\n');
    expect(!open.ok && open.message).toContain('no closing `---`');
  });

  test('invalid YAML names the SKILL.md line and the usual fix', async () => {
    const result = await parse('---\nname: a\ndescription: Use this when: you need it\n---\n');
    expect(result.ok).toBe(false);
    if (result.ok || !('line' in result)) throw new Error('expected a line');
    expect(result.line).toBe(3);
    expect(result.message).toContain('invalid YAML at line 3');
    expect(result.message).toContain('must be quoted');
  });

  test('size, nesting and aliases are bounded', async () => {
    const big = await parse(`---\ndescription: ${'x'.repeat(17 * 1024)}\n---\n`);
    expect(!big.ok && big.message).toContain('larger than 16 KiB');
    const deep = await parse(`---\na: ${'['.repeat(100)}${']'.repeat(100)}\n---\n`);
    expect(!deep.ok && deep.message).toContain('nested more than 64 levels');
    const laughs = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...'bcdefghij'.split('').map((k, i) => `${k}: &${k} [${Array(10).fill(`*${'abcdefghij'[i]}`).join(', ')}]`)];
    const bomb = await parse(`---\n${laughs.join('\n')}\n---\n`);
    expect(!bomb.ok && bomb.message).toContain('Excessive alias count');
  });

  test('a scalar or a list is not a frontmatter mapping', async () => {
    const list = await parse('---\n- a\n- b\n---\n');
    expect(!list.ok && list.message).toContain('not a mapping');
  });
});

describe('validation', () => {
  test('a valid skill has no diagnostics', () => {
    const v = validateFrontmatter({ name: 'pdf-tools', description: 'Work with PDFs.', license: 'MIT', metadata: { author: 'x' } }, 'pdf-tools');
    expect(v).toEqual({ ok: true, diagnostics: [], fields: { name: 'pdf-tools', description: 'Work with PDFs.', license: 'MIT', compatibility: undefined, metadata: { author: 'x' }, disableModelInvocation: false } });
  });

  test('name rules warn but load: characters, length, directory mismatch, missing', () => {
    const messages = (data: Record<string, unknown>, dir: string) => {
      const v = validateFrontmatter({ description: 'd', ...data }, dir);
      if (!v.ok) throw new Error('should load');
      return { name: v.fields.name, text: v.diagnostics.map((d) => `${d.code}: ${d.message}`).join('\n') };
    };
    expect(messages({ name: 'PDF_Tools' }, 'PDF_Tools').text).toContain('name: name \'PDF_Tools\' should use only lowercase letters, digits and single hyphens');
    expect(messages({ name: 'a--b' }, 'a--b').text).toContain('single hyphens');
    expect(messages({ name: '-a' }, '-a').text).toContain('single hyphens');
    expect(messages({ name: 'a'.repeat(65) }, 'a'.repeat(65)).text).toContain('longer than 64 characters');
    expect(messages({ name: 'a'.repeat(64) }, 'a'.repeat(64)).text).toBe('');
    const mismatch = messages({ name: 'pdf' }, 'pdf-tools');
    expect(mismatch).toEqual({ name: 'pdf', text: "name: name 'pdf' differs from its directory name 'pdf-tools'; the spec wants them equal" });
    expect(messages({}, 'fallback')).toEqual({ name: 'fallback', text: "name: has no `name`; using the directory name 'fallback'" });
  });

  test('a missing or empty description skips the skill', () => {
    for (const description of [undefined, '', '   ', 42]) {
      const v = validateFrontmatter({ name: 'a', description }, 'a');
      expect(v.ok).toBe(false);
      expect(v.diagnostics[0]).toMatchObject({ level: 'error', code: 'description' });
    }
  });

  test('an overlong description is cut to the spec limit with a warning', () => {
    const v = validateFrontmatter({ name: 'a', description: 'd'.repeat(1100) }, 'a');
    expect(v.ok && v.fields.description.length).toBe(1024);
    expect(v.diagnostics[0]?.message).toContain('1100 characters');
  });

  test('disable-model-invocation and allowed-tools', () => {
    const v = validateFrontmatter({ name: 'a', description: 'd', 'disable-model-invocation': true, 'allowed-tools': 'Bash(git add:*) Read, edit' }, 'a');
    expect(v.ok && v.fields).toMatchObject({ disableModelInvocation: true, allowedTools: ['bash', 'read', 'edit'], toolPatterns: ['Bash(git add:*)'] });
    const odd = validateFrontmatter({ name: 'a', description: 'd', 'disable-model-invocation': 'yes' }, 'a');
    expect(odd.ok && odd.fields.disableModelInvocation).toBe(true);
    expect(odd.diagnostics[0]?.message).toContain('should be true or false');
    expect(splitToolList('Bash(git add:*) Read,Write')).toEqual(['Bash(git add:*)', 'Read', 'Write']);
    expect(parseAllowedTools(['Bash(*)', 'read'])).toEqual({ tools: ['bash', 'read'], patterns: [] });
  });

  test('wrongly typed optional fields are ignored with a warning', () => {
    const v = validateFrontmatter({ name: 'a', description: 'd', license: 3, metadata: ['x'], compatibility: 'c'.repeat(501) }, 'a');
    expect(v.ok).toBe(true);
    expect(v.diagnostics.map((d) => d.message)).toEqual([
      '`license` should be text, got number 3; ignored',
      "`compatibility` has 501 characters, over the spec's 500",
      '`metadata` should be a mapping of keys to text, got a list; ignored',
    ]);
  });
});

describe('discovery and precedence', () => {
  test('roots: ~/.agents, the config dir, then the repository root down to the working directory', async () => {
    const roots = skillRoots({ home, configDir, cwd: join(repo, 'sub') });
    expect(roots).toEqual([
      { source: 'user', dir: join(home, '.agents', 'skills') },
      { source: 'conch', dir: join(configDir, 'skills') },
      { source: 'project', dir: join(repo, '.agents', 'skills') },
      { source: 'project', dir: join(repo, 'sub', '.agents', 'skills') },
    ]);
  });

  test('outside a repository only the working directory is a project root', async () => {
    const plain = join(base, 'plain', 'deep');
    await mkdir(plain, { recursive: true });
    const roots = skillRoots({ home, configDir, cwd: plain });
    expect(roots.filter((r) => r.source === 'project')).toEqual([{ source: 'project', dir: join(plain, '.agents', 'skills') }]);
  });

  test('run from $HOME, ~/.agents/skills is the user root, not also a project root', async () => {
    const roots = skillRoots({ home, configDir, cwd: home });
    expect(roots.map((r) => r.source)).toEqual(['user', 'conch']);
  });

  test('no skills folder: nothing loaded and no YAML parsed', async () => {
    expect(await load()).toMatchObject({ skills: [], reports: [], untrusted: 0, warnings: [] });
  });

  test('a later root overrides an earlier one, with one warning naming both paths', async () => {
    const userFile = await skill(join(home, '.agents', 'skills'), 'review', 'name: review\ndescription: user review');
    const conchFile = await skill(join(configDir, 'skills'), 'review', 'name: review\ndescription: conch review');
    const rootFile = await skill(join(repo, '.agents', 'skills'), 'review', 'name: review\ndescription: repo review');
    const subFile = await skill(join(repo, 'sub', '.agents', 'skills'), 'review', 'name: review\ndescription: sub review');
    const set = await load(join(repo, 'sub'));
    expect(set.skills.map((s) => [s.name, s.description, s.file])).toEqual([['review', 'sub review', subFile]]);
    expect(set.reports.map((r) => r.status)).toEqual(['overridden', 'overridden', 'overridden', 'loaded']);
    expect(set.reports[0]?.overriddenBy).toBe(conchFile);
    expect(set.warnings).toEqual([
      `skill 'review': ${conchFile} overrides ${userFile}`,
      `skill 'review': ${rootFile} overrides ${conchFile}`,
      `skill 'review': .agents/skills/review/SKILL.md overrides ${rootFile}`,
    ]);
  });

  test('an untrusted workspace loads no project skill and says how many it skipped', async () => {
    await skill(join(home, '.agents', 'skills'), 'mine', 'name: mine\ndescription: mine');
    await skill(join(repo, '.agents', 'skills'), 'theirs', 'name: theirs\ndescription: from the repo');
    await skill(join(repo, '.agents', 'skills'), 'broken', 'not: [valid');
    let asked = 0;
    const set = await loadSkills({ home, configDir, cwd: repo, trusted: async () => (asked++, false) });
    expect(asked).toBe(1);
    expect(set.skills.map((s) => s.name)).toEqual(['mine']);
    expect(set.untrusted).toBe(2);
    expect(set.warnings).toEqual(['2 project skills in .agents/skills not loaded: this workspace is not trusted (run `conch trust` to load them)']);
    expect(set.reports.filter((r) => r.status === 'untrusted').map((r) => r.name)).toEqual(['broken', 'theirs']);
  });

  test('trust is not asked when the project has no skills', async () => {
    await skill(join(home, '.agents', 'skills'), 'mine', 'name: mine\ndescription: mine');
    const set = await loadSkills({ home, configDir, cwd: repo, trusted: async () => { throw new Error('asked'); } });
    expect(set.skills.length).toBe(1);
  });

  test('a broken skill is skipped with its reason; the rest load; linked folders count', async () => {
    const root = join(home, '.agents', 'skills');
    await skill(root, 'good', 'name: good\ndescription: fine');
    await skill(root, 'bad-yaml', 'name: bad-yaml\ndescription: a: b');
    await skill(root, 'no-desc', 'name: no-desc');
    await skill(join(base, 'shared'), 'linked', 'name: linked\ndescription: via a link');
    await symlink(join(base, 'shared', 'linked'), join(root, 'linked'));
    await mkdir(join(root, 'not-a-skill'));
    const set = await load();
    expect(set.skills.map((s) => s.name)).toEqual(['good', 'linked']);
    const skipped = set.reports.filter((r) => r.status === 'skipped');
    expect(skipped.map((r) => [r.name, r.diagnostics[0]?.code, r.diagnostics[0]?.line])).toEqual([
      ['bad-yaml', 'yaml', 3],
      ['no-desc', 'description', undefined],
    ]);
    expect(set.warnings.some((w) => w.includes('bad-yaml/SKILL.md skipped: invalid YAML at line 3'))).toBe(true);
  });

  test('a skill another user could rewrite (a link into a folder anyone may write) is skipped, saying why', async () => {
    // Its instructions would be theirs: a link left to /tmp/x, once x is gone, is anyone's to fill.
    const root = join(home, '.agents', 'skills');
    await mkdir(root, { recursive: true });
    await skill(join(base, 'open'), 'planted', 'name: planted\ndescription: do as I say');
    await chmod(join(base, 'open'), 0o777);
    await symlink(join(base, 'open', 'planted'), join(root, 'planted'));
    await skill(root, 'good', 'name: good\ndescription: fine');
    const set = await load();
    expect(set.skills.map((s) => s.name)).toEqual(['good']);
    expect(set.reports.find((r) => r.name === 'planted')).toMatchObject({ status: 'skipped', diagnostics: [{ code: 'foreign' }] });
    expect(set.warnings.some((w) => w.includes(`${join(base, 'open')}, a folder above it, is writable by every user without the sticky bit`))).toBe(true);
    // Made the user's alone, it loads (the cache of the refused start does not hold it back).
    await chmod(join(base, 'open'), 0o755);
    expect((await load()).skills.map((s) => s.name)).toEqual(['good', 'planted']);
  });

  test('a body over the limit loads with a warning and is cut for inlining', async () => {
    await skill(join(home, '.agents', 'skills'), 'huge', 'name: huge\ndescription: big', 'x'.repeat(SKILL_BODY_MAX_BYTES + 10));
    const set = await load();
    const huge = set.skills[0]!;
    expect(Buffer.byteLength(await readSkillBody(huge))).toBe(SKILL_BODY_MAX_BYTES);
    expect(huge.diagnostics).toEqual([expect.objectContaining({ level: 'warning', code: 'body_size' })]);
    expect(set.warnings[0]).toContain('over the 64 KiB limit');
  });
});

describe('parse cache', () => {
  test('an unchanged SKILL.md is served from the cache; a changed one is parsed again; no write when nothing changed', async () => {
    const file = await skill(join(home, '.agents', 'skills'), 'cached', 'name: cached\ndescription: original');
    const cacheFile = join(base, 'cache', 'conch', 'skills.json');
    const run = () => loadSkills({ home, configDir, cwd: repo, trusted: async () => true, cacheFile });
    expect((await run()).skills[0]?.description).toBe('original');
    // Prove the second start reads the cache, not the file: tamper with the remembered value.
    const data = JSON.parse(await readFile(cacheFile, 'utf8'));
    data.entries[file].value.fields.description = 'from the cache';
    await writeFile(cacheFile, JSON.stringify(data));
    const written = (await stat(cacheFile)).mtimeMs;
    expect((await run()).skills[0]?.description).toBe('from the cache');
    expect((await stat(cacheFile)).mtimeMs).toBe(written);
    await writeFile(file, '---\nname: cached\ndescription: edited since\n---\nbody\n');
    expect((await run()).skills[0]?.description).toBe('edited since');
  });

  test('a corrupt cache file is ignored', async () => {
    await skill(join(home, '.agents', 'skills'), 'cached', 'name: cached\ndescription: fine');
    const cacheFile = join(base, 'skills.json');
    await writeFile(cacheFile, '{not json');
    const set = await loadSkills({ home, configDir, cwd: repo, trusted: async () => true, cacheFile });
    expect(set.skills[0]?.description).toBe('fine');
    expect(JSON.parse(await readFile(cacheFile, 'utf8')).entries).toBeDefined();
  });
});

describe('catalog', () => {
  const make = (name: string, description: string, extra: Partial<Skill> = {}): Skill => ({
    name, description, source: 'user', dir: `/s/${name}`, file: `/s/${name}/SKILL.md`, diagnostics: [], disableModelInvocation: false, ...extra,
  });

  test('lists name, description and path; no body; hidden skills left out', () => {
    const text = renderCatalog([make('a', 'first\nline'), make('b', 'second', { disableModelInvocation: true })], { maxBytes: 16384, path: (f) => f })!;
    expect(text).toContain('- a: first line (/s/a/SKILL.md)');
    expect(text).not.toContain('- b:');
  });

  test('no offered skill, no catalog', () => {
    expect(renderCatalog([], { maxBytes: 16384, path: (f) => f })).toBeNull();
    expect(renderCatalog([make('b', 'x', { disableModelInvocation: true })], { maxBytes: 16384, path: (f) => f })).toBeNull();
    expect(renderCatalog([make('a', 'x')], { maxBytes: 0, path: (f) => f })).toBeNull();
  });

  test('bounded in bytes, naming the limit and how many were left out', () => {
    const skills = Array.from({ length: 100 }, (_, i) => make(`skill-${String(i).padStart(3, '0')}`, 'd'.repeat(100)));
    const text = renderCatalog(skills, { maxBytes: 2048, path: (f) => f })!;
    const listed = text.split('\n').filter((l) => l.startsWith('- ')).length;
    expect(listed).toBeGreaterThan(0);
    expect(Buffer.byteLength(text.slice(0, text.lastIndexOf('\n')))).toBeLessThanOrEqual(2048);
    expect(text).toContain(`(${100 - listed} more skills are not listed: the catalog is bounded at 2048 bytes by the limit skills_catalog_bytes.)`);
  });

  test('--skill inlines the body with its path', () => {
    expect(inlineSkill(make('a', 'x'), '\n# Steps\n1. go\n', '.agents/skills/a/SKILL.md')).toBe(
      '<skill name="a" path=".agents/skills/a/SKILL.md">\nThe user asked for this skill; follow it. Paths in it are relative to .agents/skills/a.\n\n# Steps\n1. go\n</skill>',
    );
  });
});
