// Run the real conch CLI as a child process, the way a user does, with an isolated config dir.
import { afterAll, afterEach, beforeAll, beforeEach } from 'bun:test';
import { mkdtemp, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startModelServer, type ModelServer } from './model-server.ts';

export const REPO = resolve(import.meta.dir, '../..');
export const CONCH = join(REPO, "bin/conch");
export const BUN = process.execPath;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Sandbox {
  /** Canonical workspace directory (the child's cwd). */
  workspace: string;
  /** XDG_CONFIG_HOME for the child; conch's config dir is `${configHome}/conch`. */
  configHome: string;
  home: string;
  cleanup(): Promise<void>;
}

/** A temp workspace, config home and HOME, so no test reads the developer's real config. */
export async function makeDirs(): Promise<Sandbox> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'conch-cli-')));
  const workspace = join(base, 'ws');
  const configHome = join(base, 'config');
  const home = join(base, 'home');
  for (const d of [workspace, join(configHome, 'conch'), home]) await mkdir(d, { recursive: true });
  return { workspace, configHome, home, cleanup: () => rm(base, { recursive: true, force: true }) };
}

export async function writeConfig(dirs: Sandbox, config: unknown): Promise<void> {
  await writeFile(join(dirs.configHome, 'conch', 'config.json'), JSON.stringify(config, null, 2));
}

export interface RunOptions {
  dirs: Sandbox;
  args: string[];
  env?: Record<string, string>;
  stdin?: string;
  /** Called with the child once it started (to send signals). */
  onSpawn?: (child: ReturnType<typeof Bun.spawn>) => void;
}

/** The child's environment: the test's dirs, no colour, and only the variables given. */
export function conchEnv(dirs: Sandbox, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.configHome,
    TMPDIR: process.env.TMPDIR ?? tmpdir(),
    NO_COLOR: '1',
    ...extra,
  };
}

export async function runConch(options: RunOptions): Promise<CliResult> {
  const env = conchEnv(options.dirs, options.env);
  const child = Bun.spawn([CONCH, ...options.args], {
    cwd: options.dirs.workspace,
    env,
    stdin: options.stdin === undefined ? 'ignore' : new Blob([options.stdin]),
    stdout: 'pipe',
    stderr: 'pipe',
  });
  options.onSpawn?.(child);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { code, stdout, stderr };
}

/** Environment that points the Anthropic provider at the local model server. */
export function anthropicEnv(baseUrl: string): Record<string, string> {
  return { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: baseUrl };
}

/** Environment that points the OpenAI provider at the local model server. */
export function openaiEnv(baseUrl: string): Record<string, string> {
  return { OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: baseUrl };
}

/**
 * The usual integration-test frame: one model server per file, fresh temp dirs per test (with an
 * optional setup), everything removed afterwards. Read `server` and `dirs` inside tests and hooks.
 */
export function useHarness(setup?: (dirs: Sandbox) => Promise<void>): { readonly server: ModelServer; readonly dirs: Sandbox } {
  let server: ModelServer | undefined;
  let dirs: Sandbox | undefined;
  beforeAll(async () => {
    server = await startModelServer();
  });
  afterAll(() => server?.close());
  beforeEach(async () => {
    dirs = await makeDirs();
    server!.requests.length = 0;
    await setup?.(dirs);
  });
  afterEach(() => dirs?.cleanup());
  return {
    get server() {
      return server!;
    },
    get dirs() {
      return dirs!;
    },
  };
}
