// `conch skills [--json]`: every SKILL.md conch found, where it came from, whether the model is
// offered it, and what is wrong with it. Exit 1 when a skill was skipped for a problem, so a CI step
// that checks a repository's skills can fail on it; an untrusted workspace is not a problem.
import { displayPath } from '../core/display-path.ts';
import { skillPlaces, type SkillReport, type SkillSet } from '../skills/load.ts';
import type { CommandIO } from './tools-command.ts';
import { terminalSafe } from './tool-lines.ts';

export interface SkillsListOptions {
  set: SkillSet;
  cwd: string;
  /** Whether the workspace is trusted (project skills load only then). */
  trusted: boolean;
  json: boolean;
  io: CommandIO;
}

const SOURCE_LABEL: Record<SkillReport['source'], string> = { user: '~/.agents/skills', conch: 'conch config', project: 'project' };

export function skillsList(opts: SkillsListOptions): number {
  const { set, io } = opts;
  const failed = set.reports.some((r) => r.status === 'skipped');
  if (opts.json) {
    const skills = set.reports.map(({ name, source, status, file, ...rest }) => ({ name, source, status, path: displayPath(file, opts.cwd), file, ...rest }));
    io.out(`${JSON.stringify({ skills, trusted: opts.trusted, untrusted: set.untrusted }, null, 2)}\n`);
    return failed ? 1 : 0;
  }
  if (set.reports.length === 0) {
    io.out(`Skills: none found. A skill is a folder with a SKILL.md, in ${skillPlaces(set)}.\n`);
    return 0;
  }
  const loaded = set.reports.filter((r) => r.status === 'loaded').length;
  const lines = [`Skills (${loaded} loaded):`];
  for (const r of set.reports) {
    const traits = [SOURCE_LABEL[r.source]];
    if (r.status !== 'loaded') traits.unshift(r.status);
    if (r.modelInvocation === false) traits.push('only with --skill');
    if (r.allowedTools) traits.push(`tools: ${r.allowedTools.join(', ') || '(none)'}`);
    lines.push(`  ${r.name.padEnd(24)} ${displayPath(r.file, opts.cwd)}  (${traits.join('; ')})`);
    if (r.description) lines.push(`      ${oneLine(r.description, 96)}`);
    if (r.overriddenBy) lines.push(`      overridden by ${displayPath(r.overriddenBy, opts.cwd)}`);
    if (r.status === 'untrusted') lines.push('      not loaded: this workspace is not trusted (run `conch trust`)');
    for (const d of r.diagnostics) lines.push(`      ${d.level}: ${d.message}`);
  }
  // Names, descriptions and paths come from the repository's folders: nothing in them reaches the terminal as a control sequence.
  io.out(`${terminalSafe(lines.join('\n'))}\n`);
  return failed ? 1 : 0;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
