// The resolved configuration every consumer (CLI, ACP, embedding API) hands to the run.
// Produced by config/load.ts from: defaults → ~/.config/conch/config.json → ./.conch/config.json
// → policy file (--policy) → environment → flags. Later layers narrow policy, never widen it.
import type { Limits } from '../core/limits.ts';
import type { ProviderConfig } from './provider-config.ts';
import type { SandboxSettings } from '../sandbox/index.ts';
import type { SecretLocation } from '../workspace/secrets.ts';

/** Flags as the CLI parsed them; every field optional. Names match the long flags. */
export interface PathDenial {
  mode: 'read' | 'write';
  rule: string;
  root?: string;
  glob?: string;
}

export interface CliFlags {
  model?: string;
  /** What set `model`, for messages: '--model' unless said otherwise (the interactive `/model`). */
  modelSource?: string;
  baseUrl?: string;
  maxTurns?: number;
  maxToolCalls?: number;
  timeout?: string | number;
  unrestricted?: boolean;
  network?: boolean; // --no-network sets false
  shell?: boolean; // --no-shell sets false
  filesystem?: boolean; // --no-filesystem sets false
  plugins?: boolean; // --no-plugins sets false
  readOnly?: boolean;
  allowHomeWrites?: boolean; // --allow-home-writes: a workspace containing $HOME may be written (config/home.ts)
  tools?: string; // --tools a,b,c
  toolsDir?: string[]; // --tools-dir (repeatable)
  plugin?: string[]; // --plugin NAME (first-party, repeatable)
  projectTools?: boolean;
  policy?: string;
  env?: string[]; // --env NAME=VALUE (CONCH_TASK_* only)
  allowWrite?: string[]; // --allow-write DIR (extra writable root)
  allowNet?: string[]; // --allow-net HOST[:PORT] (repeatable): the network allowlist
  profile?: string; // sandbox profile
  limit?: string[]; // --limit NAME=VALUE (repeatable), any limit in src/core/limits.ts
  stopOnDeny?: boolean; // --stop-on-deny: a policy denial ends the run as policy_denied
  mcp?: boolean; // --no-mcp sets false
  fallbackModel?: string[]; // --fallback-model M (repeatable): the route after --model
  maxOutputTokens?: number; // --max-output-tokens N
  thinking?: 'off' | 'low' | 'medium' | 'high'; // --thinking LEVEL
  temperature?: number; // --temperature T
  maxCost?: number; // --max-cost USD (limit cost_usd)
  skill?: string[]; // --skill NAME (repeatable): that skill's body goes into the task up front
  otel?: boolean; // --otel: export an OpenTelemetry trace per run (host/start.ts; the config does not read it)
}

export interface ToolsPolicy {
  /** --tools a,b,c: exactly this catalog (null = no restriction). */
  only: string[] | null;
  /** Tools denied by policy, with the id of the rule that denied each. */
  denied: { name: string; rule: string }[];
  /** --no-shell / policy: no bash and ctx.exec refuses. */
  shell: boolean;
  /** --no-filesystem: no read/write/edit. */
  filesystem: boolean;
  /** --read-only: no write/edit; bash under the read-only profile. */
  readOnly: boolean;
}

export interface PluginSettings {
  enabled: boolean;
  /** Extra folders (--tools-dir), absolute. */
  dirs: string[];
  /** First-party plugins from plugins/ switched on (--plugin NAME, config plugins: [...]). */
  firstParty: string[];
  /** --project-tools: load ./.conch/tools/ without trust. */
  projectTools: boolean;
  /** Tool names a plugin may override (config plugins.allowOverride). */
  allowOverride: string[];
  /** First-party plugins' own settings by plugin name (user config plugins.NAME, e.g. plugins.vault). */
  options?: Record<string, Record<string, unknown>>;
}

export interface Config {
  /** The config files that were read, in order (for messages). */
  files: string[];
  /** The config directory ($XDG_CONFIG_HOME/conch or ~/.config/conch). */
  configDir: string;
  /** null when no model is configured; running a task then fails with a setup error. */
  provider: ProviderConfig | null;
  /** The rest of the route (config "model" as a list, --fallback-model): tried in order when a model is unavailable. */
  fallbacks: ProviderConfig[];
  /** Per-million-token prices from config "prices", by "provider/model" or bare model id (over the shipped table). */
  prices: Record<string, { input: number; output: number; cacheRead?: number; cacheWrite?: number }>;
  limits: Limits;
  unrestricted: boolean;
  /** Set when the run is read-only for a reason other than a flag or policy (config/home.ts); for the header. */
  readOnlyWhy?: string;
  sandbox: SandboxSettings;
  workspace: {
    protectedGlobs: string[];
    writableRoots: string[];
    /** Extra protected globs of a writable root, relative to it, by the root (canonical): what its repository's git runs from outside .git (config/git-hooks.ts). */
    rootProtectedGlobs?: Record<string, string[]>;
    readRoots: string[] | null;
    readDeny: string[];
    denySecretFiles: boolean;
    /** Credential locations in force (built-in list minus read.allowSecret); absent: none. */
    secrets?: SecretLocation[];
  };
  tools: ToolsPolicy;
  plugins: PluginSettings;
  /** Command rules for the shell (null = no rules: every command allowed, sandbox still applies). */
  shellRules: unknown | null;
  policy: {
    /** A denial ends the run with outcome policy_denied instead of only informing the model. */
    stopOnDeny: boolean;
    /** The --policy file, when one was given (absolute). */
    file: string | null;
    /**
     * Every path denial with the id of its rule (policy file write/read deny rules, config
     * protected globs and read.deny). Also present in `workspace`/`sandbox` where expressible;
     * kept here so that they can be named in messages and still enforced under --unrestricted.
     */
    denied?: PathDenial[];
  };
  /** MCP servers: off with --no-mcp; the user config's "mcpServers" (the project's .mcp.json is read by mcp/sources.ts). */
  mcp: { enabled: boolean; user: { file: string; value: unknown } | null };
  /** --skill NAME: skills whose instructions go into the task up front (absent = none). */
  invokeSkills?: string[];
  /** CONCH_TASK_* variables passed to commands. */
  env: Record<string, string>;
  /** The session store: its directory and how many sessions are kept (0 = no cap). */
  sessions: { dir: string; keep: number };
  /**
   * The interactive prompt's history file, and whether submissions are stored there (config
   * "history", CONCH_HISTORY). Tools never read it, whichever: it holds what the user typed.
   */
  history: { file: string; enabled: boolean };
  /** Things the user should know that are not errors (e.g. a project root narrowed away); print on stderr. */
  warnings?: string[];
}
