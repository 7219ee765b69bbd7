// What the file tools (read, write, edit) share within one run.
import type { Workspace } from '../workspace/paths.ts';
import type { RevisionTracker } from '../workspace/revision.ts';

export interface FileToolDeps {
  workspace: Workspace;
  revisions: RevisionTracker;
  /** read: lines per page (default 2000). */
  readMaxLines?: number;
  /** read: bytes per page (default 50 KiB). */
  readMaxBytes?: number;
  /** read: bytes read of a file that reports a size of 0, such as /proc files (default 1 MiB). */
  pseudoFileMaxBytes?: number;
  /** read: largest image returned, in bytes of base64 (default 5 MiB, the common provider cap). */
  maxImageBase64Bytes?: number;
  /** write/edit: called between the complete temporary file and the rename. For tests. */
  beforeRename?: (tempPath: string) => void | Promise<void>;
}

export const DEFAULT_READ_MAX_LINES = 2000;
export const DEFAULT_READ_MAX_BYTES = 50 * 1024;
export const DEFAULT_MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024;

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 10 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}
