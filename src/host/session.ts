// Assemble what runs need from a resolved Config, one job per step: the workspace, the private run
// dir, the sandbox settings, the executor, the MCP servers, the catalog (kernel, plugins, MCP tools,
// narrowing), the skills (host/skills.ts), the sandbox check and the system prompt. host/start.ts calls it for every host.
import { canonical } from '../core/paths.ts';
import { homedir } from 'node:os';
import type { Config } from '../config/types.ts';
import { historyTempGlob } from '../config/xdg.ts';
import type { CommandDecision } from '../core/command-decision.ts';
import type { ContextFactory } from '../agent/dispatch.ts';
import { loadGuidance, systemPrompt } from '../agent/prompt.ts';
import type { PluginReport } from '../plugins/load.ts';
import { PlaceholderScope } from '../sandbox/index.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import { userStateDir } from '../sandbox/user-dir.ts';
import { createExecutor, type Executor } from '../shell/exec.ts';
import { networkProxy } from './network.ts';
import type { Catalog } from '../tools/catalog.ts';
import { Workspace } from '../workspace/paths.ts';
import { RevisionTracker } from '../workspace/revision.ts';
import { nestedGitGuard, type NestedGitGuard } from '../workspace/nested-git.ts';
import { addPlugins, capCatalog, kernelCatalog, kernelTools, narrowCatalog, type PluginLoader } from './catalog.ts';
import { openRunDir } from './run-dir.ts';
import { checkSandbox, sessionSandbox } from './sandbox.ts';
import { contextFactory } from './tool-context.ts';
import { startMcp } from './mcp.ts';
import type { SecretValue } from '../core/secret-scrub.ts';
import type { ServerReport, ServerSpec } from '../mcp/index.ts';
import { ConfigError } from '../core/errors.ts';
import { prepareSkills, type RunSkills } from './skills.ts';

export interface SessionOptions {
  cwd: string;
  /** Command-rule guard built from config (policy layer); absent = no rules. */
  guard?: (command: string, cwd: string) => Promise<CommandDecision>;
  /** Load plugins (absent = none); returns plugin tools and per-file reports. */
  loadPlugins?: PluginLoader;
  /** MCP servers the host was handed (an editor's session/new), besides the configured ones. */
  mcpServers?: ServerSpec[];
}

/**
 * What one run of a session uses on its own: the kernel tools bound to an executor with its own
 * placeholders and /tmp, and its own record of what it read. Concurrent runs each take one.
 */
export interface RunLane {
  catalog: Catalog;
  makeContext: ContextFactory;
  /**
   * The run is over: its placeholders go once its last command has ended. Returns what the user
   * should know: nested repositories its commands made that conch disabled (workspace/nested-git.ts).
   */
  endRun(): string[];
}

export interface Session extends RunLane {
  workspace: Workspace;
  system: string;
  executor: Executor;
  header: { mode: 'restricted' | 'unrestricted'; sandbox: string };
  /** Warnings for the user (stderr): unusable sandbox, plugin failures. */
  warnings: string[];
  plugins: PluginReport[];
  /** Each MCP server: started or why not, and its tools. */
  mcp: ServerReport[];
  /** Values the MCP servers were handed (env, headers): hidden from traces and sessions like a provider key. */
  secrets: SecretValue[];
  /** The skills found, the catalog in the system prompt, and --skill bodies for the first task. */
  skills: RunSkills;
  /**
   * One more lane for a run that overlaps the session's others (`conch run A B`): same tools,
   * plugins, MCP servers and policy; its own placeholders (one run ending never unprotects a name
   * another still binds), its own /tmp and its own reads. Released by its endRun, or at dispose.
   */
  lane(): RunLane;
  dispose(): Promise<void>;
}

// Paths made globs (read.deny is picomatch), escaped: a state folder named state(x) or st{a,b} would
// otherwise match only its look-alikes, and `read` would open the store itself.
function sessionStoreGlobs(dir: string): string[] {
  const store = escapeGlob(canonical(dir));
  return [store, `${store}/**`];
}

/** The history and a trim's copy of it, which holds the same records. */
function historyGlobs(file: string): string[] {
  const history = escapeGlob(canonical(file));
  return [history, historyTempGlob(history)];
}

export async function openSession(config: Config, options: SessionOptions): Promise<Session> {
  const runDir = await openRunDir();
  const workspace = await Workspace.open({
    root: options.cwd,
    unrestricted: config.unrestricted,
    protectedGlobs: config.workspace.protectedGlobs,
    writableRoots: config.workspace.writableRoots,
    ...(config.workspace.rootProtectedGlobs && { rootProtectedGlobs: config.workspace.rootProtectedGlobs }),
    readRoots: config.workspace.readRoots ?? undefined,
    // Wherever it lives, the session store holds other workspaces' conversations: `read` never opens
    // it (a prompt-injected run must not read what was said in another project), nor the prompt history.
    readDeny: [...config.workspace.readDeny, ...sessionStoreGlobs(config.sessions.dir), ...(config.history ? historyGlobs(config.history.file) : [])],
    denySecretFiles: config.workspace.denySecretFiles,
    secrets: config.workspace.secrets,
    denied: config.policy.denied,
    // Hidden from commands by the sandbox; the file tools keep out of them as well.
    ownDirs: config.unrestricted ? [] : [userStateDir().path, runDir.root],
  }).catch(async (error: unknown) => {
    // A long-lived host (conch acp) opens sessions in other directories: keep no run dir for none.
    await runDir.remove();
    throw error;
  });
  const sandbox = await sessionSandbox(config, workspace.root);
  const proxy = await networkProxy(sandbox, runDir.root);
  const sandboxSettings = { ...sandbox.settings, ownDirs: [runDir.root] };
  // Placeholders are made once per run, not around every command (file watchers see each one).
  const placeholders = new PlaceholderScope();
  const executorFor = (scope: PlaceholderScope, tmpDir: string) => createExecutor({
    placeholders: scope,
    workspace,
    unrestricted: sandbox.unrestricted,
    sandbox: sandboxSettings,
    limits: config.limits,
    env: config.env,
    shellEnabled: config.tools.shell,
    guard: options.guard,
    tmpDir,
    logDir: runDir.logDir,
    secrets: config.workspace.secrets,
    ...(proxy ? { proxy } : {}),
  });
  // Sandboxed commands can make nested repositories the user's git would obey: checked after each run.
  const nestedFor = (): NestedGitGuard | null =>
    sandbox.unrestricted || !config.tools.shell
      ? null
      : nestedGitGuard([workspace.root, ...sandbox.settings.writableRoots], sandbox.settings.cacheDir ? [sandbox.settings.cacheDir] : []);
  const watched = (exec: Executor, nested: NestedGitGuard | null): Executor =>
    nested
      ? (command, opts) => {
          nested.baseline();
          return exec(command, opts);
        }
      : exec;
  const nested = nestedFor();
  const laneGuards: NestedGitGuard[] = [];
  const executor = watched(executorFor(placeholders, runDir.tmpDir), nested);
  // Started now, so the servers come up while plugins load and the prompt is assembled.
  const mcp = await startMcp(config, options.mcpServers, {
    workspace: workspace.root,
    tmpDir: () => runDir.laneTmpDir(),
    sandbox: sandboxSettings,
    unrestricted: sandbox.unrestricted,
    placeholders,
  });

  const kernel = kernelTools(config, executor, workspace, new RevisionTracker());
  const catalog = kernelCatalog(kernel);
  const warnings: string[] = [];
  if (sandbox.warning) warnings.push(sandbox.warning);
  if (sandbox.pinned) warnings.push('the policy denies paths, so shell commands stay sandboxed despite --unrestricted');
  const plugins = await addPlugins(catalog, config, options.loadPlugins, workspace.root, warnings);
  const mcpReports = await mcp.register(catalog, warnings);
  let skills: RunSkills;
  try {
    narrowCatalog(catalog, config, warnings);
    // After flags and policy: a skill's allowed-tools narrow what they left, and the catalog of
    // skills needs to know whether `read` survived.
    const prepared = await prepareSkills(config, workspace, catalog);
    // Each refusal names the --skill value (setup-error.ts isFlagProblem).
    if (!prepared.ok) throw new ConfigError(prepared.message, undefined, '--skill');
    skills = prepared.value;
    warnings.push(...skills.warnings);
    // Last: what flags, policy and skills left is what counts against the provider's limit.
    capCatalog(catalog, config.provider ? [config.provider, ...config.fallbacks] : [], warnings);
  } catch (error) {
    await mcp.stop();
    await proxy?.close();
    await runDir.remove();
    throw error;
  }
  const checked = await checkSandbox(config, sandbox, catalog);
  if (checked.warning) warnings.push(checked.warning);

  const guidance = await loadGuidance(config.configDir, workspace.root, (path) => workspace.resolve(path, 'read'), process.env.HOME || homedir());
  const system = systemPrompt({
    workspaceRoot: workspace.root,
    tools: catalog.names(),
    unrestricted: config.unrestricted,
    network: config.sandbox.network,
    ...(config.sandbox.netAllow ? { netAllow: config.sandbox.netAllow } : {}),
    readOnly: config.tools.readOnly,
    guidance,
    skills: skills.catalog,
  });

  const lanes = new Set<PlaceholderScope>();
  return {
    workspace,
    catalog,
    system,
    makeContext: contextFactory(workspace, executor),
    executor,
    header: { mode: config.unrestricted ? 'unrestricted' : 'restricted', sandbox: checked.label },
    warnings,
    plugins,
    mcp: mcpReports,
    secrets: mcp.secrets,
    skills,
    endRun: () => {
      placeholders.close();
      return nested?.check() ?? [];
    },
    lane() {
      const scope = new PlaceholderScope();
      lanes.add(scope);
      const laneNested = nestedFor();
      if (laneNested) laneGuards.push(laneNested);
      const laneExecutor = watched(executorFor(scope, runDir.laneTmpDir()), laneNested);
      const own = kernelTools(config, laneExecutor, workspace, new RevisionTracker());
      return {
        // Plugin and MCP tools are shared; what they run goes through ctx.exec, the lane's executor.
        catalog: catalog.copyWith(new Map(kernel.map((tool, i) => [tool, own[i]!]))),
        makeContext: contextFactory(workspace, laneExecutor),
        endRun: () => {
          scope.close();
          return laneNested?.check() ?? [];
        },
      };
    },
    async dispose() {
      await mcp.stop();
      // A server that may write the workspace ran on after the last run's check (workspace/nested-git.ts).
      if (mcpReports.length > 0) for (const guard of [nested, ...laneGuards]) warnings.push(...(guard?.again() ?? []));
      placeholders.close();
      for (const scope of lanes) scope.close();
      await proxy?.close();
      await runDir.remove();
    },
  };
}
