// Assemble what one run needs from a resolved Config: workspace, executor, kernel + plugin tools,
// the narrowed catalog, the system prompt and the provider. The CLI and ACP both start here.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/types.ts';
import { Catalog, KERNEL_TOOLS } from '../tools/catalog.ts';
import type { Tool, ToolContext } from '../tools/define.ts';
import { Workspace } from '../workspace/paths.ts';
import { RevisionTracker } from '../workspace/revision.ts';
import { hiddenForCommands } from '../workspace/read-hidden.ts';
import { createReadTool } from '../tools/kernel/read.ts';
import { createWriteTool } from '../tools/kernel/write.ts';
import { createEditTool } from '../tools/kernel/edit.ts';
import { createBashTool } from '../tools/kernel/bash.ts';
import { createExecutor, type Executor } from '../shell/exec.ts';
import type { CommandDecision } from '../core/command-decision.ts';
import { SetupError } from '../core/errors.ts';
import { PlaceholderScope, probeSandbox } from '../sandbox/index.ts';
import { removeAtExit } from '../process/exit-cleanup.ts';
import { loadGuidance, systemPrompt } from '../agent/prompt.ts';
import type { ContextFactory } from '../agent/dispatch.ts';
import type { ServerReport, ServerSpec } from '../mcp/index.ts';
import { startMcp } from './mcp.ts';

export interface PluginReport {
  path: string;
  status: 'loaded' | 'skipped' | 'failed';
  tools: string[];
  reason?: string;
}

export interface SessionOptions {
  cwd: string;
  /** Command-rule guard built from config (policy layer); absent = no rules. */
  guard?: (command: string, cwd: string) => Promise<CommandDecision>;
  /** Load plugins (absent = none); returns plugin tools and per-file reports. */
  loadPlugins?: (reserved: Map<string, string>, workspaceRoot: string) => Promise<{ tools: Tool[]; reports: PluginReport[] }>;
  /** MCP servers the host was handed (an editor's session/new), besides the configured ones. */
  mcpServers?: ServerSpec[];
}

export interface Session {
  workspace: Workspace;
  catalog: Catalog;
  system: string;
  makeContext: ContextFactory;
  executor: Executor;
  header: { mode: 'restricted' | 'unrestricted'; sandbox: string };
  /** Warnings for the user (stderr): unusable sandbox, plugin failures. */
  warnings: string[];
  plugins: PluginReport[];
  /** Each MCP server: started or why not, and its tools. */
  mcp: ServerReport[];
  /** A run (a prompt) is over: its placeholders go once its last command has ended. */
  endRun(): void;
  dispose(): Promise<void>;
}

export async function openSession(config: Config, options: SessionOptions): Promise<Session> {
  const workspace = await Workspace.open({
    root: options.cwd,
    unrestricted: config.unrestricted,
    protectedGlobs: config.workspace.protectedGlobs,
    writableRoots: config.workspace.writableRoots,
    readRoots: config.workspace.readRoots ?? undefined,
    readDeny: config.workspace.readDeny,
    denySecretFiles: config.workspace.denySecretFiles,
    denied: config.policy.denied,
  });
  // --unrestricted lifts the sandbox, but a policy that denies paths must still hold for the shell.
  const policyPinsSandbox = config.unrestricted && (config.policy.denied?.length ?? 0) > 0;
  // One private run dir: tmp/ is the sandbox's /tmp, logs/ stays out of the sandbox's reach.
  const runDir = await mkdtemp(join(tmpdir(), 'conch-run-'));
  // Removed by dispose, or at exit on any path that never reaches it (a setup error, a second Ctrl-C).
  const keepRunDir = removeAtExit(runDir);
  const removeRunDir = async () => {
    await rm(runDir, { recursive: true, force: true });
    keepRunDir();
  };
  const tmpDir = join(runDir, 'tmp');
  await mkdir(tmpDir, { mode: 0o700 });
  const revisions = new RevisionTracker();
  const sandbox = {
    ...config.sandbox,
    ...(config.tools.readOnly ? { profile: 'read-only' as const } : {}),
    hidden: await hiddenForCommands(config, workspace.root),
  };
  // Placeholders are made once per run, not around every command (file watchers see each one).
  const placeholders = new PlaceholderScope();
  const executor = createExecutor({
    placeholders,
    workspace,
    unrestricted: config.unrestricted && !policyPinsSandbox,
    sandbox,
    limits: config.limits,
    env: config.env,
    shellEnabled: config.tools.shell,
    guard: options.guard,
    tmpDir,
    logDir: join(runDir, 'logs'),
  });

  // Started now, so the servers come up while plugins load and the prompt is assembled.
  const mcp = await startMcp(config, options.mcpServers, {
    workspace: workspace.root,
    tmpDir,
    sandbox,
    unrestricted: config.unrestricted && !policyPinsSandbox,
    placeholders,
  });

  const catalog = new Catalog();
  const kernel: Tool[] = [
    createBashTool({ exec: executor, limits: config.limits }),
    createReadTool({ workspace, revisions }),
    createWriteTool({ workspace, revisions }),
    createEditTool({ workspace, revisions }),
  ];
  for (const tool of kernel) catalog.register(tool);

  const warnings: string[] = [];
  if (policyPinsSandbox) warnings.push('the policy denies paths, so shell commands stay sandboxed despite --unrestricted');
  let plugins: PluginReport[] = [];
  if (options.loadPlugins && config.plugins.enabled) {
    const reserved = new Map(kernel.map((t) => [t.name, t.source] as [string, string]));
    const loaded = await options.loadPlugins(reserved, workspace.root);
    plugins = loaded.reports;
    for (const tool of loaded.tools) {
      const problem = catalog.register(tool, { override: config.plugins.allowOverride.includes(tool.name) });
      if (problem) warnings.push(problem);
    }
    for (const r of plugins) if (r.status !== 'loaded') warnings.push(`plugin ${r.path} ${r.status}: ${r.reason ?? 'not loaded'}`);
  }

  const mcpReports = await mcp.register(catalog, warnings);
  try {
    narrowCatalog(catalog, config);
  } catch (error) {
    await mcp.stop();
    await removeRunDir();
    throw error;
  }

  let sandboxLabel = 'none (unrestricted)';
  if ((!config.unrestricted || policyPinsSandbox) && catalog.has('bash')) {
    const status = await probeSandbox();
    // The label is what the run header and the --json envelope show: the backend and what narrows it.
    const readOnly = config.readOnlyWhy ? `read-only: ${config.readOnlyWhy} (--allow-home-writes to write)` : 'read-only';
    const traits = [sandbox.profile === 'read-only' ? readOnly : null, sandbox.network ? null : 'no network'].filter(Boolean);
    sandboxLabel = status.ok ? [status.backend, ...traits].join(', ') : `unavailable (${status.backend})`;
    if (!status.ok) {
      // Fail closed: no sandbox, no shell. The model is not offered a tool that can only refuse.
      const why = `no usable sandbox: ${status.detail}${status.fix ? ` ${status.fix}` : ''}`;
      catalog.remove('bash', `${why} (the user must fix this; shell commands are refused)`);
      warnings.push(`${why} The bash tool is off for this run.`);
    }
  } else if (!config.unrestricted) sandboxLabel = 'not needed (no shell)';

  const guidance = await loadGuidance(config.configDir, workspace.root, (path) => workspace.resolve(path, 'read'));
  const system = systemPrompt({
    workspaceRoot: workspace.root,
    tools: catalog.names(),
    unrestricted: config.unrestricted,
    network: config.sandbox.network,
    readOnly: config.tools.readOnly,
    guidance,
  });

  const makeContext: ContextFactory = (callId, signal, runSignal): ToolContext => ({
    cwd: workspace.root,
    signal,
    runSignal,
    workspace,
    callId,
    update: () => {},
    // A command given its own signal may outlive the call (background jobs), never the run.
    exec: (command, opts = {}) =>
      executor(command, { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, runSignal]) : signal }),
  });

  return {
    workspace,
    catalog,
    system,
    makeContext,
    executor,
    header: { mode: config.unrestricted ? 'unrestricted' : 'restricted', sandbox: sandboxLabel },
    warnings,
    plugins,
    mcp: mcpReports,
    endRun: () => placeholders.close(),
    async dispose() {
      for (const tool of catalog.tools()) {
        const dispose = (tool as { dispose?: () => unknown }).dispose;
        if (typeof dispose === 'function') await Promise.resolve(dispose.call(tool)).catch(() => {});
      }
      await mcp.stop();
      placeholders.close();
      await removeRunDir();
    },
  };
}

/** Flags and policy take tools out; they never add one that is not registered. */
function narrowCatalog(catalog: Catalog, config: Config): void {
  const t = config.tools;
  if (!t.filesystem) for (const name of ['read', 'write', 'edit']) catalog.remove(name, 'filesystem tools are off (--no-filesystem)');
  const why = config.readOnlyWhy ? `${config.readOnlyWhy} (--allow-home-writes)` : '--read-only';
  if (t.readOnly) for (const name of ['write', 'edit']) catalog.remove(name, `the run is read-only (${why})`);
  if (!t.shell) catalog.remove('bash', 'the shell is off (--no-shell)');
  for (const { name, rule } of t.denied) catalog.remove(name, `denied by policy rule '${rule}'`);
  if (t.only) {
    const unknown = t.only.filter((name) => !catalog.has(name) && !KERNEL_TOOLS.includes(name as never));
    if (unknown.length) {
      throw new SetupError(`--tools names tools that are not registered: ${unknown.join(', ')}. Available: ${catalog.names().join(', ')}`);
    }
    for (const name of catalog.names()) if (!t.only.includes(name)) catalog.remove(name, 'not in --tools');
  }
}
