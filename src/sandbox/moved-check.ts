// sameDirectory's check (directories.ts) again, inside the sandbox, once bwrap's mounts are in place.
// The host checks the workspace and each writable root before it builds the command, but bwrap
// mounts them by path, later: a command of the same run in a sandbox of its own (a writable root
// above the workspace lets one) can move the directory away in between and make another at its
// path, and bwrap then mounts the new one, protections and all, while the real .git lies writable
// where it went. So the command's shell is given each directory the host checked, as a descriptor,
// and compares it with what is mounted at its path (`[ /proc/self/fd/N -ef PATH ]`: device and inode,
// which a bind mount keeps) before anything else; then it closes them, since a descriptor of a host
// directory leads past every mount. A directory moved after the mounts takes them along with it.
//
// bwrap mounts the protections one by one after the directory, each by path too: moved away between
// two of them and put back before the check, it would be the directory again with some protections
// gone to the folder made in its place. So each read-only protected path is checked to be read-only
// (`[ -w ]`, an access(2) that a read-only mount answers EROFS). One the user may not write anyway (a
// 0444 placeholder) says nothing either way; .git, .conch and the .env files the user writes do.
//
// A shell builtin, so it costs no process: two stats per directory. Needs /proc inside (the shipped
// profiles mount it); a profile without it keeps the host's check alone.
import { closeSync } from 'node:fs';
import { isWithin } from '../core/paths.ts';
import { DirectoryMovedError } from './directories.ts';

/** The check's exit status; with its line as the command's whole output, the host reads it as the refusal. */
export const MOVED_EXIT = 125;

export interface CheckedDirectory {
  /** As the request named it (what the message shows). */
  path: string;
  /** Where it is mounted inside (its canonical path). */
  real: string;
  /** 'workspace' or 'writable root'. */
  what: string;
}

export interface MovedCheck {
  /** Shell text for the command's first line, ending in `; `: the check, then the descriptors closed. */
  script: string;
  /**
   * The check in front of the relay (relay.ts), which takes its channel on fd 4, and is given it
   * after the checked descriptors, as `channelFd`: the check, then the channel moved to 4 over them.
   */
  relayScript(channelFd: number): string;
  /** The refusal the command's result stands for, if it is the check's: the host's own message. */
  refusal(exitCode: number | null, output: string): DirectoryMovedError | null;
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A path as /proc/self/mountinfo shows it: space, tab, newline and backslash in octal. */
function mountinfoPath(path: string): string {
  return path.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

function line(dir: CheckedDirectory): string {
  return `conch: the ${dir.what} ${dir.path} is no longer the directory it was at this session's first command (workspace.moved); nothing was run.`;
}

/**
 * The check of `dirs`, given to the command as fds 4, 5, … (after the seccomp program's 3), and of
 * `readOnly`, the protected paths bound read-only in them.
 */
export function movedCheck(dirs: CheckedDirectory[], readOnly: string[]): MovedCheck {
  const fd = (i: number) => 4 + i;
  const refuse = (dir: CheckedDirectory) => `{ printf '%s\\n' ${quote(line(dir))} >&2; exit ${MOVED_EXIT}; }; `;
  const same = dirs.map((dir, i) => `[ /proc/self/fd/${fd(i)} -ef ${quote(dir.real)} ] || ${refuse(dir)}`);
  const points: string[] = [];
  const held = readOnly.flatMap((path) => {
    // The deepest directory it lies in: a writable root inside the workspace is a tree of its own.
    const dir = dirs.filter((d) => isWithin(path, d.real)).sort((a, b) => b.real.length - a.real.length)[0];
    if (!dir) return [];
    points.push(`case $__conch_m in *${quote(` ${mountinfoPath(path)} `)}*) ;; *) ${refuse(dir)};; esac; `);
    return [`[ -w ${quote(path)} ] && ${refuse(dir)}`];
  });
  // A placeholder (0444, the user's own) is no more writable with its mount than without: -w says
  // nothing, yet without the mount a command could remove it and make a .git there. Each protected
  // path must also be a mount point (the kernel's table, read with builtins: no process). The table
  // escapes spaces in its paths, so a space ends each one, and the command's first line stays one line.
  const table = points.length
    ? `__conch_m=' '; while read -r __conch_x __conch_x __conch_x __conch_x __conch_p __conch_x; do __conch_m="$__conch_m$__conch_p "; done </proc/self/mountinfo; ${points.join('')}unset __conch_m __conch_p __conch_x; `
    : '';
  const checks = [...same, ...held, table].join('');
  const closing = (from: number) => dirs.slice(from).map((_, i) => ` ${fd(from + i)}<&-`).join('');
  return {
    script: `${checks}exec${closing(0)}; `,
    relayScript: (channelFd) => `${checks}exec 4>&${channelFd}${closing(1)} ${channelFd}>&-; exec "$@"`,
    refusal(exitCode, output) {
      if (exitCode !== MOVED_EXIT) return null;
      const dir = dirs.find((d) => output === `${line(d)}\n`);
      return dir ? new DirectoryMovedError(dir.what, dir.path) : null;
    },
  };
}

/** The directories sameDirectory checked for one command, with its descriptors of them (closed once spent). */
export class CheckedDirectories {
  readonly dirs: CheckedDirectory[] = [];
  readonly fds: number[] = [];

  add(dir: CheckedDirectory, fd: number): void {
    this.dirs.push(dir);
    this.fds.push(fd);
  }

  /** Drops (and closes) those `keep` says no to. */
  filter(keep: (dir: CheckedDirectory) => boolean): void {
    for (let i = this.dirs.length - 1; i >= 0; i--) {
      if (keep(this.dirs[i]!)) continue;
      this.dirs.splice(i, 1);
      closeSync(this.fds.splice(i, 1)[0]!);
    }
  }

  /** Safe to call twice. */
  close(): void {
    for (const fd of this.fds.splice(0)) closeSync(fd);
  }
}
