// The static policy file (--policy PATH). It can only narrow what the configs allow, and it is
// checked completely before any model call: a bad file is a ConfigError naming the file, the rule
// (by id, else by position) and the problem.
//
// {
//   "version": 1,
//   "tools":   { "allow": [{ "id": "t.read", "name": "read" }], "deny": [{ "id": "t.no-bash", "name": "bash" }] },
//   "write":   { "allow": [{ "id": "w.repo", "root": "." }],
//                "deny":  [{ "id": "w.secrets", "root": "/home/me/.ssh" }, { "id": "w.lock", "glob": "**/*.lock" }] },
//   "read":    { "roots": [{ "id": "r.repo", "root": "." }], "deny": [{ "id": "r.env", "glob": "**/.env*" }] },
//   "shell":   { "commands": { "default": "deny", "allow": [ { "id": "c.status", "executable": "/usr/bin/git",
//                                                           "args": ["status"], "match": "prefix" },
//                                                         { "id": "c.test", "executable": "make",
//                                                           "args": ["test"], "env": ["CI"] } ] } },
//   "sandbox": { "profile": "read-only", "network": false }
// }
//
// Every rule is an object with a stable `id` (unique in the file) and exactly one subject:
//   tools: `name` (a tool name; allow lists intersect with the catalog, they never add a tool);
//   write/read: `root` (a directory; relative roots are relative to this file's directory) or, for
//   deny lists only, `glob` (workspace-relative, picomatch syntax);
//   shell.commands: `executable` (absolute or a name looked up on the sandbox PATH), `args`, `match`,
//   and for allow and ask rules `env`: the variable names a matching command may set ("CI=1 make");
//   a command setting any other variable is not proven by the rule (see command-rules.ts).
// A `root` covers the directory and everything below it.
import { dirname, isAbsolute, resolve } from 'node:path';
import { Type, type Static, type TSchema } from '../core/typebox.ts';
import { commandLayer, DENY_ENV, depthOf, MAX_DEPTH } from './file.ts';
import type { PolicyLayer } from './layers.ts';
import { CommandRuleSchema, type Path, ProfileSchema, firstProblem, keyPath } from './schema.ts';
import { ConfigError } from '../core/errors.ts';
import { parseJsonText } from './json-text.ts';
import { readSmallFile } from '../workspace/small-file.ts';

/** Far above any real policy; a bound so that a link to /dev/zero cannot fill memory. */
const POLICY_MAX_BYTES = 4 * 1024 * 1024;

const closed = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, description: 'a non-empty rule id' });
const ToolRule = Type.Object({ id: Id, name: Type.String({ minLength: 1, description: 'a tool name' }) }, closed);
const RootRule = Type.Object({ id: Id, root: Type.String({ minLength: 1, description: 'a directory path' }) }, closed);
const GlobRule = Type.Object({ id: Id, glob: Type.String({ minLength: 1, description: 'a workspace-relative glob' }) }, closed);
const PathDeny = Type.Union([RootRule, GlobRule]);
const PolicyCommandRule = Type.Object({ ...CommandRuleSchema.properties, id: Id }, closed);
const rules = <T extends TSchema>(rule: T) => Type.Optional(Type.Array(rule));

const PolicyFileSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    version: Type.Literal(1),
    tools: Type.Optional(Type.Object({ allow: rules(ToolRule), deny: rules(ToolRule) }, closed)),
    write: Type.Optional(Type.Object({ allow: rules(RootRule), deny: rules(PathDeny) }, closed)),
    read: Type.Optional(Type.Object({ roots: rules(RootRule), deny: rules(PathDeny) }, closed)),
    shell: Type.Optional(
      Type.Object(
        {
          commands: Type.Optional(
            Type.Object(
              {
                default: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('ask')])),
                allow: rules(PolicyCommandRule),
                deny: rules(PolicyCommandRule),
                ask: rules(PolicyCommandRule),
              },
              closed,
            ),
          ),
        },
        closed,
      ),
    ),
    sandbox: Type.Optional(Type.Object({ profile: Type.Optional(ProfileSchema), network: Type.Optional(Type.Boolean()) }, closed)),
  },
  closed,
);

interface RawRule {
  id: string;
  name?: string;
  root?: string;
  glob?: string;
  executable?: string;
  args?: string[];
  match?: 'prefix' | 'exact';
  env?: string[];
}
type RawPolicy = Static<typeof PolicyFileSchema>;

/** The problem's location: `rule "id" (write.deny[2]), key "glob"` or a plain key path. */
function locate(value: unknown, path: Path): string {
  const at = path.findIndex((s) => typeof s === 'number');
  if (at === -1) return `"${keyPath(path)}"`;
  let rule: any = value;
  for (const seg of path.slice(0, at + 1)) rule = rule?.[seg];
  const name = typeof rule?.id === 'string' && rule.id ? `rule "${rule.id}"` : 'rule';
  const rest = path.slice(at + 1);
  return `${name} (${keyPath(path.slice(0, at + 1))})${rest.length ? `: "${keyPath(rest)}"` : ''}`;
}

/** Every rule in the file with its location, for the checks the schema cannot express. */
function* allRules(p: RawPolicy): Generator<[Path, RawRule]> {
  const lists: [Path, readonly RawRule[] | undefined][] = [
    [['tools', 'allow'], p.tools?.allow],
    [['tools', 'deny'], p.tools?.deny],
    [['write', 'allow'], p.write?.allow],
    [['write', 'deny'], p.write?.deny],
    [['read', 'roots'], p.read?.roots],
    [['read', 'deny'], p.read?.deny],
    [['shell', 'commands', 'allow'], p.shell?.commands?.allow],
    [['shell', 'commands', 'deny'], p.shell?.commands?.deny],
    [['shell', 'commands', 'ask'], p.shell?.commands?.ask],
  ];
  for (const [path, list] of lists) for (const [i, rule] of (list ?? []).entries()) yield [[...path, i], rule];
}

function checkRules(p: RawPolicy, fail: (path: Path, text: string) => never): void {
  const seen = new Map<string, Path>();
  for (const [path, rule] of allRules(p)) {
    const earlier = seen.get(rule.id);
    if (earlier) fail(path, `reuses the id of ${keyPath(earlier)}; every rule id must be unique.`);
    seen.set(rule.id, path);
    if (rule.glob !== undefined && (isAbsolute(rule.glob) || rule.glob.split('/').includes('..'))) {
      fail([...path, 'glob'], 'must be workspace-relative (no leading "/" and no ".."); use "root" for a directory outside the workspace.');
    }
    if (path[2] === 'deny' && path[0] === 'shell' && rule.env !== undefined) fail([...path, 'env'], DENY_ENV);
    const exe = rule.executable;
    if (exe !== undefined && !isAbsolute(exe) && exe.includes('/')) {
      fail([...path, 'executable'], `must be an absolute path or a bare program name looked up on PATH, got "${exe}".`);
    }
  }
}

/** Read, validate and normalise a policy file into a layer. `path` is relative to `cwd`. */
export async function loadPolicyFile(path: string, cwd: string): Promise<PolicyLayer> {
  const file = resolve(cwd, path);
  let text: string;
  try {
    const read = await readSmallFile(file, POLICY_MAX_BYTES);
    if (!read) throw Object.assign(new Error('missing'), { code: 'ENOENT' });
    if (read.truncated) throw Object.assign(new Error('too large'), { code: 'EFBIG' });
    text = read.bytes.toString('utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'does not exist'
      : code === 'EACCES' ? 'is not readable (permission denied)'
      : code === 'EFBIG' ? `is larger than ${POLICY_MAX_BYTES / 1024 / 1024} MiB`
      : code === 'ENOTREG' || code === 'EISDIR' ? 'is not a regular file'
      : `cannot be read (${code ?? String(e)})`;
    throw new ConfigError(`--policy ${path}: the policy file ${file} ${why}.`, file, '--policy');
  }
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new ConfigError(`${file}: the policy file is ${parsed.message}.`, file);
  const value = parsed.value;
  if (depthOf(value) > MAX_DEPTH) throw new ConfigError(`${file}: the policy file is nested more than ${MAX_DEPTH} levels deep.`, file);
  const problem = firstProblem(PolicyFileSchema, value);
  if (problem) {
    const hint = problem.path[0] === 'version' ? ' Policy files start with "version": 1.' : '';
    throw new ConfigError(`${file}: ${locate(value, problem.path)} ${problem.text}${hint}`, file, keyPath(problem.path));
  }
  const p = value as RawPolicy;
  checkRules(p, (where, text) => {
    throw new ConfigError(`${file}: ${locate(value, where)} ${text}`, file, keyPath(where));
  });

  const base = dirname(file);
  const root = (r: { id: string; root: string }) => ({ rule: r.id, root: resolve(base, r.root) });
  const pathRule = (r: { id: string; root: string } | { id: string; glob: string }) => ('glob' in r ? { rule: r.id, glob: r.glob } : root(r));
  return {
    kind: 'policy',
    source: `policy file ${file}`,
    toolsAllow: p.tools?.allow ? { names: p.tools.allow.map((r) => r.name), rule: 'policy:tools.allow' } : undefined,
    toolsDeny: (p.tools?.deny ?? []).map((r) => ({ name: r.name, rule: r.id })),
    commands: p.shell?.commands ? commandLayer(`policy file ${file}`, 'policy:shell.commands', p.shell.commands) : undefined,
    writeAllow: p.write?.allow?.map(root),
    writeDeny: (p.write?.deny ?? []).map(pathRule),
    readRoots: p.read?.roots?.map(root),
    readDeny: (p.read?.deny ?? []).map(pathRule),
    network: p.sandbox?.network,
    profile: p.sandbox?.profile,
  };
}
