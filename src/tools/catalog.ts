// The run's tool catalog: what the model is offered, and the gate every call passes before dispatch.
import { compileSchema, schemaIssues, unknownTypeAt, type Validator } from './json-schema.ts';
import type { Tool } from './define.ts';
import { MAX_DURATION_MS, MAX_DURATION_TEXT } from '../core/duration.ts';
import type { ToolSpec } from '../core/content.ts';

export const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
/** MCP tools keep their servers' own spelling (providers accept [A-Za-z0-9_-]{1,64}). */
export const MCP_TOOL_NAME = /^mcp__[A-Za-z0-9_-]{1,59}$/;
export const KERNEL_TOOLS = ['bash', 'read', 'write', 'edit'] as const;

interface Entry {
  tool: Tool;
  spec: ToolSpec;
  /** Compiled on first use: most tools are never called in a run, and compiling costs ~1 ms each. */
  validator: Validator | null;
}

export type DefinitionCheck = { ok: true; tool: Tool } | { ok: false; reason: string };

/**
 * Check an untrusted tool definition (plugins hand us anything). The schema is closed here: unknown
 * keys are rejected whatever the author wrote, because a silently ignored argument is a wrong answer.
 */
export function checkToolDefinition(value: unknown, source: string, options: { mcp?: boolean } = {}): DefinitionCheck {
  if (!value || typeof value !== 'object') return { ok: false, reason: 'not a tool definition (expected an object from defineTool({...}))' };
  const def = value as Record<string, unknown>;
  const pattern = options.mcp ? MCP_TOOL_NAME : TOOL_NAME;
  if (def.name === undefined) return { ok: false, reason: `no name: give the tool a "name" matching ${pattern.source}` };
  if (typeof def.name !== 'string' || !pattern.test(def.name)) {
    return { ok: false, reason: `invalid name ${JSON.stringify(def.name)}: must match ${pattern.source}` };
  }
  if (typeof def.description !== 'string' || def.description.trim() === '') {
    return { ok: false, reason: `tool '${def.name}': description must be a non-empty string` };
  }
  if (typeof def.execute !== 'function') return { ok: false, reason: `tool '${def.name}': execute must be a function` };
  const schema = def.parameters;
  if (!schema || typeof schema !== 'object' || (schema as { type?: unknown }).type !== 'object') {
    return { ok: false, reason: `tool '${def.name}': parameters must be an object schema (Type.Object or { type: 'object', … })` };
  }
  const typo = unknownTypeAt(schema, 'parameters');
  if (typo) return { ok: false, reason: `tool '${def.name}': ${typo}` };
  try {
    compileSchema(closeSchema(schema as Record<string, unknown>));
  } catch (error) {
    return { ok: false, reason: `tool '${def.name}': invalid parameters schema: ${(error as Error).message}` };
  }
  if (def.timeoutMs !== undefined && (typeof def.timeoutMs !== 'number' || !(def.timeoutMs > 0) || def.timeoutMs > MAX_DURATION_MS)) {
    return { ok: false, reason: `tool '${def.name}': timeoutMs must be a positive number of milliseconds, at most ${MAX_DURATION_MS} (${MAX_DURATION_TEXT})` };
  }
  return { ok: true, tool: { ...(def as unknown as Tool), source } };
}

/** A JSON copy of the schema (TypeBox symbols dropped) with every object schema closed. */
export function closeSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const obj = node as Record<string, unknown>;
    if (obj.type === 'object' && obj.properties && obj.additionalProperties !== false) obj.additionalProperties = false;
    for (const value of Object.values(obj)) visit(value);
  };
  visit(copy);
  return copy;
}

export type Validation = { ok: true; args: Record<string, unknown> } | { ok: false; message: string };

export class Catalog {
  private readonly entries = new Map<string, Entry>();
  /** Tools taken out by flags or policy, with why: a call to one is refused with that reason. */
  private readonly removed = new Map<string, string>();

  /** Register a checked tool. Returns an error message when the name is taken and not overridable. */
  register(tool: Tool, options: { override?: boolean } = {}): string | null {
    const existing = this.entries.get(tool.name);
    if (existing && !options.override) {
      return `tool '${tool.name}' from ${tool.source} collides with '${tool.name}' from ${existing.tool.source}; rename it, or allow the override in config (plugins.allowOverride)`;
    }
    const parameters = closeSchema(tool.parameters as Record<string, unknown>);
    this.entries.set(tool.name, {
      tool,
      spec: { name: tool.name, description: tool.description, parameters },
      validator: null,
    });
    return null;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  get(name: string): Tool | undefined {
    return this.entries.get(name)?.tool;
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  tools(): Tool[] {
    return [...this.entries.values()].map((e) => e.tool);
  }

  specs(): ToolSpec[] {
    return [...this.entries.values()].map((e) => e.spec);
  }

  /** Take a tool out of the run (policy can only narrow the catalog); `reason` is told to a model that calls it anyway. */
  remove(name: string, reason: string): void {
    if (this.entries.delete(name)) this.removed.set(name, reason);
  }

  /** Why a tool was taken out, if it was. */
  removedWhy(name: string): string | undefined {
    return this.removed.get(name);
  }

  /** The tools taken out, in the order they were, each with why. */
  removedTools(): { name: string; reason: string }[] {
    return [...this.removed].map(([name, reason]) => ({ name, reason }));
  }

  /**
   * A catalog for another run of the same session: the same tools, order and removals, with each
   * tool in `swap` replaced by its counterpart (the kernel tools bound to that run's executor). The
   * schemas are the same, so specs and compiled validators are shared.
   */
  copyWith(swap: Map<Tool, Tool>): Catalog {
    const copy = new Catalog();
    for (const [name, entry] of this.entries) copy.entries.set(name, { ...entry, tool: swap.get(entry.tool) ?? entry.tool });
    for (const [name, reason] of this.removed) copy.removed.set(name, reason);
    return copy;
  }

  /** Parse and validate raw JSON arguments against the tool's closed schema. */
  validate(name: string, rawArguments: string): Validation {
    const entry = this.entries.get(name);
    if (!entry) {
      const reason = this.removed.get(name);
      if (reason) return { ok: false, message: `tool '${name}' is not available in this run: ${reason}` };
      const names = this.names();
      return { ok: false, message: `unknown tool '${name}'. Available tools: ${names.length ? names.join(', ') : '(none)'}` };
    }
    let args: unknown;
    try {
      args = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
    } catch (error) {
      return { ok: false, message: `arguments for '${name}' are not valid JSON (${(error as Error).message}); send a JSON object matching the tool's schema` };
    }
    if (!args || typeof args !== 'object' || Array.isArray(args)) {
      return { ok: false, message: `arguments for '${name}' must be a JSON object` };
    }
    try {
      entry.validator ??= compileSchema(entry.spec.parameters);
      if (entry.validator.Check(args)) return { ok: true, args: args as Record<string, unknown> };
      return { ok: false, message: `invalid arguments for '${name}': ${describeErrors(entry.validator, args)}` };
    } catch (error) {
      // A schema that refers to itself without end (an MCP server's $ref a → b → a) overflows the
      // stack only once arguments reach it: that call fails, not the run.
      if (!(error instanceof RangeError)) throw error;
      return { ok: false, message: `the parameters schema of '${name}' cannot be checked (${error.message}); it may refer to itself without end. Do not call this tool` };
    }
  }
}

function describeErrors(validator: Validator, value: unknown): string {
  const texts = new Set<string>();
  for (const issue of schemaIssues(validator, value, 5)) {
    const field = issue.path.replace(/^\//, '').replace(/\//g, '.');
    if (issue.unknown) texts.add(`unknown field '${field}'`);
    else if (issue.missing?.length) texts.add(issue.missing.map((m) => `missing required field '${field ? `${field}.` : ''}${m}'`).join('; '));
    else texts.add(field ? `field '${field}' ${issue.message}` : issue.message);
  }
  return texts.size ? [...texts].join('; ') : 'arguments do not match the schema';
}
