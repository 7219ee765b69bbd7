// The config file's schema (closed: an unknown key is an error), and turning a schema violation
// into one sentence a person can act on: which key, what was expected, what was found, and for an
// unknown key the valid ones with a "did you mean".
import { Type, Check, Errors, type TSchema } from '../core/typebox.ts';
import { LIMIT_NAMES } from '../core/limits.ts';
import { profileChoices } from '../sandbox/profile-names.ts';

const closed = { additionalProperties: false } as const;
const Names = Type.Array(Type.String({ minLength: 1 }), { description: 'a list of non-empty strings' });
const Bool = Type.Boolean({ description: 'true or false' });
const Count = Type.Integer({ minimum: 0, description: 'a non-negative integer' });

export const CommandRuleSchema = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, description: 'a non-empty rule id' })),
    executable: Type.String({ minLength: 1, description: 'an absolute path such as "/usr/bin/git", or a program name found on PATH' }),
    args: Type.Optional(Type.Array(Type.String(), { description: 'a list of literal arguments' })),
    match: Type.Optional(Type.Union([Type.Literal('prefix'), Type.Literal('exact')])),
    // Allow and ask rules only: the variables a matching command may set (see policy/command-rules.ts).
    env: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'a variable name such as "CI"' }), {
        description: 'a list of variable names such as ["CI", "GIT_TRACE"]',
      }),
    ),
  },
  closed,
);

export const CommandsSchema = Type.Object(
  {
    default: Type.Optional(Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('ask')])),
    allow: Type.Optional(Type.Array(CommandRuleSchema)),
    deny: Type.Optional(Type.Array(CommandRuleSchema)),
    ask: Type.Optional(Type.Array(CommandRuleSchema)),
  },
  closed,
);

// The profiles installed in sandbox-profiles/ (a new file there is a new accepted name). This module
// is loaded only to check a config or policy file, so listing the folder costs a start nothing.
export const ProfileSchema = Type.Union(profileChoices().map((name) => Type.Literal(name)));

const ProviderSchema = Type.Object(
  {
    // Optional only for the built-ins, whose type is their name (file.ts requires it elsewhere).
    type: Type.Optional(Type.Union([Type.Literal('anthropic'), Type.Literal('openai')])),
    baseUrl: Type.Optional(Type.String({ minLength: 1, description: 'a URL such as "http://localhost:11434/v1"' })),
    apiKey: Type.Optional(Type.String({ minLength: 1, description: 'a "${ENV_NAME}" reference (or a literal key)' })),
    maxOutputTokens: Type.Optional(Type.Integer({ minimum: 1, description: 'a whole number of tokens above 0' })),
    structuredOutput: Type.Optional(Type.Boolean({ description: 'true or false: send --output-schema as the structured-output parameter' })),
    maxTools: Type.Optional(Type.Integer({ minimum: 1, description: 'a whole number of tools above 0' })),
  },
  closed,
);

const ModelRef = Type.String({ pattern: '^[^/\\s]+/\\S+$', description: 'a "provider/model" string such as "anthropic/claude-sonnet-5-5" or "local/qwen2.5-coder"' });
const MaxOutputTokens = Type.Integer({ minimum: 1, description: 'a whole number of tokens above 0' });
const ThinkingLevel = Type.Union([Type.Literal('off'), Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]);
const Temperature = Type.Number({ minimum: 0, maximum: 2, description: 'a number from 0 to 2' });
const UsdPerMillion = Type.Number({ minimum: 0, description: 'US dollars per million tokens (a number ≥ 0)' });

/** Per model ("provider/model"): the token and reasoning controls. */
const ModelOptionsSchema = Type.Object(
  { maxOutputTokens: Type.Optional(MaxOutputTokens), thinking: Type.Optional(ThinkingLevel), temperature: Type.Optional(Temperature) },
  closed,
);

/** Per model ("provider/model" or the bare model id): list prices, overriding the shipped table. */
export const PriceSchema = Type.Object(
  { input: UsdPerMillion, output: UsdPerMillion, cacheRead: Type.Optional(UsdPerMillion), cacheWrite: Type.Optional(UsdPerMillion) },
  closed,
);

/**
 * ~/.config/conch/config.json and ./.conch/config.json. Paths in `write`, `sandbox` and `read`
 * roots are absolute or relative (see load.ts for what they are relative to); `protected` and
 * `read.deny` are workspace-relative globs. A shell command rule is { id?, executable, args?,
 * match?, env? }: `env` (allow and ask rules) lists the variables a matching command may set.
 */
export const ConfigFileSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    // A list is a route: the first model, then the next when one is unavailable (providers/fallback.ts).
    model: Type.Optional(
      Type.Union([ModelRef, Type.Array(ModelRef, { minItems: 1 })], {
        description: 'a "provider/model" string such as "anthropic/claude-sonnet-5-5" or "local/qwen2.5-coder", or a non-empty list of them (a fallback route)',
      }),
    ),
    providers: Type.Optional(Type.Record(Type.String(), ProviderSchema)),
    limits: Type.Optional(
      Type.Object(Object.fromEntries(LIMIT_NAMES.map((n) => [n, Type.Optional(n === 'cost_usd' ? Type.Number({ minimum: 0, description: 'US dollars (a number ≥ 0; 0 = unlimited)' }) : Count)])), closed),
    ),
    retry: Type.Optional(
      Type.Object({ maxRetries: Type.Optional(Count), initialDelayMs: Type.Optional(Count), maxDelayMs: Type.Optional(Count) }, closed),
    ),
    network: Type.Optional(Bool),
    sandbox: Type.Optional(
      Type.Object(
        {
          profile: Type.Optional(ProfileSchema),
          writableRoots: Type.Optional(Names),
          protected: Type.Optional(Names),
          network: Type.Optional(
            Type.Union([Type.Literal('on'), Type.Literal('off'), Type.Object({ allow: Names }, closed)], {
              description: '"on", "off" or { "allow": ["registry.npmjs.org", "*.example.org", "@npm", …] }',
            }),
          ),
        },
        closed,
      ),
    ),
    write: Type.Optional(Type.Object({ writableRoots: Type.Optional(Names), protected: Type.Optional(Names) }, closed)),
    read: Type.Optional(
      Type.Object(
        { roots: Type.Optional(Names), deny: Type.Optional(Names), denySecretFiles: Type.Optional(Bool), allowSecret: Type.Optional(Names) },
        closed,
      ),
    ),
    tools: Type.Optional(Type.Object({ allow: Type.Optional(Names), deny: Type.Optional(Names) }, closed)),
    plugins: Type.Optional(
      Type.Union([
        Names,
        Type.Object(
          {
            enabled: Type.Optional(Bool),
            firstParty: Type.Optional(Names),
            dirs: Type.Optional(Names),
            allowOverride: Type.Optional(Names),
            // A first-party plugin's own settings, checked by the plugin when it starts (plugins/vault).
            vault: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'an object: the vault plugin\'s settings, such as { "root": "~/notes" }' })),
          },
          closed,
        ),
      ]),
    ),
    shell: Type.Optional(Type.Object({ enabled: Type.Optional(Bool), commands: Type.Optional(CommandsSchema) }, closed)),
    policy: Type.Optional(Type.Object({ stopOnDeny: Type.Optional(Bool) }, closed)),
    sessions: Type.Optional(Type.Object({ keep: Type.Optional(Count) }, closed)),
    // The interactive prompt's history on file (cli/history.ts); false keeps it in memory only.
    history: Type.Optional(Bool),
    // Checked entry by entry in mcp/config.ts, where the server shapes live (a bad one names its key).
    mcpServers: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'an object of MCP servers by name' })),
    maxOutputTokens: Type.Optional(MaxOutputTokens),
    thinking: Type.Optional(ThinkingLevel),
    temperature: Type.Optional(Temperature),
    models: Type.Optional(Type.Record(Type.String(), ModelOptionsSchema)),
    prices: Type.Optional(Type.Record(Type.String(), PriceSchema)),
  },
  closed,
);

export type Path = (string | number)[];

/** A schema violation: where, and what is wrong there, phrased to follow the key. */
export interface Problem {
  path: Path;
  text: string;
}

/** `limits.model_calls`, `shell.commands.allow[2].match`. */
export function keyPath(path: Path): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out || '(top level)';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

export function didYouMean(word: string, candidates: string[]): string | null {
  let best: string | null = null;
  let bestScore = Infinity;
  for (const c of candidates) {
    const score = editDistance(word.toLowerCase(), c.toLowerCase());
    if (score < bestScore) [best, bestScore] = [c, score];
  }
  return best !== null && bestScore <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

function schemaAt(root: TSchema, pointer: string): Record<string, any> | undefined {
  let node: any = root;
  for (const raw of pointer.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    node = node?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

function describe(schema: Record<string, any> | undefined): string {
  if (!schema) return 'a different value';
  if (typeof schema.description === 'string') return schema.description;
  if (Array.isArray(schema.anyOf)) {
    const consts = schema.anyOf.filter((s: any) => 'const' in s).map((s: any) => JSON.stringify(s.const));
    if (consts.length === schema.anyOf.length) return `one of ${consts.join(', ')}`;
    return schema.anyOf.map((s: any) => describe(s)).join(' or ');
  }
  if ('const' in schema) return JSON.stringify(schema.const);
  switch (schema.type) {
    case 'object':
      return schema.properties ? `an object with keys ${Object.keys(schema.properties).join(', ')}` : 'an object';
    case 'array':
      return `a list of ${describe(schema.items).replace(/^an? /, '')}s`;
    case 'integer':
      return schema.minimum === 0 ? 'a non-negative integer' : 'an integer';
    case 'boolean':
      return 'true or false';
    case 'string':
      return schema.minLength ? 'a non-empty string' : 'a string';
    default:
      return typeof schema.type === 'string' ? `a ${schema.type}` : 'a different value';
  }
}

function valueAt(value: unknown, path: Path): unknown {
  let v: any = value;
  for (const seg of path) v = v?.[seg];
  return v;
}

function shown(v: unknown): string {
  const text = v === undefined ? 'nothing' : JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function toPath(pointer: string): Path {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/**
 * The most useful violation of `schema` by `value`, or null when it conforms. Each file is checked
 * once per start, so the schema is interpreted, not compiled: compiling the config file's schema
 * cost every start with a config file 12-60 ms. The errors are the same either way.
 */
export function firstProblem(schema: TSchema, value: unknown): Problem | null {
  if (Check(schema, value)) return null;
  const [, errors] = Errors(schema, value);

  const extra = errors.find((e) => e.keyword === 'additionalProperties');
  if (extra) {
    const key = (extra.params as { additionalProperties: string[] }).additionalProperties[0]!;
    const parent = toPath(extra.instancePath);
    const valid = Object.keys(schemaAt(schema, extra.schemaPath)?.properties ?? {}).filter((k) => k !== '$schema');
    const guess = didYouMean(key, valid);
    const where = parent.length ? ` in "${keyPath(parent)}"` : '';
    return {
      path: [...parent, key],
      text: `is not a known key. Valid keys${where}: ${valid.join(', ')}.${guess ? ` Did you mean "${guess}"?` : ''}`,
    };
  }
  const missing = errors.find((e) => e.keyword === 'required');
  const useful = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'boolean');
  const deepest = useful.reduce((a, b) => (b.instancePath.length > a.instancePath.length ? b : a), useful[0] ?? errors[0]!);
  if (missing && missing.instancePath.length >= deepest.instancePath.length) {
    const key = (missing.params as { requiredProperties: string[] }).requiredProperties[0]!;
    const path = toPath(missing.instancePath);
    const expected = describe(schemaAt(schema, missing.schemaPath)?.properties?.[key]);
    return { path: [...path, key], text: `is required; expected ${expected}.` };
  }
  const path = toPath(deepest.instancePath);
  // A failed branch of a union at this very key: describe the whole union, not one branch.
  const target = schemaAt(schema, deepest.schemaPath.replace(/\/anyOf\/\d+$/, ''));
  return { path, text: `must be ${describe(target)}, got ${shown(valueAt(value, path))}.` };
}
