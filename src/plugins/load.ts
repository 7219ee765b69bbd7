// Plugin loading: find the files, import them in isolation, check every definition, settle name
// collisions. A broken plugin is a report with its path and the reason; it never stops the others.
import { realpath } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import type { PluginSettings } from '../config/types.ts';
import type { PluginFactory, PluginSetup, Tool } from '../tools/define.ts';
import { checkToolDefinition } from '../tools/catalog.ts';
import { PolicyError, thrownText } from '../core/errors.ts';
import { checkFirstParty, listPluginFiles, projectToolsDir, userToolsDir, type PluginCandidate } from './discover.ts';
import { availableFirstParty, FIRST_PARTY_DIR } from '../config/first-party.ts';
import { defaultCacheDir } from './cache-dir.ts';
import type { ImportOutcome } from './importer.ts';
import { materialize, readFolder, snapshotRoot, type FolderContent } from './snapshot.ts';
import { CHANGED_REASON, trustedHash } from './trust.ts';
import type * as PluginOutput from './output.ts';
import { loadingPlugin } from './loading.ts';
import { foreignFile } from '../workspace/foreign-writers.ts';

export interface PluginReport {
  /** Absolute path of the plugin file (or folder, for a folder that could not be read). */
  path: string;
  status: 'loaded' | 'skipped' | 'failed';
  /** Names of the tools this file contributes (empty unless loaded). */
  tools: string[];
  reason?: string;
}

export interface LoadPluginsOptions {
  configDir: string;
  /** Canonical workspace root: where ./.conch/tools is looked for. */
  cwd: string;
  settings: PluginSettings;
  /** Names already taken (kernel tools) → their source, e.g. 'bash' → 'kernel'. */
  reserved: Map<string, string>;
  /** Disk cache for transpiled plugins; false disables it. Default: $XDG_CACHE_HOME/conch/jiti. */
  cacheDir?: string | false;
  /** How long one plugin may take to import. */
  loadTimeoutMs?: number;
  /** Called once before the first plugin code runs, with the load time each plugin gets (the CLI starts its watchdog there). */
  beforeImport?: (loadTimeoutMs: number) => Promise<void> | void;
}

export interface LoadedPlugins {
  /** Checked tools, in load order; register with `override` when settings.allowOverride names them. */
  tools: Tool[];
  reports: PluginReport[];
}

const DEFAULT_LOAD_TIMEOUT_MS = 5000;

/**
 * Load every plugin the settings allow. The contract for a plugin file: its default export is one
 * tool definition or an array of them (a CommonJS file's module.exports counts as its default);
 * named exports are ignored. A file's tools load together or not at all. Project plugins are not
 * even imported unless the workspace is trusted or settings.projectTools is set.
 */
export async function loadPlugins(opts: LoadPluginsOptions): Promise<LoadedPlugins> {
  const { settings } = opts;
  if (!settings.enabled) return { tools: [], reports: [] };
  const slots = await collectCandidates(opts);
  const candidates = slots.flatMap((s) => ('candidate' in s ? [s.candidate] : []));
  if (candidates.length === 0) return { tools: [], reports: slots.flatMap((s) => ('report' in s ? [s.report] : [])) };
  // Only with a file to import: a start without plugins loads neither, nor throw-site.ts's source
  // maps (about 1.5 ms and 0.5 MiB).
  const [{ getImporter, importPlugin }, loadedOutput] = await Promise.all([import('./importer.ts'), import('./output.ts')]);
  output = loadedOutput;
  const { pluginLabel, runAsPlugin } = output;

  const cacheDir = opts.cacheDir ?? defaultCacheDir();
  const timeout = opts.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const load = async (c: PluginCandidate): Promise<ImportOutcome> => {
    const outcome = await importOne(c);
    if (!outcome.ok || typeof outcome.module.default !== 'function') return outcome;
    const label = pluginLabel(c.path);
    const setup: PluginSetup = {
      settings: (c.origin === 'first-party' ? settings.options?.[label] : undefined) ?? {},
      cwd: opts.cwd,
      configFile: join(opts.configDir, 'config.json'),
    };
    return runAsPlugin(label, () => loadingPlugin(c.path, () => startFactory(outcome.module, setup, timeout)));
  };
  const importOne = async (c: PluginCandidate): Promise<ImportOutcome> => {
    output.install();
    const label = pluginLabel(c.path);
    if (!c.snapshot) {
      const jiti = await getImporter(cacheDir);
      return runAsPlugin(label, () => loadingPlugin(c.path, () => importPlugin(jiti, c.path, timeout)));
    }
    const jiti = await getImporter(cacheDir, c.snapshot.root);
    const snapshot = c.snapshot;
    const outcome = await runAsPlugin(label, () => loadingPlugin(c.path, () => importPlugin(jiti, snapshot.file, timeout)));
    // Name the workspace's files, not the private copies.
    if (!outcome.ok) return { ok: false, reason: outcome.reason.replaceAll(c.snapshot.root, projectToolsDir(opts.cwd)) };
    return { ok: true, module: commonJsDefault(outcome.module) };
  };
  await opts.beforeImport?.(timeout);
  // Imports run concurrently, but results are settled in discovery order below so that which
  // plugin wins a name never depends on timing.
  const outcomes = await Promise.all(candidates.map(load));

  const owners = new Map<string, { source: string; report: PluginReport | null }>();
  for (const [name, source] of opts.reserved) owners.set(name, { source, report: null });
  const tools = new Map<string, Tool>();
  let next = 0;
  const reports = slots.map((slot) => {
    if ('report' in slot) return slot.report;
    const outcome = outcomes[next++]!;
    try {
      return settle(slot.candidate, outcome, settings.allowOverride, owners, tools);
    } catch (error) {
      // An export whose getters or proxy traps throw while it is checked (nothing is claimed before
      // every check passed): that file fails, the others load.
      return { path: slot.candidate.path, status: 'failed' as const, tools: [], reason: `reading its default export threw: ${thrownText(error)}` };
    }
  });
  return { tools: [...tools.values()], reports };
}

/** A default export that is a function (PluginFactory) is called once, bounded like the import, and its tools stand for it. */
async function startFactory(module: Record<string, unknown>, setup: PluginSetup, timeoutMs: number): Promise<ImportOutcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`its setup function did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const tools = await Promise.race([Promise.resolve().then(() => (module.default as PluginFactory)(setup)), deadline]);
    return { ok: true, module: { ...module, default: tools } };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

type Slot = { candidate: PluginCandidate } | { report: PluginReport };

/**
 * Every plugin in discovery order (first-party, user folder, --tools-dir folders, project): a file to
 * import, or a report for what is skipped or missing. Nothing is imported here.
 */
async function collectCandidates(opts: LoadPluginsOptions): Promise<Slot[]> {
  const { settings } = opts;
  const slots: Slot[] = [];
  const add = (path: string, origin: PluginCandidate['origin']) => slots.push({ candidate: { path, origin } });
  const report = (path: string, status: 'skipped' | 'failed', reason: string) => slots.push({ report: { path, status, tools: [], reason } });

  if (settings.firstParty.length > 0) {
    const available = await availableFirstParty();
    for (const name of settings.firstParty) {
      if (available.includes(name)) add(join(FIRST_PARTY_DIR, name, 'index.ts'), 'first-party');
      else report(join(FIRST_PARTY_DIR, name), 'failed', (await checkFirstParty([name]))!);
    }
  }
  for (const path of (await listPluginFiles(userToolsDir(opts.configDir))) ?? []) add(path, 'user');
  for (const dir of settings.dirs) {
    const files = await listPluginFiles(dir);
    if (files === null) report(dir, 'failed', `tools folder not found: ${dir} (--tools-dir)`);
    for (const path of files ?? []) add(path, 'dir');
  }
  const projectFiles = (await listPluginFiles(projectToolsDir(opts.cwd))) ?? [];
  if (projectFiles.length > 0) slots.push(...(await projectSlots(opts, projectFiles)));
  // The same file reached twice (a --tools-dir that is the user folder, a symlink) loads once.
  const seen = new Set<string>();
  const unique: Slot[] = [];
  for (const slot of slots) {
    if ('candidate' in slot) {
      const { path, origin } = slot.candidate;
      const real = await realpath(path).catch(() => path);
      if (seen.has(real)) continue;
      seen.add(real);
      // The user's and --tools-dir plugins run as the user, unsandboxed: one that another user could
      // change (through a link left into /tmp, a folder every user or a team's group may write) would
      // be their code. Project plugins run from conch's private copy; first-party ones are conch's.
      const foreign = origin === 'user' || origin === 'dir' ? foreignFile(real) : null;
      if (foreign) {
        unique.push({ report: { path, status: 'skipped', tools: [], reason: `not loaded: ${foreign}, so another user could put their code there, which conch would run as you outside the sandbox; make it and its folders yours alone (chmod go-w, chown) or move it` } });
        continue;
      }
    }
    unique.push(slot);
  }
  return unique;
}

/**
 * Project plugins: unless --project-tools, the workspace must be trusted for exactly the bytes that
 * will run. The folder is read once, its hash compared with the trusted one, and those same bytes
 * copied to a private snapshot that is imported instead (confined to it): no change made in the
 * workspace after the hash, during the import or later by the plugin's own lazy imports reaches the
 * code that runs. --project-tools (no trust asked) loads from a snapshot too, for the same reason.
 */
async function projectSlots(opts: LoadPluginsOptions, listed: string[]): Promise<Slot[]> {
  const dir = projectToolsDir(opts.cwd);
  const reportAll = (status: 'skipped' | 'failed', reason: string): Slot[] => listed.map((path) => ({ report: { path, status, tools: [], reason } }));
  let expected: string | null = null;
  if (!opts.settings.projectTools) {
    const trusted = await trustedHash(opts.configDir, opts.cwd);
    if (!trusted.ok) return reportAll('skipped', trusted.reason);
    expected = trusted.hash;
  }
  let content: FolderContent;
  try {
    content = await readFolder(dir);
  } catch (error) {
    return reportAll('failed', `cannot read .conch/tools: ${(error as Error).message}`);
  }
  if (expected !== null && content.hash !== expected) return reportAll('skipped', CHANGED_REASON);
  let root: string;
  try {
    root = await materialize(content, await snapshotRoot(opts.cacheDir ?? defaultCacheDir()));
  } catch (error) {
    return reportAll('failed', `cannot copy .conch/tools to conch's private snapshot folder: ${(error as Error).message}`);
  }
  const files = (await listPluginFiles(root)) ?? [];
  return files.map((file) => ({ candidate: { path: join(dir, relative(root, file)), origin: 'project', snapshot: { file, root } } }));
}

/** Check one imported file and claim its names. A file's tools load together or not at all. */
function settle(
  candidate: PluginCandidate,
  outcome: ImportOutcome,
  allowOverride: string[],
  owners: Map<string, { source: string; report: PluginReport | null }>,
  tools: Map<string, Tool>,
): PluginReport {
  const path = candidate.path;
  const failed = (reason: string): PluginReport => ({ path, status: 'failed', tools: [], reason });
  if (!outcome.ok) return failed(outcome.reason);

  const exported = outcome.module.default;
  if (exported === undefined) {
    const named = Object.keys(outcome.module).filter((k) => k !== 'default' && k !== '__esModule');
    // Named exports alone are most often a helper the user's plugins import, put beside them.
    const hint = named.length
      ? ` (found named exports ${named.join(', ')}; conch reads only the default export; a helper that plugins import belongs in a subfolder, such as lib/${basename(path)}, which conch does not load as a tool)`
      : '';
    return failed(`no default export: use \`export default defineTool({...})\` or \`export default [tool1, tool2]\`${hint}`);
  }
  const definitions = Array.isArray(exported) ? exported : [exported];
  if (definitions.length === 0) return failed('the default export is an empty array: export at least one tool');

  const checked: Tool[] = [];
  for (const [i, definition] of definitions.entries()) {
    const check = checkToolDefinition(definition, path);
    if (!check.ok) return failed(Array.isArray(exported) ? `export default [...] item ${i}: ${check.reason}` : check.reason);
    if (checked.some((t) => t.name === check.tool.name)) return failed(`tool '${check.tool.name}' is defined twice in this file`);
    checked.push(asPluginCode(check.tool, candidate));
  }
  for (const tool of checked) {
    const owner = owners.get(tool.name);
    if (owner && !allowOverride.includes(tool.name)) {
      return failed(
        `tool '${tool.name}' in ${path} collides with '${tool.name}' from ${owner.source}; rename it, or allow the override in config (plugins.allowOverride: ["${tool.name}"])`,
      );
    }
  }
  const report: PluginReport = { path, status: 'loaded', tools: checked.map((t) => t.name) };
  for (const tool of checked) {
    const previous = owners.get(tool.name)?.report;
    if (previous) {
      // An allowed override of another plugin: the later file wins, and the earlier one says so.
      previous.tools = previous.tools.filter((n) => n !== tool.name);
      previous.reason = `${previous.reason ? `${previous.reason}; ` : ''}'${tool.name}' overridden by ${path}`;
    }
    owners.set(tool.name, { source: path, report });
    tools.set(tool.name, tool);
  }
  return report;
}

/**
 * A confined import never hands a file to Bun natively, so jiti evaluates a CommonJS plugin itself
 * and returns its module.exports, where Bun's native import (what user plugins get) would have made
 * that object the default export. Transpiled ES modules carry __esModule; CommonJS ones do not.
 */
function commonJsDefault(module: Record<string, unknown>): Record<string, unknown> {
  if (module.__esModule === true || 'default' in module || Object.keys(module).length === 0) return module;
  return { default: module };
}

/**
 * What a plugin's execute prints goes to stderr under its name (output.ts), never to conch's stdout.
 * What it throws still becomes the model's tool error (agent/dispatch.ts), and the author also gets
 * one line saying where in their file it was thrown; not for a policy refusal or a tool stopped by
 * its signal, which are not bugs in the plugin.
 */
/** plugins/output.ts, loaded by the first loadPlugins with a file to import (before any tool of a plugin exists). */
let output: typeof PluginOutput;

function asPluginCode(tool: Tool, candidate: PluginCandidate): Tool {
  const execute = tool.execute;
  const { pluginLabel, pluginSignal, runAsPlugin } = output;
  const label = pluginLabel(candidate.path);
  const file = { path: candidate.path, ran: candidate.snapshot?.file };
  return {
    ...tool,
    execute: async (args, ctx) => {
      const own = { ...ctx, signal: pluginSignal(label, ctx.signal), runSignal: pluginSignal(label, ctx.runSignal) };
      try {
        return await runAsPlugin(label, () => execute.call(tool, args, own));
      } catch (error) {
        if (!(error instanceof PolicyError) && !ctx.signal?.aborted) {
          const { reportThrown } = await import('./throw-site.ts');
          await reportThrown(tool.name, file, error);
        }
        throw error;
      }
    },
  };
}
