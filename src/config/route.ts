// The model route of a run from every layer: the providers the config files define (with what a
// project file may not redefine), the model chosen (--model > CONCH_MODEL > the files' "model"),
// then the fallbacks (the files' list, --fallback-model), each with its token and sampling controls.
import type { ConfigFile } from './file.ts';
import { withModelOptions } from './model-options.ts';
import { builtinProviders, type ModelChoice, type ProviderEntry, resolveProvider } from './model.ts';
import type { ProviderConfig, RetryPolicy } from './provider-config.ts';
import type { CliFlags } from './types.ts';
import { ConfigError } from '../core/errors.ts';

type Env = Record<string, string | undefined>;

export interface RouteInput {
  files: ConfigFile[];
  env: Env;
  flags: CliFlags;
  /** The files' choice: the first model and the rest of the route. */
  model: ModelChoice | undefined;
  route: ModelChoice[];
  /** Whether the project file's providers and model controls count (a trusted workspace). */
  useProject: boolean;
  retry: RetryPolicy;
  /** The user config file as messages name it. */
  userFile: string;
}

export function resolveRoute(input: RouteInput): { provider: ProviderConfig | null; fallbacks: ProviderConfig[] } {
  const { files, env, flags, retry, userFile } = input;
  let { model } = input;
  let route = [...input.route];
  // A model named in the environment or on the command line replaces the configured route.
  if (set(env.CONCH_MODEL)) [model, route] = [{ value: env.CONCH_MODEL!, source: 'CONCH_MODEL' }, []];
  if (flags.model !== undefined) [model, route] = [{ value: flags.model, source: flags.modelSource ?? '--model' }, []];
  route.push(...(flags.fallbackModel ?? []).map((m) => ({ value: m, source: '--fallback-model' })));
  const baseUrl = flags.baseUrl === undefined || flags.baseUrl === '' ? undefined : flags.baseUrl;
  const known = providersFrom(files, env, input.useProject);
  // The project file's output tokens, thinking and temperature count where its model would (untrusted-model.ts).
  const optionFiles = input.useProject ? files : files.filter((f) => f.kind !== 'project');
  const resolved = resolveProvider({ providers: known, model, baseUrl, env, retry, userFile });
  if (!resolved && route.length > 0) throw new ConfigError(`--fallback-model needs a first model (--model or "model" in ${userFile}) to fall back from.`, undefined, '--fallback-model');
  const fallbacks = resolved
    ? route.map((choice) => {
        if (!choice.value.includes('/')) throw new ConfigError(`${choice.source} "${choice.value}" must be "provider/model", e.g. "openai/gpt-5.4".`, choice.file, choice.file ? 'model' : choice.source);
        return withModelOptions(resolveProvider({ providers: known, model: choice, baseUrl: undefined, env, retry, userFile })!, optionFiles, flags);
      })
    : [];
  return { provider: resolved && withModelOptions(resolved, optionFiles, flags), fallbacks };
}

/** Redefinitions are refused whether or not `useProject` (trust) lets the project's providers count. */
function providersFrom(files: ConfigFile[], env: Env, useProject: boolean): Map<string, ProviderEntry> {
  const providers = builtinProviders(env);
  const builtins = new Set(providers.keys());
  const userNames = new Set<string>();
  for (const { kind, file, value } of files) {
    for (const [name, p] of Object.entries(value.providers ?? {})) {
      if (kind === 'project' && (builtins.has(name) || userNames.has(name))) {
        throw new ConfigError(
          `${file}: "providers.${name}" redefines a provider ${builtins.has(name) ? 'built into conch' : 'from your user config'}; a project config may only add new providers. Rename it (e.g. "${name}-project").`,
          file,
          `providers.${name}`,
        );
      }
      if (kind === 'user') userNames.add(name);
      else if (!useProject) continue;
      const before = providers.get(name);
      // The environment's base URL for a built-in outranks the file (env is the later layer).
      const envUrl = builtins.has(name) ? before?.baseUrl : undefined;
      // file.ts let the type be left out only for a built-in, which is there before any file.
      const type = p.type ?? before!.type;
      providers.set(name, {
        type,
        baseUrl: envUrl ?? p.baseUrl,
        apiKey: p.apiKey ?? (before?.type === type ? before.apiKey : undefined),
        apiKeyFile: p.apiKey !== undefined ? file : before?.apiKeyFile,
      });
    }
  }
  return providers;
}

function set(v: string | undefined): boolean {
  return v !== undefined && v !== '';
}
