// What each SKILL.md parsed to, remembered between starts. Importing the YAML parser and parsing 50
// files costs more than a start may spend on skills (bench/skills.ts), so a start parses only files
// that changed: an entry holds while the file's size, mtime, ctime and inode are what they were.
// Bodies are not cached; --skill reads its body from the file. The cache lives in conch's own cache
// folder, which sandboxed commands cannot write.
import { readFileSync, statSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import pkg from '../../package.json' with { type: 'json' };

/** Bumped with conch's version too: validation rules may change between releases. */
const FORMAT = `1:${pkg.version}`;
/** Entries from every workspace share the file; the least recently seen go first past this. */
export const CACHE_MAX_ENTRIES = 2000;
const CACHE_MAX_BYTES = 8 * 1024 * 1024;

export interface FileStamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

interface Entry<T> {
  stamp: FileStamp;
  value: T;
}

export class SkillCache<T> {
  private changed = false;
  private readonly seen = new Map<string, Entry<T>>();

  private constructor(
    private readonly file: string | null,
    private readonly previous: Map<string, Entry<T>>,
  ) {}

  /**
   * A missing, unreadable or foreign cache file is an empty cache; null means no caching. Read
   * synchronously, like discovery: it is conch's own small file, read once before anything runs.
   */
  static open<T>(file: string | null): SkillCache<T> {
    const entries = new Map<string, Entry<T>>();
    if (file) {
      try {
        const st = statSync(file, { throwIfNoEntry: false });
        const data = st?.isFile() && st.size <= CACHE_MAX_BYTES ? JSON.parse(readFileSync(file, 'utf8')) : null;
        if (data?.format === FORMAT && data.entries && typeof data.entries === 'object') {
          for (const [path, entry] of Object.entries(data.entries as Record<string, Entry<T>>)) {
            if (entry && typeof entry === 'object' && entry.stamp && 'value' in entry) entries.set(path, entry);
          }
        }
      } catch {
        // A broken cache costs a re-parse, nothing more.
      }
    }
    return new SkillCache<T>(file, entries);
  }

  get(path: string, stamp: FileStamp): T | undefined {
    const entry = this.previous.get(path);
    if (!entry || !sameStamp(entry.stamp, stamp)) return undefined;
    this.seen.set(path, entry);
    return entry.value;
  }

  set(path: string, stamp: FileStamp, value: T): void {
    this.seen.set(path, { stamp, value });
    this.changed = true;
  }

  /** Write the cache back when something was parsed; never fails the start. */
  async save(): Promise<void> {
    if (!this.file || !this.changed) return;
    const entries: Record<string, Entry<T>> = Object.fromEntries(this.seen);
    let count = this.seen.size;
    for (const [path, entry] of this.previous) {
      if (count >= CACHE_MAX_ENTRIES) break;
      if (path in entries) continue;
      entries[path] = entry;
      count++;
    }
    const temp = `${this.file}.${process.pid}.tmp`;
    try {
      await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
      await writeFile(temp, JSON.stringify({ format: FORMAT, entries }), { mode: 0o600 });
      await rename(temp, this.file);
    } catch {
      // Read-only home, full disk: the next start parses again.
      await rm(temp, { force: true }).catch(() => {});
    }
  }
}

function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino;
}
