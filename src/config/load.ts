// The resolved Config from: defaults → $XDG_CONFIG_HOME/conch/config.json (else
// ~/.config/conch/config.json) → ./.conch/config.json → --policy FILE → environment → flags.
// This file puts the layers together in that order; each part is a module of its own:
//   flag-values.ts    flags checked first, so a typo is reported as itself
//   file-settings.ts  limits, retry, model, prices, sessions and plugins from the files (a project
//                     file, someone else's, may only lower limits and cannot switch plugins on)
//   untrusted-model.ts a project file's model, providers and model controls count only in a trusted workspace,
//                     and only while the file is as it was trusted
//   route.ts          the providers and the model route (--model > CONCH_MODEL > files)
//   layers.ts         policy (tools, paths, commands, network, sandbox), which only ever narrows
//   own-dirs.ts, home.ts  conch's own folders and the home directory inside a workspace
// Flags and the environment are yours and override everything but policy.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { checkDirFlag } from './dir-flags.ts';
import { type ConfigFile, fileLayer, readConfigFile } from './file.ts';
import { mergeFileSettings } from './file-settings.ts';
import { checkLimitFlags, checkPluginFlags, checkUnrestrictedFlags, count, flagLayer, limitOverrides, taskEnv, timeoutFlag } from './flag-values.ts';
import { applyHomeGuard, protectHomeInRoots } from './home.ts';
import { mergePolicy } from './layers.ts';
import { checkNetAllow } from './network.ts';
import { protectOwnDirs, protectPolicyFile } from './own-dirs.ts';
import { protectGitHooks } from './git-hooks.ts';
import { checkPluginNames } from './plugin-names.ts';
import { resolveRoute } from './route.ts';
import { secretPolicy } from './secrets.ts';
import { type ProjectTrust, untrustedModelChoice } from './untrusted-model.ts';
import { cacheHome, configDirOf, historyFileOf, historyOff, stateHome } from './xdg.ts';
import { tildePath } from '../core/display-path.ts';
import { ConfigError } from '../core/errors.ts';
import type { ShellRules } from './command-layer.ts';
import { type CliFlags, type Config } from './types.ts';

export { noModelMessage } from './model.ts';
export { parseDuration } from './flag-values.ts';

type Env = Record<string, string | undefined>;

export interface LoadInput {
  cwd: string;
  env: Env;
  flags: CliFlags;
  /**
   * Whether the user trusted this workspace with this project config (`conch trust`,
   * plugins/trust.ts). Only then may the project config choose the model or add providers. Absent:
   * never trusted.
   */
  projectTrust?: ProjectTrust;
}

export async function loadConfig(input: LoadInput): Promise<Config> {
  const { env, flags } = input;
  const cwd = resolve(input.cwd);
  const home = env.HOME || homedir();
  const configDir = configDirOf(env, home);

  const userPath = join(configDir, 'config.json');
  const files = [
    await readConfigFile('user', userPath, configDir, tildePath(userPath)),
    await readConfigFile('project', join(cwd, '.conch', 'config.json'), cwd, tildePath(userPath)),
  ].filter((f): f is ConfigFile => f !== null);
  const chooser = await untrustedModelChoice(files, configDir, cwd, input.projectTrust);
  const policyLayer = flags.policy ? await (await import('./policy-file.ts')).loadPolicyFile(flags.policy, cwd) : undefined;

  // Flags are checked before anything that depends on them, so a typo is reported as itself.
  const env_ = taskEnv(flags.env);
  const flagsLayer = flagLayer(flags, cwd);
  const deadline = timeoutFlag(flags);
  const modelCalls = count('--max-turns', flags.maxTurns);
  const toolCalls = count('--max-tool-calls', flags.maxToolCalls);
  const limitFlags = limitOverrides(flags.limit);
  checkLimitFlags(flags);
  checkPluginFlags(flags);
  checkUnrestrictedFlags(flags);

  const settings = mergeFileSettings(files, { projectModelIgnored: chooser !== null, pluginsEnabled: flags.plugins !== false });
  const { limits, retry, prices, plugins } = settings;
  const warnings: string[] = [...(chooser ? [chooser.warning] : []), ...settings.warnings];
  const named = [...settings.named];
  if (deadline !== undefined) limits.deadline_ms = deadline;
  if (modelCalls !== undefined) limits.model_calls = modelCalls;
  if (toolCalls !== undefined) limits.tool_calls = toolCalls;
  Object.assign(limits, limitFlags);
  for (const name of flags.plugin ?? []) plugins.firstParty.add(name);
  if (flags.plugin?.length) named.push({ names: flags.plugin, where: () => ({ label: '--plugin', key: '--plugin' }) });
  if (named.length) await checkPluginNames(named, tildePath(join(configDir, 'tools')));
  checkDirFlag('--tools-dir', flags.toolsDir, cwd);
  plugins.dirs.push(...(flags.toolsDir ?? []).map((d) => resolve(cwd, d)));
  const stopOnDeny = flags.stopOnDeny ?? settings.stopOnDeny;
  if (flags.maxCost !== undefined) limits.cost_usd = flags.maxCost;

  const { provider, fallbacks } = resolveRoute({ files, env, flags, model: settings.model, route: settings.route, useProject: !chooser, retry, userFile: tildePath(userPath) });

  const layers = [...files.map((f) => fileLayer(f, home)), ...(policyLayer ? [policyLayer] : []), flagsLayer];
  const policy = mergePolicy(layers, cwd);
  checkNetAllow(files, flags.allowNet);
  const sessionsDir = join(stateHome(env, home), 'conch', 'sessions');
  const historyFile = historyFileOf(env, home);
  protectOwnDirs(policy, cwd, { configDir, cacheDir: join(cacheHome(env, home), 'conch'), sessionsDir, historyFile });
  if (flags.policy !== undefined) protectPolicyFile(policy, cwd, resolve(cwd, flags.policy));
  // After the policy's own verdict on the roots, which names the rule.
  if (!flags.unrestricted) checkDirFlag('--allow-write', flags.allowWrite, cwd);
  const homeRun = applyHomeGuard(policy, cwd, home, flags, warnings);
  if (!flags.unrestricted) protectHomeInRoots(policy, home, warnings);
  if (!flags.unrestricted) await protectGitHooks(policy, cwd, env);
  policy.sandbox.cacheDir = join(cacheHome(env, home), 'conch', 'sandbox');
  policy.workspace.secrets = secretPolicy(files, configDir, home, cwd, warnings);
  // Command rules need to know where commands can swap a directory for a link (command-rules.ts).
  const shellRules: ShellRules | null = policy.shellRules && { layers: policy.shellRules, mutableRoots: [cwd, ...policy.sandbox.writableRoots, '/tmp'] };
  return {
    files: [...files.map((f) => f.file), ...(flags.policy ? [resolve(cwd, flags.policy)] : [])],
    configDir,
    // The provider bounds raw response bytes from the model-output limit.
    provider: provider && { ...provider, modelOutputBytes: limits.model_output_bytes, prices, userConfigFile: tildePath(userPath) },
    fallbacks: fallbacks.map((p) => ({ ...p, modelOutputBytes: limits.model_output_bytes, prices, userConfigFile: tildePath(userPath) })),
    prices,
    limits,
    unrestricted: flags.unrestricted === true,
    ...(homeRun?.readOnlyWhy && { readOnlyWhy: homeRun.readOnlyWhy }),
    sandbox: policy.sandbox,
    workspace: policy.workspace,
    tools: policy.tools,
    plugins: {
      enabled: plugins.enabled,
      dirs: plugins.dirs,
      firstParty: [...plugins.firstParty],
      projectTools: flags.projectTools === true,
      allowOverride: plugins.allowOverride,
      ...(Object.keys(plugins.options).length > 0 && { options: plugins.options }),
    },
    shellRules,
    policy: { stopOnDeny, file: flags.policy ? resolve(cwd, flags.policy) : null, denied: policy.denied },
    mcp: { enabled: flags.mcp !== false, user: userMcp(files) },
    env: env_,
    sessions: { dir: sessionsDir, keep: settings.sessionsKeep },
    history: { file: historyFile, enabled: historyOn(env, settings.history) },
    ...(flags.skill?.length && { invokeSkills: [...new Set(flags.skill)] }),
    warnings: [...warnings, ...policy.warnings],
  };
}

/** CONCH_HISTORY (yours, like a flag) over the config files' "history". */
function historyOn(env: Env, files: boolean): boolean {
  const value = env.CONCH_HISTORY;
  if (value === undefined || value === '') return files;
  if (historyOff(value)) return false;
  if (/^(1|true|on|yes)$/i.test(value)) return true;
  throw new ConfigError(`CONCH_HISTORY=${JSON.stringify(value)} is not a switch: set CONCH_HISTORY=0 to keep the prompt history off disk, or CONCH_HISTORY=1 (or unset it) to store it.`, undefined, 'CONCH_HISTORY');
}

function userMcp(files: ConfigFile[]): Config['mcp']['user'] {
  const user = files.find((f) => f.kind === 'user' && f.value.mcpServers !== undefined);
  return user ? { file: user.file, value: user.value.mcpServers } : null;
}
