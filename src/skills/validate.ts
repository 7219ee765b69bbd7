// The spec's rules for a skill's frontmatter (agentskills.io/specification), applied leniently as the
// spec recommends for clients: a problem conch can work around loads the skill with a warning; only a
// skill the model could not choose (no description) or conch could not read is skipped.

/** Spec: 1–64 characters, lowercase letters, digits and single hyphens, not at either end. */
export const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const NAME_MAX_CHARS = 64;
export const DESCRIPTION_MAX_CHARS = 1024;
export const COMPATIBILITY_MAX_CHARS = 500;
/**
 * A body this large belongs in references/ (the spec suggests under 5,000 tokens); `--skill` inlines
 * at most this much, and `conch skills` says so.
 */
export const SKILL_BODY_MAX_BYTES = 64 * 1024;

export type DiagnosticCode = 'name' | 'description' | 'yaml' | 'body_size' | 'field' | 'unreadable' | 'foreign';

export interface Diagnostic {
  level: 'warning' | 'error';
  code: DiagnosticCode;
  message: string;
  /** The SKILL.md line the problem is on, when known. */
  line?: number;
}

export interface SkillFields {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  /** Tool names from `allowed-tools` (lowercased, patterns stripped), when the field is present. */
  allowedTools?: string[];
  /** The raw `allowed-tools` entries that carried a pattern conch does not enforce, e.g. `Bash(git:*)`. */
  toolPatterns?: string[];
  disableModelInvocation: boolean;
}

export type Validated = { ok: true; fields: SkillFields; diagnostics: Diagnostic[] } | { ok: false; diagnostics: Diagnostic[] };

const warn = (code: DiagnosticCode, message: string): Diagnostic => ({ level: 'warning', code, message });

/** Check the parsed frontmatter of the skill in directory `dirName`. */
export function validateFrontmatter(data: Record<string, unknown>, dirName: string): Validated {
  const diagnostics: Diagnostic[] = [];
  const name = checkName(data.name, dirName, diagnostics);

  const description = typeof data.description === 'string' ? data.description.trim() : '';
  if (!description) {
    const why = data.description === undefined ? 'has no `description`' : 'has an empty or non-text `description`';
    diagnostics.push({ level: 'error', code: 'description', message: `${why}; the model chooses skills by their description, so this one is skipped` });
    return { ok: false, diagnostics };
  }
  if (description.length > DESCRIPTION_MAX_CHARS) {
    diagnostics.push(warn('description', `the description has ${description.length} characters, over the spec's ${DESCRIPTION_MAX_CHARS}; the catalog shows the first ${DESCRIPTION_MAX_CHARS}`));
  }

  const fields: SkillFields = { name, description: description.slice(0, DESCRIPTION_MAX_CHARS), disableModelInvocation: false };
  const text = (key: string, max?: number): string | undefined => {
    const value = data[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      diagnostics.push(warn('field', `\`${key}\` should be text, got ${kind(value)}; ignored`));
      return undefined;
    }
    if (max !== undefined && value.length > max) diagnostics.push(warn('field', `\`${key}\` has ${value.length} characters, over the spec's ${max}`));
    return value;
  };
  fields.license = text('license');
  fields.compatibility = text('compatibility', COMPATIBILITY_MAX_CHARS);
  if (data.metadata !== undefined && data.metadata !== null) {
    if (typeof data.metadata !== 'object' || Array.isArray(data.metadata)) diagnostics.push(warn('field', `\`metadata\` should be a mapping of keys to text, got ${kind(data.metadata)}; ignored`));
    else fields.metadata = Object.fromEntries(Object.entries(data.metadata).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  }
  const invocation = data['disable-model-invocation'];
  if (invocation !== undefined && invocation !== null) {
    if (typeof invocation === 'boolean') fields.disableModelInvocation = invocation;
    else {
      // Err on the side the author meant: anything but an explicit false hides the skill.
      fields.disableModelInvocation = !(invocation === 'false' || invocation === 0);
      diagnostics.push(warn('field', `\`disable-model-invocation\` should be true or false, got ${JSON.stringify(invocation)}; read as ${fields.disableModelInvocation}`));
    }
  }
  const allowed = data['allowed-tools'];
  if (allowed !== undefined && allowed !== null) {
    const entries = typeof allowed === 'string' ? splitToolList(allowed) : Array.isArray(allowed) ? allowed.filter((e) => typeof e === 'string') : null;
    if (!entries) diagnostics.push(warn('field', `\`allowed-tools\` should be a space-separated list of tool names, got ${kind(allowed)}; ignored`));
    else {
      const parsed = parseAllowedTools(entries);
      fields.allowedTools = parsed.tools;
      if (parsed.patterns.length) fields.toolPatterns = parsed.patterns;
    }
  }
  return { ok: true, fields, diagnostics };
}

function checkName(value: unknown, dirName: string, diagnostics: Diagnostic[]): string {
  if (typeof value !== 'string' || value === '') {
    diagnostics.push(warn('name', `${value === undefined ? 'has no `name`' : '`name` is not text'}; using the directory name '${dirName}'`));
    return dirName;
  }
  if (value.length > NAME_MAX_CHARS) diagnostics.push(warn('name', `name '${value.slice(0, 80)}' is longer than ${NAME_MAX_CHARS} characters`));
  else if (!SKILL_NAME.test(value)) diagnostics.push(warn('name', `name '${value}' should use only lowercase letters, digits and single hyphens (not at the start or end)`));
  if (value !== dirName) diagnostics.push(warn('name', `name '${value}' differs from its directory name '${dirName}'; the spec wants them equal`));
  return value;
}

/** `Bash(git:*) Read` → tools [bash, read], patterns [Bash(git:*)]: conch narrows by tool, not by command. */
export function parseAllowedTools(entries: string[]): { tools: string[]; patterns: string[] } {
  const tools = new Set<string>();
  const patterns: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    const paren = entry.indexOf('(');
    const tool = (paren === -1 ? entry : entry.slice(0, paren)).toLowerCase();
    if (paren !== -1 && !/\(\s*\*?\s*\)$/.test(entry.slice(paren))) patterns.push(entry);
    if (tool) tools.add(tool);
  }
  return { tools: [...tools], patterns };
}

/** Split on spaces and commas outside parentheses: `Bash(git add:*) Read` is two entries. */
export function splitToolList(text: string): string[] {
  const entries: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (depth === 0 && (ch === ',' || /\s/.test(ch))) {
      if (current) entries.push(current);
      current = '';
    } else current += ch;
  }
  if (current) entries.push(current);
  return entries;
}

function kind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`;
}
