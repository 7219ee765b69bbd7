// The lines of a session file. One JSON object per line, `t` first; the first line is the header.
// Images are stored once per file as a `blob` line and referenced by content hash from messages, so
// a screenshot sent once and carried through fifty turns is on disk once.
import type { Message, ToolResultMessage } from '../providers/types.ts';
import type { ContentBlock } from '../core/content.ts';

export const SESSION_FORMAT = 'conch-session';
export const SESSION_VERSION = 1;

/** What a run was allowed to do; a resumed run gets at most this (see policy.ts). */
export interface PolicySnapshot {
  unrestricted: boolean;
  readOnly: boolean;
  shell: boolean;
  filesystem: boolean;
  network: boolean;
  /** The network allowlist entries (null = no allowlist); absent in files written before it was recorded. */
  netAllow?: string[] | null;
  /** The sandbox profile (a name from sandbox-profiles/). */
  profile: string;
  /** --tools list (null = no restriction). */
  only: string[] | null;
  /** Tools denied by policy (names). */
  denied: string[];
  /** Extra writable roots (absolute). */
  writableRoots: string[];
  /** The --policy file (absolute), if one was given. */
  policyFile: string | null;
}

export interface HeaderRecord {
  t: 'session';
  format: typeof SESSION_FORMAT;
  version: number;
  id: string;
  /** The canonical workspace root the session belongs to. */
  cwd: string;
  created: string;
  /** A fork names the session and the number of runs it was taken from. */
  parent: { id: string; runs: number } | null;
}

export interface RunRecord {
  t: 'run';
  runId: string;
  time: string;
  provider: string;
  model: string;
  policy: PolicySnapshot;
}

export interface BlobRecord {
  t: 'blob';
  hash: string;
  mediaType: string;
  data: string;
}

/** An image block as stored: the bytes live in a blob line. */
export type StoredBlock = { type: 'text'; text: string } | { type: 'image'; mediaType: string; ref: string };

export type StoredMessage =
  | { role: 'user'; content: StoredBlock[] }
  /** As the provider returned it, signed thinking included (it must go back unchanged). */
  | Extract<Message, { role: 'assistant' }>;

export interface StoredResult extends Omit<ToolResultMessage, 'content'> {
  content: StoredBlock[];
}

export interface MessageRecord {
  t: 'msg';
  runId: string;
  m: StoredMessage;
}

export interface ResultRecord {
  t: 'result';
  runId: string;
  r: StoredResult;
}

/** The end of a run; a run without one was killed (SIGKILL, power loss). */
export interface EndRecord {
  t: 'end';
  runId: string;
  time: string;
  status: string;
  code?: string;
  limit?: string;
  message?: string;
  counts: { modelCalls: number; toolCalls: number; toolErrors: number };
  durationMs: number;
}

export type SessionRecord = HeaderRecord | RunRecord | BlobRecord | MessageRecord | ResultRecord | EndRecord;

export function imageHash(data: string): string {
  return new Bun.CryptoHasher('sha256').update(data).digest('hex');
}

/**
 * Turn content blocks into stored blocks; `blob` is called for each image whose hash the file does
 * not hold yet (the caller tracks which it has).
 */
export function storeBlocks(blocks: ContentBlock[], blob: (hash: string, block: Extract<ContentBlock, { type: 'image' }>) => void): StoredBlock[] {
  return blocks.map((b) => {
    if (b.type === 'text') return b;
    const hash = imageHash(b.data);
    blob(hash, b);
    return { type: 'image', mediaType: b.mediaType, ref: hash };
  });
}

export function restoreBlocks(blocks: StoredBlock[], blobs: Map<string, string>): ContentBlock[] {
  return blocks.map((b): ContentBlock => {
    if (b.type === 'text') return b;
    const data = blobs.get(b.ref);
    // A blob line lost to a torn write: say so in the conversation instead of failing the load.
    if (data === undefined) return { type: 'text', text: `[an image (${b.mediaType}) that the session file no longer holds]` };
    return { type: 'image', mediaType: b.mediaType, data };
  });
}
