import { describe, expect, test } from 'bun:test';
import { skillCommands, slashSkill, withSkillText } from '../../src/acp/skill-commands.ts';
import { prependText } from '../../src/host/skills.ts';
import type { Skill } from '../../src/skills/load.ts';

const skill = (name: string, description = `The ${name} skill.`): Skill => ({
  name, description, source: 'user', dir: `/s/${name}`, file: `/s/${name}/SKILL.md`, diagnostics: [], disableModelInvocation: false,
});
const skills = [skill('release'), skill('deploy')];
const text = (t: string) => [{ type: 'text' as const, text: t }];

describe('skills as slash commands', () => {
  test('a command per skill, its description on one bounded line', () => {
    const [long] = skillCommands([skill('long', `first\nsecond ${'x'.repeat(300)}`)]);
    expect(long!.description.startsWith('first second x')).toBe(true);
    expect(long!.description.length).toBe(200);
    expect(long!.description.endsWith('…')).toBe(true);
  });

  test('/name and the rest are recognised only for a known skill at the very start', () => {
    expect(slashSkill(text('/release v1.2\nand notes'), skills)).toEqual({ name: 'release', rest: 'v1.2\nand notes' });
    expect(slashSkill(text('  /deploy'), skills)).toEqual({ name: 'deploy', rest: '' });
    expect(slashSkill(text('/releases now'), skills)).toBeNull();
    expect(slashSkill(text('/usr/bin/env'), skills)).toBeNull();
    expect(slashSkill(text('please /release'), skills)).toBeNull();
    expect(slashSkill([{ type: 'image', mediaType: 'image/png', data: 'AA==' }, ...text('/release')], skills)).toBeNull();
  });

  test('the skill text replaces /name in the first text block; other blocks stay', () => {
    const image = { type: 'image' as const, mediaType: 'image/png', data: 'AA==' };
    expect(withSkillText([...text('/release v2'), image], '<skill>', 'v2')).toEqual([...text('<skill>\n\nv2'), image]);
    expect(withSkillText([...text('/release'), image], '<skill>', '')).toEqual([...text('<skill>'), image]);
    expect(prependText([image], 'pre')).toEqual([...text('pre'), image]);
  });
});
