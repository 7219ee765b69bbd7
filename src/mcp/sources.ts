// Which servers a run starts: the user's (config.json "mcpServers"), then the project's .mcp.json,
// which is the repository's file: its servers start only in a workspace the user trusted (`conch
// trust`), since each one is a program the repository names. Otherwise one line says which were
// skipped and how to start them.
import { join, relative } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import { parseJsonText } from '../config/json-text.ts';
import { parseServers, type ServerSpec } from './config.ts';
import { PROJECT_FILE } from './gate.ts';
import { contentHash, readMcpText } from '../plugins/trust.ts';
import { changedPath, hashPaths, namedPaths, type PinnedFiles } from '../workspace/pinned-files.ts';


export interface SourcesInput {
  /** The user config's "mcpServers" value and its file. */
  user: { file: string; value: unknown } | null;
  /** The workspace root (where .mcp.json is read). */
  cwd: string;
  env: Record<string, string | undefined>;
  /** The .mcp.json hash `conch trust` recorded: null when never trusted, undefined for a record older than the hash. */
  trustedHash: () => Promise<string | null | undefined>;
  /** The hashes of the workspace files the servers run, as `conch trust` recorded them (workspace/pinned-files.ts). */
  trustedFiles: () => Promise<PinnedFiles>;
}

export interface Sources {
  servers: ServerSpec[];
  /** One line for stderr when project servers were not started, else null. */
  skipped: string | null;
}

export async function configuredServers(input: SourcesInput): Promise<Sources> {
  const servers = input.user ? parseServers(input.user.value, { source: input.user.file, project: false, env: input.env }) : [];
  const file = join(input.cwd, PROJECT_FILE);
  const read = await readProjectFile(file);
  if (read === undefined) return { servers, skipped: null };
  if ('problem' in read) {
    // A file you trusted as it is now is yours to fix: a setup error. Any other is the repository's,
    // whose servers would not start anyway: a typo in it must not stop every run in the clone.
    // One that cannot be read at all (a directory, a FIFO, too large) has no bytes to have trusted:
    // in a trusted workspace it is a setup error, in any other it is skipped.
    const trusted = await input.trustedHash();
    if (read.text === null ? trusted !== null : trusted === contentHash(read.text)) throw read.problem;
    return { servers, skipped: `${read.problem.message}. Its servers are not started (it is the repository's file and not trusted); --no-mcp silences this.` };
  }
  const project = read.servers;
  const taken = new Set(servers.map((s) => s.name));
  const names = Object.keys((project ?? {}) as object).filter((n) => !taken.has(n));
  if (names.length === 0) return { servers, skipped: shadowNote(file, project, taken, input.user?.file) };
  const trusted = await input.trustedHash();
  if (trusted !== contentHash(read.text)) {
    const what = `${file}: MCP server${names.length > 1 ? 's' : ''} ${names.join(', ')} not started`;
    const them = names.length > 1 ? 'them' : 'it';
    return {
      servers,
      skipped:
        trusted === null
          ? `${what}: this workspace is not trusted. Run \`conch trust\` here to start ${them}.`
          : `${what}: the file changed since you trusted this workspace. Review it and run \`conch trust\` here again to start ${them}.`,
    };
  }
  const parsed = parseServers(project, { source: file, project: true, env: input.env }).filter((s) => !taken.has(s.name));
  const pinned = await input.trustedFiles();
  const own: ServerSpec[] = [];
  const changed: string[] = [];
  for (const spec of parsed) {
    const now = await hashPaths(await namedPaths((project as Record<string, unknown>)[spec.name], input.cwd, input.env));
    const path = changedPath(now, pinned);
    if (path === null) own.push(spec);
    else {
      changed.push(
        `${file}: MCP server ${spec.name} not started: it runs ${relative(input.cwd, path) || path}, which changed since you trusted this workspace (the model can write the workspace). ` +
          'Review it and run `conch trust` here again to start it.',
      );
    }
  }
  const notes = [...changed, shadowNote(file, project, taken, input.user?.file)].filter((n): n is string => n !== null);
  return { servers: [...servers, ...own], skipped: notes.length ? notes.join('\n') : null };
}

/** Yours win a name; left unsaid, the project's server would seem to run when it does not. */
function shadowNote(file: string, project: unknown, taken: Set<string>, userFile: string | undefined): string | null {
  const shadowed = Object.keys((project ?? {}) as object).filter((n) => taken.has(n));
  if (shadowed.length === 0) return null;
  const one = shadowed.length === 1;
  const list = shadowed.join(', ');
  return `${file}: MCP server${one ? '' : 's'} ${list} not started: your config names ${one ? 'a server' : 'servers'} ${list} too (${userFile}), and yours ${one ? 'is' : 'are'} used. Rename one to have both.`;
}

/** The "mcpServers" object of .mcp.json (or what is wrong with it) and the text; undefined when there is no such file. */
async function readProjectFile(file: string): Promise<{ servers: unknown; text: string } | { problem: ConfigError; text: string | null } | undefined> {
  let text: string | null;
  try {
    text = await readMcpText(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOTREG' ? 'it is not a regular file' : code === 'EISDIR' ? 'it is a directory' : (error as Error).message;
    return { problem: new ConfigError(`cannot read ${file}: ${why}. Make it a JSON file or remove it`, file), text: null };
  }
  if (text === null) return undefined;
  const parsed = parseJsonText(text);
  if (!parsed.ok) return { problem: new ConfigError(`${file}: ${parsed.message}`, file), text };
  const value = parsed.value as { mcpServers?: unknown } | null;
  if (!value || typeof value !== 'object' || Array.isArray(value) || !('mcpServers' in value)) {
    return { problem: new ConfigError(`${file}: expected { "mcpServers": { "name": { "command": … } } }`, file, 'mcpServers'), text };
  }
  return { servers: value.mcpServers, text };
}
