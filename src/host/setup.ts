// The pieces of a host's start: config for a workspace, the command guard, the plugin loader.
import type { CliFlags, Config } from '../config/types.ts';
import type { Approver } from '../policy/command-rules.ts';
import type { SessionOptions } from './session.ts';

export type Env = Record<string, string | undefined>;

export async function loadHostConfig(flags: CliFlags, cwd: string, env: Env = process.env): Promise<Config> {
  const { loadConfig } = await import('../config/load.ts');
  // The same trust as project plugins decides whether the project config may choose the model,
  // pinned to the file's text as trusted.
  const projectTrust = async (configDir: string, workspace: string, text: string) =>
    (await import('../plugins/trust.ts')).projectConfigTrust(configDir, workspace, text);
  return loadConfig({ cwd, env, flags, projectTrust });
}

/** The command guard for this config; `approver` answers `ask` rules (TTY prompt, or ACP permission). */
export async function buildGuard(config: Config, approver?: Approver): Promise<SessionOptions['guard']> {
  if (!config.shellRules) return undefined;
  const [{ createCommandGuard, findOnPath, shellRuleLayers, shellRuleRoots }, { cleanEnv }] = await Promise.all([
    import('../policy/command-rules.ts'),
    import('../process/spawn.ts'),
  ]);
  // Executables resolve through the PATH commands actually run with, not the user's shell PATH.
  const path = cleanEnv(process.env, {}).PATH ?? '/usr/bin:/bin';
  const layers = shellRuleLayers(config.shellRules);
  if (!layers || layers.length === 0) return undefined;
  return createCommandGuard(layers, { resolveExecutable: findOnPath, path, approver, mutableRoots: shellRuleRoots(config.shellRules) });
}

export function buildPluginLoader(config: Config, beforeImport?: (loadTimeoutMs: number) => Promise<void> | void): SessionOptions['loadPlugins'] {
  if (!config.plugins.enabled) return undefined;
  return async (reserved, workspaceRoot) => {
    const { loadPlugins } = await import('../plugins/load.ts');
    return loadPlugins({ configDir: config.configDir, cwd: workspaceRoot, settings: config.plugins, reserved, beforeImport });
  };
}
