// STUB: interface fixed; implementation owned by the workspace/kernel work (issue 3).
import type { WorkspaceAccess } from '../tools/define.ts';

export interface WorkspaceOptions {
  /** The working directory at start; canonicalised (realpath) by open(). */
  root: string;
  /** Bypass containment and protected-path checks (the run header says so). */
  unrestricted: boolean;
  /** Extra protected globs (workspace-relative, picomatch) added to the defaults; never removes them. */
  protectedGlobs?: string[];
  /** Extra writable roots outside the workspace (absolute). */
  writableRoots?: string[];
  /** When set, reads are confined to these roots (absolute or workspace-relative). */
  readRoots?: string[];
  /** Globs whose matches may not be read. */
  readDeny?: string[];
  /** Switch on the secret-file read deny globs (**\/.env*, **\/*.pem, **\/*.key, **\/id_*). */
  denySecretFiles?: boolean;
}

export const DEFAULT_PROTECTED_GLOBS = ['.git', '.git/**', '.conch', '.conch/**', '.env', '.env.*'];

export class Workspace implements WorkspaceAccess {
  private constructor(readonly root: string, readonly options: WorkspaceOptions) {}
  static async open(options: WorkspaceOptions): Promise<Workspace> {
    throw new Error('not implemented');
  }
  async resolve(path: string, mode: 'read' | 'write'): Promise<string> {
    throw new Error('not implemented');
  }
  display(absolutePath: string): string {
    throw new Error('not implemented');
  }
}
