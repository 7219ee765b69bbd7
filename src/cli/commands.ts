// Small commands for people: `conch tools`, `conch tools new`, `conch trust`, `conch sandbox …`.
import type { CliFlags } from '../config/types.ts';
import { EXIT_CODES } from '../agent/outcome.ts';
import { realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import { openSession } from '../host/session.ts';
import { hiddenForCommands } from '../workspace/read-hidden.ts';
import { stderr, stdout } from '../core/stdio.ts';
import { buildPluginLoader } from '../host/setup.ts';
import type { Watchdog } from './watchdog.ts';
import { loadCliConfig, setupFailure } from './setup.ts';
import { terminalSafe } from './tool-lines.ts';
import { UsageError } from './argv.ts';

export async function toolsCommand(action: string | undefined, name: string | undefined, flags: CliFlags, json: boolean): Promise<number> {
  const tools = await import('./tools-command.ts');
  try {
    const config = await loadCliConfig(flags);
    if (action === 'new') {
      if (!name) return usage('conch tools new NAME');
      return await tools.toolsNew(name, config.configDir);
    }
    if (action !== undefined) return usage(`unknown 'tools' action '${action}'; use 'conch tools' or 'conch tools new NAME'`);
    // A plugin that never yields while it loads would hold the listing forever: past its load time
    // the watchdog ends conch (and a signal still does).
    let watchdog: Watchdog | undefined;
    const session = await openSession(config, {
      cwd: process.cwd(),
      loadPlugins: buildPluginLoader(config, async (loadTimeoutMs) => {
        const { startWatchdog } = await import('./watchdog.ts');
        watchdog ??= startWatchdog('tools', json, null, 'conch tools');
        watchdog.document({ tools: null, plugins: null, pluginsEnabled: true });
        watchdog.loading(loadTimeoutMs);
      }),
    });
    if (watchdog && !watchdog.finishing()) await new Promise(() => {});
    watchdog?.stop();
    try {
      return await tools.toolsList({ catalog: session.catalog, reports: session.plugins, workspace: session.workspace.root, json, pluginsEnabled: config.plugins.enabled });
    } finally {
      await session.dispose();
    }
  } catch (error) {
    return setupFailure(error, json, null, 'tools');
  }
}

export async function skillsCommand(json: boolean): Promise<number> {
  try {
    const config = await loadCliConfig({});
    const cwd = await realpath(process.cwd());
    const [{ loadSkills }, { workspaceTrusted }, { skillsList }] = await Promise.all([
      import('../skills/load.ts'),
      import('../plugins/trust.ts'),
      import('./skills-command.ts'),
    ]);
    const trusted = await workspaceTrusted(config.configDir, cwd);
    const set = await loadSkills({ home: process.env.HOME || homedir(), configDir: config.configDir, cwd, trusted: async () => trusted });
    return skillsList({ set, cwd, trusted, json, io: { out: (t) => stdout.write(t), err: (t) => stderr.write(t) } });
  } catch (error) {
    return setupFailure(error, json, null, 'skills');
  }
}

export async function trust(): Promise<number> {
  const [{ trustCommand }, config] = await Promise.all([import('./tools-command.ts'), loadCliConfig({})]);
  return trustCommand(config.configDir, process.cwd());
}

export async function sandboxCommand(action: string | undefined, command: string[], opts: { network: boolean; profile?: string }): Promise<number> {
  const { sandboxCheck, sandboxRun } = await import('./sandbox-command.ts');
  if (action === 'check') {
    // `conch sandbox check ls` checks nothing about ls: a word there is a mistake, not a wish.
    if (command.length) return usage(`'conch sandbox check' takes no arguments, got: ${command.join(' ')}; to run a command: conch sandbox run -- ${command.join(' ')}`);
    return sandboxCheck(stdout);
  }
  if (action === 'run') {
    if (command.length === 0) return usage('conch sandbox run [--no-network] [--profile NAME] -- CMD ARGS…');
    // Exactly the policy the bash tool would get in this directory: config roots, globs and network;
    // --profile is the same layer over the config's as for a run (it can only narrow, and says so).
    let config;
    try {
      config = await loadCliConfig(opts.profile === undefined ? {} : { profile: opts.profile });
    } catch (error) {
      return setupFailure(error, false, null, 'sandbox');
    }
    for (const warning of config.warnings ?? []) stderr.write(`conch: ${terminalSafe(warning)}\n`);
    return sandboxRun(command, {
      network: opts.network && config.sandbox.network,
      profile: config.sandbox.profile,
      cwd: process.cwd(),
      writableRoots: config.sandbox.writableRoots,
      protectedGlobs: config.sandbox.protectedGlobs,
      ...(config.sandbox.rootProtectedGlobs ? { rootProtectedGlobs: config.sandbox.rootProtectedGlobs } : {}),
      hidden: await hiddenForCommands(config, await realpath(process.cwd())),
      taskEnv: config.env,
      ...(config.sandbox.cacheDir ? { cacheDir: config.sandbox.cacheDir } : {}),
      ...(config.sandbox.netAllow ? { netAllow: config.sandbox.netAllow } : {}),
    });
  }
  return usage("conch sandbox check | conch sandbox run [--no-network] [--profile NAME] -- CMD ARGS…");
}

/** main.ts reports it as any usage error: the pointer to --help, and under --json the document. */
function usage(text: string): never {
  throw new UsageError(`usage: ${text}`);
}
