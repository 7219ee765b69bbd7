// Skills as slash commands in an editor: the session offers every skill it loaded through
// available_commands_update, and a prompt that starts with `/name` gets that skill's body in front of
// the rest of the prompt, as --skill does on the command line.
import type { AvailableCommand } from '@agentclientprotocol/sdk';
import type { ContentBlock } from '../core/content.ts';
import type { Skill } from '../skills/load.ts';
import { prependText } from '../host/skills.ts';

/** Editors show command descriptions in a one-line picker. */
const DESCRIPTION_MAX = 200;

export function skillCommands(skills: Skill[]): AvailableCommand[] {
  return skills.map((skill) => ({
    name: skill.name,
    description: oneLine(skill.description),
    input: { hint: 'what to do with this skill (optional)' },
  }));
}

/** `/name rest…` at the start of the prompt's first text, when `name` is one of the skills. */
export function slashSkill(task: ContentBlock[], skills: Skill[]): { name: string; rest: string } | null {
  const first = task[0];
  if (first?.type !== 'text') return null;
  const match = /^\s*\/([^\s/]+)(?:\s+([\s\S]*))?$/.exec(first.text);
  if (!match || !skills.some((s) => s.name === match[1])) return null;
  return { name: match[1]!, rest: (match[2] ?? '').trim() };
}

/** The prompt with its `/name` replaced by the skill's inlined text. */
export function withSkillText(task: ContentBlock[], skillText: string, rest: string): ContentBlock[] {
  return prependText(rest ? [{ type: 'text', text: rest }, ...task.slice(1)] : task.slice(1), skillText);
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > DESCRIPTION_MAX ? `${flat.slice(0, DESCRIPTION_MAX - 1)}…` : flat;
}
