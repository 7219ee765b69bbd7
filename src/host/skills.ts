// The skills step of a host start: load the skills for this workspace, apply --skill (its body goes
// in front of the task, its allowed-tools narrow the catalog), and render the catalog the model gets,
// which lists only skills it can open with `read` under the read policy.
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Config } from '../config/types.ts';
import type { ContentBlock } from '../core/content.ts';
import { workspaceTrusted } from '../plugins/trust.ts';
import type { Catalog } from '../tools/catalog.ts';
import type { Workspace } from '../workspace/paths.ts';
import { defaultCacheDir } from '../plugins/cache-dir.ts';
import { displayPath } from '../core/display-path.ts';
import { loadSkills, NO_SKILLS, readSkillBody, skillPlaces, type Skill, type SkillSet } from '../skills/load.ts';
import { inlineSkill, renderCatalog } from '../skills/catalog.ts';

export interface RunSkills {
  set: SkillSet;
  /** The catalog for the system prompt, or null (no skills, or no `read` to open one with). */
  catalog: string | null;
  /** --skill bodies, one text each, to go in front of the task. */
  preface: string[];
  warnings: string[];
}

export type PrepareResult = { ok: true; value: RunSkills } | { ok: false; message: string };

/**
 * Everything skills contribute to a run. Call after the catalog is narrowed by flags and policy
 * and before the system prompt is built: allowed-tools narrows it further.
 */
export async function prepareSkills(config: Config, workspace: Workspace, catalog: Catalog): Promise<PrepareResult> {
  const root = workspace.root;
  const set = await loadSkills({
    home: process.env.HOME || homedir(),
    configDir: config.configDir,
    cwd: root,
    trusted: () => workspaceTrusted(config.configDir, root),
    cacheFile: join(dirname(defaultCacheDir()), 'skills.json'),
  });
  const warnings = [...set.warnings];
  const show = (file: string) => displayPath(file, root);

  const invoked: Invoked[] = [];
  for (const name of config.invokeSkills ?? []) {
    const result = await invokeSkill(set, name, workspace);
    if (!result.ok) return { ok: false, message: `--skill ${result.message}` };
    invoked.push(result);
  }
  for (const { skill } of invoked) {
    if (!skill.allowedTools) continue;
    const allowed = new Set(skill.allowedTools);
    for (const tool of catalog.names()) if (!allowed.has(tool)) catalog.remove(tool, `not in the allowed-tools of skill '${skill.name}'`);
    const patterns = skill.toolPatterns?.length ? `; the command patterns in ${skill.toolPatterns.join(' ')} are not enforced, only the tool (use shell command rules for that)` : '';
    warnings.push(`skill '${skill.name}' narrows the tools to ${catalog.names().join(', ') || '(none)'} (allowed-tools)${patterns}`);
  }

  let text: string | null = null;
  if (catalog.has('read') && set.skills.length > 0) {
    const readable: Skill[] = [];
    for (const skill of set.skills.filter((s) => !s.disableModelInvocation)) {
      const denied = await readDenial(workspace, skill.file);
      if (denied) warnings.push(`skill '${skill.name}' is left out of the catalog: ${show(skill.file)} may not be read (${denied})`);
      else readable.push(skill);
    }
    text = renderCatalog(readable, { maxBytes: config.limits.skills_catalog_bytes, path: show });
  }
  const preface = invoked.map((i) => i.text);
  return { ok: true, value: { set, catalog: text, preface, warnings } };
}

export const NO_RUN_SKILLS: RunSkills = { set: NO_SKILLS, catalog: null, preface: [], warnings: [] };

type Invoked = { ok: true; skill: Skill; text: string };

/**
 * A skill the user named (--skill, or a slash command in an editor): its body, ready to go in front
 * of the task, or why not. The SKILL.md must pass the read policy like any file the model reads.
 */
export async function invokeSkill(set: SkillSet, name: string, workspace: Workspace): Promise<Invoked | { ok: false; message: string }> {
  const show = (file: string) => displayPath(file, workspace.root);
  const skill = set.skills.find((s) => s.name === name);
  if (!skill) return { ok: false, message: missingSkill(name, set, show) };
  const denied = await readDenial(workspace, skill.file);
  if (denied) return { ok: false, message: `${name}: ${show(skill.file)} may not be read: ${denied}` };
  try {
    return { ok: true, skill, text: inlineSkill(skill, await readSkillBody(skill), show(skill.file)) };
  } catch (error) {
    return { ok: false, message: `${name}: ${(error as Error).message}` };
  }
}

/** The read policy's refusal of a path, or null when `read` may open it. */
async function readDenial(workspace: Workspace, file: string): Promise<string | null> {
  try {
    await workspace.resolve(file, 'read');
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

function missingSkill(name: string, set: SkillSet, show: (file: string) => string): string {
  const report = [...set.reports].reverse().find((r) => r.name === name);
  if (report?.status === 'untrusted') {
    return `${name}: ${show(report.file)} is a project skill and this workspace is not trusted; run \`conch trust\` to load its skills`;
  }
  if (report?.status === 'skipped') {
    return `${name}: ${show(report.file)} was skipped: ${report.diagnostics.map((d) => d.message).join('; ')}. Fix it (see \`conch skills\`)`;
  }
  const names = set.skills.map((s) => s.name);
  return `${name}: no skill of that name; ${names.length ? `found: ${names.join(', ')}` : `none found in ${skillPlaces(set)}`} (see \`conch skills\`)`;
}

/** `text` in front of a task, in its first text block (some local servers take only a string). */
export function prependText(task: ContentBlock[], text: string): ContentBlock[] {
  const [first, ...rest] = task;
  if (first?.type === 'text') return [{ type: 'text', text: `${text}\n\n${first.text}` }, ...rest];
  return [{ type: 'text', text }, ...task];
}
