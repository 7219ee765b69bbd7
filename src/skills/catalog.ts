// What the model learns about skills up front: a compact catalog (name, description, where SKILL.md
// is), bounded in bytes. Bodies stay on disk until the model reads one (progressive disclosure), or
// until the user names a skill with --skill, which puts its body into the task.
import type { Skill } from './load.ts';

const HEADER = [
  '# Skills',
  'Skills are folders of instructions for particular tasks. When the task matches a skill\'s description, read its SKILL.md with the read tool before you act, then follow it. Paths in a skill are relative to its folder; read the files it mentions only when you need them.',
];

/**
 * The catalog for the system prompt, or null when no skill may be chosen by the model.
 * `path` shows a SKILL.md the way the read tool accepts it (workspace-relative, or ~/…).
 */
export function renderCatalog(skills: Skill[], opts: { maxBytes: number; path: (file: string) => string }): string | null {
  const offered = skills.filter((s) => !s.disableModelInvocation);
  if (offered.length === 0) return null;
  const lines = [...HEADER];
  let bytes = Buffer.byteLength(lines.join('\n'));
  // A budget too small for the header (skills_catalog_bytes=0) turns the catalog off.
  if (bytes > opts.maxBytes) return null;
  let listed = 0;
  for (const skill of offered) {
    const line = `- ${oneLine(skill.name)}: ${oneLine(skill.description)} (${opts.path(skill.file)})`;
    const cost = Buffer.byteLength(line) + 1;
    if (bytes + cost > opts.maxBytes) break;
    lines.push(line);
    bytes += cost;
    listed++;
  }
  const left = offered.length - listed;
  if (left > 0) {
    lines.push(`(${left} more skill${left === 1 ? ' is' : 's are'} not listed: the catalog is bounded at ${opts.maxBytes} bytes by the limit skills_catalog_bytes.)`);
  }
  return lines.join('\n');
}

/** A skill's body, as --skill puts it in front of the task. */
export function inlineSkill(skill: Skill, body: string, path: string): string {
  return [
    `<skill name="${skill.name}" path="${path}">`,
    `The user asked for this skill; follow it. Paths in it are relative to ${path.replace(/\/?SKILL\.md$/, '') || '.'}.`,
    '',
    body.trim(),
    '</skill>',
  ].join('\n');
}

/**
 * The task as the user typed it, for listings: the --skill bodies in front of it (inlineSkill's
 * blocks) become their names, `[skill release-notes] the task`.
 */
export function withoutInlinedSkills(task: string): string {
  const names: string[] = [];
  let rest = task;
  for (;;) {
    const open = /^<skill name="([^"]*)" path="[^"]*">\n/.exec(rest);
    const close = open ? rest.indexOf('\n</skill>') : -1;
    if (!open || close === -1) break;
    names.push(open[1]!);
    rest = rest.slice(close + '\n</skill>'.length).replace(/^\n\n/, '');
  }
  return names.length ? `[skill ${names.join(', ')}] ${rest}`.trim() : task;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
