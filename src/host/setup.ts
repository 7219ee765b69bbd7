// The pieces a host (CLI or ACP) needs before a run: config, the command guard, the plugin loader,
// and one way to report a setup failure.
import type { CliFlags, Config } from '../config/types.ts';
import { ConfigError } from '../core/errors.ts';
import { EXIT_CODES } from '../agent/outcome.ts';
import { type SessionOptions } from './session.ts';
import { SetupError } from '../core/errors.ts';
import type { Approver } from '../policy/command-rules.ts';
import { SessionError } from '../sessions/dir.ts';
import { stderr, stdinIsTTY, stdout } from '../core/stdio.ts';
import { setupEnvelope } from '../cli/envelope.ts';

export async function loadCliConfig(flags: CliFlags, cwd = process.cwd()): Promise<Config> {
  const { loadConfig } = await import('../config/load.ts');
  // The same trust as project plugins decides whether the project config may choose the model.
  const isTrusted = async (configDir: string, workspace: string) => (await import('../plugins/trust.ts')).isTrusted(configDir, workspace);
  return loadConfig({ cwd, env: process.env, flags, isTrusted });
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

/** An approver that asks on the terminal, only when both stdin and stderr are TTYs. */
export async function terminalApprover(signal: AbortSignal): Promise<Approver | undefined> {
  if (!stdinIsTTY() || !stderr.isTTY) return undefined;
  const { ttyApprover } = await import('../policy/approve.ts');
  return ttyApprover(process.stdin, process.stderr, signal);
}

export function buildPluginLoader(config: Config, beforeImport?: () => Promise<void> | void): SessionOptions['loadPlugins'] {
  if (!config.plugins.enabled) return undefined;
  return async (reserved, workspaceRoot) => {
    const { loadPlugins } = await import('../plugins/load.ts');
    return loadPlugins({ configDir: config.configDir, cwd: workspaceRoot, settings: config.plugins, reserved, beforeImport });
  };
}

/** Report a user-caused setup problem in one paragraph (or one JSON document) and return exit code 2. */
export function setupFailure(error: unknown, json: boolean, runId: string): number {
  if (!(error instanceof ConfigError || error instanceof SetupError || error instanceof SessionError || isUserFsError(error))) throw error;
  const message = (error as Error).message;
  if (json) {
    stdout.write(`${JSON.stringify(setupEnvelope(runId, message))}\n`);
  } else stderr.write(`conch: ${message}\n`);
  return EXIT_CODES.setup_error;
}

/** A missing or unreadable working directory is the user's situation, not a bug. */
function isUserFsError(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR';
}
