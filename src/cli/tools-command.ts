// `conch tools`, `conch tools new NAME`, `conch trust`: what people use to see and manage plugins.
import { EXIT_CODES } from '../agent/outcome.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { displayPath } from '../core/display-path.ts';
import { configWriteFailure } from '../core/errors.ts';
import type { PluginReport } from '../plugins/load.ts';
import { userToolsDir } from '../plugins/discover.ts';
import { trustWorkspace } from '../plugins/trust.ts';
import { summarizeServers } from '../mcp/config.ts';
import { KERNEL_TOOLS, TOOL_NAME, type Catalog } from '../tools/catalog.ts';
import { starterPlugin } from './tools-template.ts';
import { writePluginTsconfig } from './tools-tsconfig.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { visibleCommand } from '../policy/approve.ts';
import { terminalSafe } from './tool-lines.ts';

export interface CommandIO {
  out: (text: string) => void;
  err: (text: string) => void;
}

const defaultIO: CommandIO = {
  out: (text) => stdout.write(text),
  err: (text) => stderr.write(text),
};

export interface ToolsListOptions {
  /** The run's catalog (kernel and plugins, narrowed by policy): exactly what the model is offered. */
  catalog: Catalog;
  /** Per-file plugin reports from loadPlugins. */
  reports: PluginReport[];
  /** Canonical workspace root: workspace files are shown relative to it. */
  workspace: string;
  json: boolean;
  /** false under --no-plugins, so the listing says plugins are off rather than "none found". */
  pluginsEnabled?: boolean;
  io?: CommandIO;
}

interface ListedTool {
  name: string;
  description: string;
  source: string;
  /** The closed JSON Schema the model receives. */
  parameters: Record<string, unknown>;
}

/**
 * Print the catalog as the model will see it, and every plugin file with its status. Exit code 1
 * when a plugin failed to load (so a CI step can catch it), 0 otherwise; skipped is not a failure.
 */
export async function toolsList(opts: ToolsListOptions): Promise<number> {
  const io = opts.io ?? defaultIO;
  const { catalog, reports } = opts;
  const enabled = opts.pluginsEnabled ?? true;
  const tools: ListedTool[] = catalog.specs().map((spec) => ({ ...spec, source: catalog.get(spec.name)!.source }));
  const failed = reports.some((r) => r.status === 'failed');

  // What flags, policy or a missing sandbox took out: without it, a tool absent from the list
  // (bash, when bwrap cannot run) would leave the user guessing why the model never uses it.
  const notOffered = catalog.removedTools();
  if (opts.json) {
    io.out(`${JSON.stringify({ tools, notOffered, plugins: reports, pluginsEnabled: enabled }, null, 2)}\n`);
    return failed ? 1 : 0;
  }
  const show = (path: string) => displayPath(path, opts.workspace);
  const lines: string[] = [`Tools (${tools.length}):`];
  for (const tool of tools) {
    lines.push(`  ${tool.name.padEnd(20)} ${tool.source === 'kernel' ? 'kernel' : show(tool.source)}`);
    lines.push(...wrap(tool.description.split('\n')[0] ?? '', 96).map((l) => `      ${l}`));
    lines.push(`      parameters: ${describeParameters(tool.parameters)}`);
  }
  if (notOffered.length) {
    lines.push('', `Not offered in this run (${notOffered.length}):`);
    for (const { name, reason } of notOffered) {
      lines.push(`  ${name}`, ...wrap(reason, 96).map((l) => `      ${l}`));
    }
  }
  if (!enabled) lines.push('', 'Plugins: off (--no-plugins)');
  else if (reports.length === 0) lines.push('', 'Plugins: none found (`conch tools new NAME` writes a starter)');
  else {
    lines.push('', 'Plugins:');
    for (const r of reports) {
      lines.push(`  ${r.status.padEnd(8)} ${show(r.path)}${r.tools.length ? `  (${r.tools.join(', ')})` : ''}`);
      if (r.reason) lines.push(`           ${r.reason}`);
    }
  }
  // Descriptions come from MCP servers and plugins, file names from the repository.
  io.out(`${terminalSafe(lines.join('\n'))}\n`);
  return failed ? 1 : 0;
}

/** Write a commented starter plugin to <configDir>/tools/<name>.ts (never overwrites) and the folder's tsconfig.json. */
export async function toolsNew(name: string, configDir: string, io: CommandIO = defaultIO): Promise<number> {
  const dir = userToolsDir(configDir);
  if (!TOOL_NAME.test(name)) {
    io.err(`conch: invalid tool name '${name}': use lowercase letters, digits and _ , starting with a letter (${TOOL_NAME.source})\n`);
    return EXIT_CODES.setup_error;
  }
  const file = join(dir, `${name}.ts`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(file, starterPlugin(name), { flag: 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    io.err(code === 'EEXIST' ? `conch: ${file} already exists; pick another name or edit that file\n` : `conch: ${configWriteFailure(file, error)}\n`);
    return EXIT_CODES.setup_error;
  }
  const lines = [`created ${file}`];
  try {
    const types = await writePluginTsconfig(dir);
    lines.push(types.written ? `wrote ${types.path}: editor types for 'conch' imports` : `kept your ${types.path}`);
  } catch (error) {
    io.err(`conch: cannot write ${join(dir, 'tsconfig.json')} (editor types only; the plugin works without it): ${(error as Error).message}\n`);
  }
  io.out(`${lines.join('\n')}\nedit it, then run \`conch tools\` to check that it loads\n`);
  // Replacing a kernel tool is allowed, on purpose only: said now, not first at the failed load.
  if ((KERNEL_TOOLS as readonly string[]).includes(name)) {
    io.err(`conch: '${name}' is a kernel tool's name: ${file} loads only with "plugins": { "allowOverride": ["${name}"] } in your config, which replaces conch's own ${name}; to add a tool instead, give it another name\n`);
  }
  return 0;
}

/** Trust the workspace's ./.conch/tools as it is now. */
export async function trustCommand(configDir: string, cwd: string, io: CommandIO = defaultIO): Promise<number> {
  const result = await trustWorkspace(configDir, cwd);
  if (!result.ok) {
    // Like every setup problem (an unwritable config folder, a damaged trust file): exit 2.
    io.err(`conch: ${result.message}\n`);
    return EXIT_CODES.setup_error;
  }
  const lines = [`trusted ${result.workspace}`, '  project skills (.agents/skills) load here'];
  if (result.files.length === 0) lines.push('  .conch/tools is empty or absent; plugins added later need `conch trust` again');
  else {
    lines.push(`  .conch/tools (${result.files.length} file${result.files.length === 1 ? '' : 's'}, ${result.hash.slice(0, 19)}…) will load here:`);
    // The user trusts what this list shows: a name's control characters are spelled out, never
    // obeyed (a carriage return and an erase would hide the line of the file being trusted).
    for (const file of result.files) lines.push(`    ${visibleCommand(file)}`);
    lines.push('  any change to that folder needs `conch trust` again');
  }
  // What else the trust unlocks, so nobody has to learn it from the README.
  if (result.mcp !== null) {
    lines.push('  .mcp.json: its MCP servers start here while the file stays as it is now (a change needs `conch trust` again):');
    // What the user lets run, and which of their variables each gets: a ${VAR} sends its value to that program or URL.
    for (const server of summarizeServers(result.mcp)) {
      const given = server.vars.length ? `  (given ${server.vars.map((v) => `$${v}`).join(', ')} from your environment)` : '';
      const grants = server.grants.length ? `; ${server.grants.map(visibleCommand).join('; ')}` : '';
      lines.push(`    ${visibleCommand(server.name)}: ${visibleCommand(server.runs)}${given}${grants}`);
    }
  }
  if (result.config) lines.push('  .conch/config.json: its model, providers and model settings (maxOutputTokens, thinking, temperature, models) apply here while it and .conch/tools stay as they are now (a change needs `conch trust` again)');
  else lines.push('  .conch/config.json is absent; the model and providers of one added later apply only after `conch trust` again');
  io.out(`${terminalSafe(lines.join('\n'))}\n`);
  return 0;
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/** `name: type, other?: type` from a closed object schema. */
export function describeParameters(schema: Record<string, unknown>): string {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set((schema.required ?? []) as string[]);
  const parts = Object.entries(properties).map(([key, value]) => `${key}${required.has(key) ? '' : '?'}: ${describeType(value)}`);
  return parts.length ? parts.join(', ') : '(none)';
}

function describeType(schema: Record<string, unknown>): string {
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const union = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (Array.isArray(union)) return union.map(describeType).join(' | ');
  if (schema.type === 'array') return `${schema.items ? describeType(schema.items as Record<string, unknown>) : 'any'}[]`;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  return typeof schema.type === 'string' ? schema.type : 'any';
}
