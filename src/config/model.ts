// Which provider and model a run talks to. Precedence: --model > CONCH_MODEL > config `model`
// (project over user). Without any, the first built-in provider with a key in the environment
// (anthropic, then openai) gets its default model; --base-url without a known provider prefix means
// an OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter). No key and no base URL → null.
import type { ProviderConfig, RetryPolicy } from './provider-config.ts';
import { ConfigError } from '../core/errors.ts';
import { isHttpUrl } from '../core/http-url.ts';

export const DEFAULT_MODELS = { anthropic: 'claude-sonnet-5-5', openai: 'gpt-5.4' } as const;

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, initialDelayMs: 1000, maxDelayMs: 30_000 };

/** A provider as the layers define it; apiKey is still the raw text (maybe a ${ENV} reference). */
export interface ProviderEntry {
  type: 'anthropic' | 'openai';
  baseUrl?: string;
  apiKey?: string;
  /** Where apiKey was written (config file) — for the message when its ${ENV} is unset. */
  apiKeyFile?: string;
}

export interface ModelChoice {
  value: string;
  /** '--model', 'CONCH_MODEL', or the config file that set "model". */
  source: string;
  file?: string;
}

type Env = Record<string, string | undefined>;

const set = (v: string | undefined) => (v === undefined || v === '' ? undefined : v);

const builtinKeyEnv: Record<string, string> = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY' };

/** "anthropic" and "openai" exist without config, so an entry for one may leave out its type. */
export const isBuiltinProvider = (name: string): name is 'anthropic' | 'openai' => Object.hasOwn(builtinKeyEnv, name);

/** The built-ins exist without any config: their key and base URL come from the environment. */
export function builtinProviders(env: Env): Map<string, ProviderEntry> {
  return new Map<string, ProviderEntry>([
    ['anthropic', { type: 'anthropic', apiKey: set(env.ANTHROPIC_API_KEY), baseUrl: set(env.ANTHROPIC_BASE_URL) }],
    ['openai', { type: 'openai', apiKey: set(env.OPENAI_API_KEY), baseUrl: set(env.OPENAI_BASE_URL) }],
  ]);
}

/** Replace every ${NAME} with the environment's value; a literal key passes through unchanged. */
export function expandApiKey(raw: string, env: Env, where: { name: string; file?: string }): string {
  return raw.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const value = set(env[name]);
    if (value === undefined) {
      throw new ConfigError(
        `${where.file ?? 'config'}: "providers.${where.name}.apiKey" refers to \${${name}}, which is not set in the environment. Export ${name}=… or change the reference.`,
        where.file,
        `providers.${where.name}.apiKey`,
      );
    }
    return value;
  });
}

export function resolveProvider(input: {
  providers: Map<string, ProviderEntry>;
  model: ModelChoice | undefined;
  baseUrl: string | undefined;
  env: Env;
  retry: RetryPolicy;
  /** The user config file as messages name it (XDG_CONFIG_HOME moves it): where a provider is defined. */
  userFile: string;
}): ProviderConfig | null {
  const { providers, model, baseUrl, env, retry, userFile } = input;
  let name: string;
  let modelId: string;
  if (model) {
    const slash = model.value.indexOf('/');
    const prefix = slash > 0 ? model.value.slice(0, slash) : '';
    const rest = model.value.slice(slash + 1);
    if (prefix && rest && providers.has(prefix)) {
      name = prefix;
      modelId = rest;
    } else if (baseUrl !== undefined) {
      return { type: 'openai', name: 'openai-compatible', model: model.value, baseUrl, apiKey: set(env.OPENAI_API_KEY), retry };
    } else {
      const known = [...providers.keys()].join(', ');
      // From the interactive /model no flag can be added any more, but config is read again at each /model.
      const fix = interactive(model)
        ? `define it under "providers" in ${userFile} and give /model again`
        : `define it under "providers" in ${userFile}, or pass --base-url for an OpenAI-compatible server`;
      const why =
        slash <= 0 || !rest
          ? `must be "provider/model", e.g. "anthropic/${DEFAULT_MODELS.anthropic}" or "openai/${DEFAULT_MODELS.openai}"`
          : `names the unknown provider "${prefix}" (known: ${known}); ${fix}`;
      const label = model.file ? `${model.file}: "model"` : model.source;
      throw new ConfigError(`${label} "${model.value}" ${why}.`, model.file, model.file ? 'model' : model.source);
    }
  } else if (baseUrl !== undefined) {
    throw new ConfigError(
      '--base-url needs --model NAME as well: the name of a model the server serves (e.g. --model qwen2.5-coder).',
      undefined,
      '--base-url',
    );
  } else {
    const withKey = (['anthropic', 'openai'] as const).find((n) => providers.get(n)?.apiKey !== undefined);
    if (!withKey) return null;
    name = withKey;
    modelId = DEFAULT_MODELS[withKey];
  }

  const entry = providers.get(name)!;
  const url = baseUrl ?? entry.baseUrl;
  // --base-url and config files are checked where they are read; what is left is the environment's.
  if (url !== undefined && !isHttpUrl(url)) {
    const where = isBuiltinProvider(name) ? `${name.toUpperCase()}_BASE_URL` : `the base URL of provider "${name}"`;
    throw new ConfigError(`${where} is ${JSON.stringify(url)}, which is no http:// or https:// URL (e.g. http://localhost:11434/v1): fix it, or unset it for the provider's own endpoint.`, undefined, where);
  }
  const apiKey = entry.apiKey === undefined ? undefined : expandApiKey(entry.apiKey, env, { name, file: entry.apiKeyFile });
  // The provider's own endpoint without a key cannot answer; a base URL may be a keyless local server.
  if (apiKey === undefined && url === undefined) {
    if (!model) return null;
    // The user named this model: what is missing is its key, not a model.
    const label = model.file ? `${model.file}: "model"` : model.source;
    const envName = builtinKeyEnv[name];
    const how = !envName
      ? `set "providers.${name}.apiKey" (or "baseUrl", for a keyless local server) in ${userFile}${interactive(model) ? ' and give /model again' : ''}`
      : interactive(model)
        ? `set "providers.${name}.apiKey" in ${userFile} and give /model again, or start conch again with ${envName}=… exported`
        : `export ${envName}=… (or set "providers.${name}.apiKey" in ${userFile})`;
    // The model is fine, its key is missing: no flag was wrong, so no pointer to --help.
    throw new ConfigError(`${label} "${model.value}" needs an API key for ${name}, and none is set: ${how}.`, model.file, `providers.${name}.apiKey`);
  }
  return { type: entry.type, name, model: modelId, ...(url !== undefined && { baseUrl: url }), ...(apiKey !== undefined && { apiKey }), retry };
}

/** Chosen with the interactive `/model` (flags.modelSource), where the fix is not a flag or an export. */
const interactive = (model: ModelChoice) => model.source === '/model';

/**
 * The setup message when no model is configured: the three ways to configure one. When the
 * environment points a built-in provider at a server (the local-server line of the README) the one
 * thing missing is the model's name, so that comes first.
 */
export function noModelMessage(configFile = '~/.config/conch/config.json', env: Env = {}): string {
  const pointed = (['OPENAI', 'ANTHROPIC'] as const).find((n) => set(env[`${n}_BASE_URL`]) !== undefined);
  if (pointed) {
    const provider = pointed.toLowerCase();
    return `${pointed}_BASE_URL is set (${env[`${pointed}_BASE_URL`]}) but no model is named: give a model the server serves, with CONCH_MODEL=${provider}/NAME${provider === 'openai' ? ' (e.g. export CONCH_MODEL=openai/qwen2.5-coder)' : ''} or --model ${provider}/NAME.`;
  }
  return [
    'no model is configured. Configure one of these three ways:',
    '  1. Set an API key:  export ANTHROPIC_API_KEY=…   (or OPENAI_API_KEY=…)',
    '  2. Use a local OpenAI-compatible server (Ollama, vLLM, llama.cpp):',
    '       conch --base-url http://localhost:11434/v1 --model qwen2.5-coder "your task"',
    `  3. Set "model" and "providers" in ${configFile}, for example:`,
    '       { "model": "local/qwen2.5-coder",',
    '         "providers": { "local": { "type": "openai", "baseUrl": "http://localhost:11434/v1" } } }',
  ].join('\n');
}
