// Discover, read and validate every skill; settle precedence; say what happened in one line each.
// Project skills are instructions from whoever wrote the repository, so they load only in a
// workspace the user trusted (`conch trust`), the same trust as project plugins.
import { join } from 'node:path';
import { displayPath, tildePath } from '../core/display-path.ts';
import { readSmallFile } from '../workspace/small-file.ts';
import { foreignFile } from '../workspace/foreign-writers.ts';
import { realpathSync } from 'node:fs';
import { SkillCache } from './cache.ts';
import { scanRoot, skillRoots, type SkillCandidate, type SkillSource } from './discover.ts';
import { FRONTMATTER_MAX_BYTES, parseFrontmatter, splitFrontmatter } from './frontmatter.ts';
import { SKILL_BODY_MAX_BYTES, validateFrontmatter, type Diagnostic, type SkillFields } from './validate.ts';

export interface Skill extends SkillFields {
  source: SkillSource;
  dir: string;
  file: string;
  diagnostics: Diagnostic[];
}

export type SkillStatus = 'loaded' | 'overridden' | 'skipped' | 'untrusted';

export interface SkillReport {
  /** The frontmatter name, or the directory name when it could not be read. */
  name: string;
  source: SkillSource;
  file: string;
  status: SkillStatus;
  description?: string;
  /** false when `disable-model-invocation: true` keeps it out of the catalog. */
  modelInvocation?: boolean;
  allowedTools?: string[];
  /** For `overridden`: the SKILL.md that wins. */
  overriddenBy?: string;
  diagnostics: Diagnostic[];
}

export interface SkillSet {
  /** The skills in effect after precedence, sorted by name. */
  skills: Skill[];
  /** Every SKILL.md found, in discovery order. */
  reports: SkillReport[];
  /** Project skills not loaded because the workspace is not trusted. */
  untrusted: number;
  /** One line each for the user: overrides, skipped project skills, problems. */
  warnings: string[];
  /** Where skills are looked for, as messages say it (XDG_CONFIG_HOME moves conch's folder). */
  places?: string;
}

/** The folders skills come from, for "none found" messages; the defaults when a set does not say. */
export function skillPlaces(set: SkillSet): string {
  return set.places ?? "~/.agents/skills, ~/.config/conch/skills or the project's .agents/skills";
}

export interface LoadSkillsOptions {
  home: string;
  configDir: string;
  cwd: string;
  /** Asked only when the project has skills: whether the workspace is trusted. */
  trusted: () => Promise<boolean>;
  /** Where parsed frontmatter is remembered between starts (cache.ts); absent = parse every time. */
  cacheFile?: string;
}

export const NO_SKILLS: SkillSet = { skills: [], reports: [], untrusted: 0, warnings: [] };

export async function loadSkills(opts: LoadSkillsOptions): Promise<SkillSet> {
  const found = skillRoots(opts).flatMap(scanRoot);
  const places = `${tildePath(join(opts.home, '.agents', 'skills'))}, ${tildePath(join(opts.configDir, 'skills'))} or the project's .agents/skills`;
  if (found.length === 0) return { ...NO_SKILLS, places };
  const show = (path: string) => displayPath(path, opts.cwd);

  const project = found.filter((c) => c.root.source === 'project');
  const trusted = project.length === 0 || (await opts.trusted());
  const reports: SkillReport[] = [];
  const cache = SkillCache.open<ReadResult>(opts.cacheFile ?? null);
  const parsed = await Promise.all(
    found.map(async (c) => {
      if (c.root.source === 'project' && !trusted) return null;
      // Instructions another user could rewrite (a link left to /tmp/x once it is gone, a folder a
      // team's group may write) are theirs: asked at every start, a folder's mode being no part of
      // the file's stamp the cache goes by.
      const foreign = foreignFile(canonicalFile(c.file));
      if (foreign) return { ok: false, diagnostics: [{ level: 'error', code: 'foreign', message: `${foreign}, so another user could write its instructions; make it and its folders yours alone (chmod go-w, chown) or move it` }] } satisfies ReadResult;
      const cached = cache.get(c.file, c.stamp);
      if (cached) return cached;
      const result = await readSkill(c);
      // A file that vanished or could not be read is not remembered: the next start looks again.
      if (result.ok || result.diagnostics[0]?.code !== 'unreadable') cache.set(c.file, c.stamp, result);
      return result;
    }),
  );
  await cache.save();

  const winners = new Map<string, { skill: Skill; report: SkillReport }>();
  const warnings: string[] = [];
  for (const [i, candidate] of found.entries()) {
    const result = parsed[i] ?? null;
    const base = { source: candidate.root.source, file: candidate.file };
    if (result === null) {
      reports.push({ ...base, name: candidate.dirName, status: 'untrusted', diagnostics: [] });
      continue;
    }
    if (!result.ok) {
      reports.push({ ...base, name: candidate.dirName, status: 'skipped', diagnostics: result.diagnostics });
      warnings.push(`skill ${show(candidate.file)} skipped: ${result.diagnostics.map((d) => d.message).join('; ')}`);
      continue;
    }
    const skill: Skill = { ...result.fields, source: candidate.root.source, dir: candidate.dir, file: candidate.file, diagnostics: result.diagnostics };
    const report: SkillReport = {
      ...base,
      name: skill.name,
      status: 'loaded',
      description: skill.description,
      modelInvocation: !skill.disableModelInvocation,
      ...(skill.allowedTools && { allowedTools: skill.allowedTools }),
      diagnostics: skill.diagnostics,
    };
    reports.push(report);
    if (skill.diagnostics.length) warnings.push(`skill ${show(skill.file)}: ${skill.diagnostics.map((d) => d.message).join('; ')}`);
    const earlier = winners.get(skill.name);
    if (earlier) {
      earlier.report.status = 'overridden';
      earlier.report.overriddenBy = skill.file;
      warnings.push(`skill '${skill.name}': ${show(skill.file)} overrides ${show(earlier.skill.file)}`);
    }
    winners.set(skill.name, { skill, report });
  }
  const untrusted = trusted ? 0 : project.length;
  if (untrusted) {
    warnings.push(`${untrusted} project skill${untrusted === 1 ? '' : 's'} in .agents/skills not loaded: this workspace is not trusted (run \`conch trust\` to load them)`);
  }
  const skills = [...winners.values()].map((w) => w.skill).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { skills, reports, untrusted, warnings, places };
}

/** What one SKILL.md parsed to: JSON only, since it is cached as it is. */
type ReadResult = { ok: true; fields: SkillFields; diagnostics: Diagnostic[] } | { ok: false; diagnostics: Diagnostic[] };

/** Read enough of SKILL.md to know its frontmatter and whether the body is over the limit. */
const READ_MAX_BYTES = FRONTMATTER_MAX_BYTES + SKILL_BODY_MAX_BYTES + 64;

async function readSkill(candidate: SkillCandidate): Promise<ReadResult> {
  const error = (code: Diagnostic['code'], message: string, line?: number): ReadResult => ({
    ok: false,
    diagnostics: [{ level: 'error', code, message, ...(line !== undefined && { line }) }],
  });
  let read;
  try {
    read = await readSmallFile(candidate.file, READ_MAX_BYTES);
  } catch (e) {
    return error('unreadable', `cannot read SKILL.md: ${(e as Error).message}`);
  }
  if (!read) return error('unreadable', 'SKILL.md disappeared while conch was reading it');
  const split = splitFrontmatter(read.bytes.toString('utf8'));
  if (!split.ok) return error('yaml', split.message);
  const parsed = await parseFrontmatter(split.value);
  if (!parsed.ok) return error('yaml', parsed.message, parsed.line);
  const checked = validateFrontmatter(parsed.data, candidate.dirName);
  if (!checked.ok) return { ok: false, diagnostics: checked.diagnostics };

  const diagnostics = [...checked.diagnostics];
  const bodyBytes = Buffer.byteLength(split.value.body);
  if (read.truncated || bodyBytes > SKILL_BODY_MAX_BYTES) {
    const size = read.truncated ? `more than ${SKILL_BODY_MAX_BYTES / 1024} KiB` : `${Math.ceil(bodyBytes / 1024)} KiB`;
    diagnostics.push({
      level: 'warning',
      code: 'body_size',
      message: `the body is ${size}, over the ${SKILL_BODY_MAX_BYTES / 1024} KiB limit; --skill inlines only the first ${SKILL_BODY_MAX_BYTES / 1024} KiB (move detail into references/)`,
    });
  }
  return { ok: true, fields: checked.fields, diagnostics };
}

/** A skill's body as --skill inlines it: the Markdown after the frontmatter, at most SKILL_BODY_MAX_BYTES. */
export async function readSkillBody(skill: Skill): Promise<string> {
  const read = await readSmallFile(skill.file, READ_MAX_BYTES);
  const split = read ? splitFrontmatter(read.bytes.toString('utf8')) : null;
  if (!split?.ok) throw new Error(`${skill.file} changed while conch was starting: its frontmatter is gone`);
  const body = Buffer.from(split.value.body);
  return body.length > SKILL_BODY_MAX_BYTES ? body.subarray(0, SKILL_BODY_MAX_BYTES).toString('utf8').replace(/\uFFFD$/, '') : split.value.body;
}

function canonicalFile(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path; // gone meanwhile: reading it says so
  }
}
