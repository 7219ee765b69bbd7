// Workspace trust: project plugins (./.conch/tools) are code from whoever wrote the repository, so they
// run only after the user said so for this exact folder content. A clone must never execute anything.
// The project's .mcp.json and .conch/config.json (its model and providers) are pinned the same way,
// each to its bytes as trusted: a pull, or anything that can write the workspace, must not change
// which programs start or which server drives the tools without a new `conch trust`.
import { mkdir, readFile, realpath, rename, unlink, writeFile } from 'node:fs/promises';
import { configWriteFailure, mkdirFailure } from '../core/errors.ts';
import { readSmallFile } from '../workspace/small-file.ts';
import { join } from 'node:path';
import { projectToolsDir } from './discover.ts';
import { readFolder } from './snapshot.ts';
import { canonical } from '../core/paths.ts';
import { hashPaths, namedPaths, type PinnedFiles } from '../workspace/pinned-files.ts';
import { foreignWriter } from '../workspace/foreign-writers.ts';
import { parseJsonText } from '../config/json-text.ts';

const TRUST_FILE = 'trusted.json';

interface TrustRecord {
  /** sha256 of the project tools folder when it was trusted. */
  hash: string;
  /** sha256 of .mcp.json when it was trusted ('' when there was none); absent in older records. */
  mcp?: string;
  /** sha256 of .conch/config.json when it was trusted ('' when there was none); absent in older records. */
  config?: string;
  /** The workspace files .mcp.json's servers run, hashed when trusted (workspace/pinned-files.ts); absent in older records. */
  mcpFiles?: PinnedFiles;
  trustedAt: string;
}

interface TrustFile {
  version: 1;
  workspaces: Record<string, TrustRecord>;
}

export type TrustState =
  | { state: 'trusted'; workspace: string }
  | { state: 'untrusted'; workspace: string; reason: string }
  | { state: 'changed'; workspace: string; reason: string };

export type TrustResult =
  | {
      ok: true;
      workspace: string;
      hash: string;
      files: string[];
      /** The .mcp.json trusted as it is now (null: there was none). */
      mcp: string | null;
      /** Whether there was a .conch/config.json to trust. */
      config: boolean;
    }
  | { ok: false; message: string };

export function trustFilePath(configDir: string): string {
  return join(configDir, TRUST_FILE);
}

/**
 * A deterministic hash of a folder: relative names and bytes of every file, recursively, in sorted
 * order (see readFolder). A missing folder hashes as empty.
 */
export async function hashFolder(dir: string): Promise<{ hash: string; files: string[] }> {
  const { hash, entries } = await readFolder(dir);
  return { hash, files: entries.flatMap((e) => (e.bytes === null ? [] : [e.rel])) };
}

async function readTrustFile(configDir: string): Promise<{ ok: true; data: TrustFile } | { ok: false; message: string }> {
  const file = trustFilePath(configDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    // ENOTDIR: a file where the config folder should be, so no trust file either (a write says why).
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: true, data: { version: 1, workspaces: {} } };
    return { ok: false, message: `cannot read ${file} (${mkdirFailure(error)}): make it readable, or set XDG_CONFIG_HOME to a directory of yours` };
  }
  try {
    const data = JSON.parse(text) as TrustFile;
    if (data && data.version === 1 && data.workspaces && typeof data.workspaces === 'object') return { ok: true, data };
  } catch {
    // fall through to the shared message
  }
  return { ok: false, message: `${file} is not a valid trust file; delete it and run \`conch trust\` again in each workspace you trust` };
}


export const NOT_TRUSTED_REASON = 'workspace not trusted: run `conch trust` in it to load its .conch/tools, or pass --project-tools';
export const CHANGED_REASON = 'changed since trusted: .conch/tools differs from what you trusted; review it and run `conch trust` again';

/**
 * The hash the user trusted for the project plugins of `cwd`, or why there is none. The loader
 * compares it with the hash of the very bytes it is about to import (snapshot.ts).
 */
export async function trustedHash(configDir: string, cwd: string): Promise<{ ok: true; workspace: string; hash: string } | { ok: false; workspace: string; reason: string }> {
  const found = await trustRecord(configDir, cwd);
  return found.ok ? { ok: true, workspace: found.workspace, hash: found.record.hash } : found;
}

/**
 * Why trusting `workspace` would let another user choose what runs here, or null. Asked again at
 * every use of a record, not only by `conch trust`: a folder trusted while it was the user's (a
 * checkout under /tmp) may since have been removed and made again by someone else, or opened up.
 */
function foreignTrust(workspace: string): string | null {
  const why = foreignWriter(workspace);
  return why && `${why}: another user could plant the plugins, MCP servers, model and skills that \`conch trust\` lets run there. Make it and the folders above it yours alone (chmod o-w, chown), or work in a copy in a folder of your own, then run \`conch trust\` again`;
}

async function trustRecord(configDir: string, cwd: string): Promise<{ ok: true; workspace: string; record: TrustRecord } | { ok: false; workspace: string; reason: string }> {
  const workspace = canonical(cwd);
  const file = await readTrustFile(configDir);
  if (!file.ok) return { ok: false, workspace, reason: file.message };
  const record = file.data.workspaces[workspace];
  if (!record || typeof record.hash !== 'string') return { ok: false, workspace, reason: NOT_TRUSTED_REASON };
  const foreign = foreignTrust(workspace);
  if (foreign) return { ok: false, workspace, reason: `workspace trust ignored: ${foreign}` };
  return { ok: true, workspace, record };
}

/** Whether the project plugins of `cwd` may run: trusted, never trusted, or changed since trusted. */
export async function trustState(configDir: string, cwd: string): Promise<TrustState> {
  const trusted = await trustedHash(configDir, cwd);
  if (!trusted.ok) return { state: 'untrusted', workspace: trusted.workspace, reason: trusted.reason };
  const now = await hashFolder(projectToolsDir(trusted.workspace)).catch((error: Error) => error);
  // Too large to read is a folder `conch trust` would not have taken: not the one trusted.
  if (now instanceof Error) return { state: 'changed', workspace: trusted.workspace, reason: `${CHANGED_REASON} (${now.message})` };
  if (now.hash !== trusted.hash) return { state: 'changed', workspace: trusted.workspace, reason: CHANGED_REASON };
  return { state: 'trusted', workspace: trusted.workspace };
}

/**
 * Whether the user ran `conch trust` in this workspace at all. Project skills need only that: they
 * are instructions, not code conch imports, so unlike plugins they are not pinned to a hash.
 */
export async function workspaceTrusted(configDir: string, cwd: string): Promise<boolean> {
  return (await trustedHash(configDir, cwd)).ok;
}

export async function isTrusted(configDir: string, cwd: string): Promise<boolean> {
  return (await trustState(configDir, cwd)).state === 'trusted';
}

/**
 * The hash a trust record pins a file to: of `text` as read, '' for no file. .mcp.json names programs
 * the next run starts with the ${VAR}s it asks for, API keys included, and the model (or a pull) can
 * rewrite it after `conch trust`: its servers start only while its bytes are the ones trusted; the
 * same holds for .conch/config.json and the model server it chooses.
 */
export function contentHash(text: string | null): string {
  return text === null ? '' : new Bun.CryptoHasher('sha256').update(text).digest('hex');
}

/**
 * Whether the project config of `cwd`, read as `text`, may choose the model and add providers: in a
 * trusted workspace (its .conch/tools unchanged) while the file is as it was trusted. 'changed': the
 * workspace is trusted but the file is not the one trusted (or the record predates config hashes).
 */
export async function projectConfigTrust(configDir: string, cwd: string, text: string): Promise<'trusted' | 'untrusted' | 'changed'> {
  const found = await trustRecord(configDir, cwd);
  if (!found.ok) return 'untrusted';
  const tools = await hashFolder(projectToolsDir(found.workspace)).catch(() => null);
  if (tools?.hash !== found.record.hash) return 'untrusted';
  return found.record.config === contentHash(text) ? 'trusted' : 'changed';
}

/** The .mcp.json hash trusted for `cwd`: null when the workspace is not trusted, undefined when the record predates it. */
export async function trustedMcpHash(configDir: string, cwd: string): Promise<string | null | undefined> {
  const found = await trustRecord(configDir, cwd);
  if (!found.ok) return null;
  return typeof found.record.mcp === 'string' ? found.record.mcp : undefined;
}

/** The hashes of the workspace files .mcp.json's servers run, as trusted for `cwd` ({} when none were recorded). */
export async function trustedMcpFiles(configDir: string, cwd: string): Promise<PinnedFiles> {
  const found = await trustRecord(configDir, cwd);
  const record = found.ok ? found.record : undefined;
  return record?.mcpFiles && typeof record.mcpFiles === 'object' ? record.mcpFiles : {};
}

/** What each stdio server in a .mcp.json text names in the workspace, hashed now (none for text that is no such file). */
export async function mcpServerFiles(text: string | null, workspace: string, env: Record<string, string | undefined>): Promise<PinnedFiles> {
  // Parsed as a run parses it (mcp/gate.ts projectServers, a layer above): a byte-order mark accepted.
  const parsed = text === null ? null : parseJsonText(text);
  const servers = parsed?.ok ? (parsed.value as { mcpServers?: unknown } | null)?.mcpServers : null;
  if (!servers || typeof servers !== 'object') return {};
  const paths = (await Promise.all(Object.values(servers).map((entry) => namedPaths(entry, workspace, env)))).flat();
  return hashPaths(paths);
}

/** Far above any real .mcp.json; a bound so that a link to /dev/zero cannot fill memory. */
export const MCP_FILE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The text of a workspace's .mcp.json, null when there is none. The model can write the workspace, so
 * the file may be a FIFO (whose open would hang every start there) or a link to a device: it is read
 * as a small regular file or not at all (the error says which).
 */
export async function readMcpText(file: string): Promise<string | null> {
  const read = await readSmallFile(file, MCP_FILE_MAX_BYTES);
  if (!read) return null;
  if (read.truncated) throw Object.assign(new Error(`it is larger than ${MCP_FILE_MAX_BYTES / 1024 / 1024} MiB`), { code: 'EFBIG' });
  return read.bytes.toString('utf8');
}

async function readMcpFile(workspace: string): Promise<string | null> {
  return readMcpText(join(workspace, '.mcp.json')).catch(() => null);
}

/** The project config's text as config/file.ts reads it (the same bound), null when there is none or it cannot be read. */
async function readProjectConfig(workspace: string): Promise<string | null> {
  const read = await readSmallFile(join(workspace, '.conch', 'config.json'), MCP_FILE_MAX_BYTES).catch(() => null);
  return read && !read.truncated ? read.bytes.toString('utf8') : null;
}

/** Record the canonical workspace path and the current hashes of its .conch/tools folder, .mcp.json (and the workspace files its servers run) and .conch/config.json. */
export async function trustWorkspace(configDir: string, cwd: string): Promise<TrustResult> {
  const workspace = canonical(cwd);
  const foreign = foreignTrust(workspace);
  if (foreign) return { ok: false, message: `cannot trust ${workspace}: ${foreign}.` };
  const file = await readTrustFile(configDir);
  if (!file.ok) return { ok: false, message: file.message };
  let hash: string;
  let files: string[];
  try {
    ({ hash, files } = await hashFolder(projectToolsDir(workspace)));
  } catch (error) {
    return { ok: false, message: `cannot trust .conch/tools: ${(error as Error).message}` };
  }
  const mcp = await readMcpFile(workspace);
  const config = await readProjectConfig(workspace);
  const mcpFiles = await mcpServerFiles(mcp, workspace, process.env);
  file.data.workspaces[workspace] = { hash, mcp: contentHash(mcp), mcpFiles, config: contentHash(config), trustedAt: new Date().toISOString() };
  // Write then rename: a crash mid-write must not leave a truncated trust file behind.
  const target = trustFilePath(configDir);
  const temp = `${target}.${process.pid}.tmp`;
  try {
    await mkdir(configDir, { recursive: true, mode: 0o700 });
    await writeFile(temp, `${JSON.stringify(file.data, null, 2)}\n`, { mode: 0o600 });
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => {});
    return { ok: false, message: configWriteFailure(target, error) };
  }
  return { ok: true, workspace, hash, files, mcp, config: config !== null };
}
