// Host paths a command must be able to read that the sandbox would otherwise hide: a program or
// script under the host's /tmp, which inside is the run's private temp dir. An MCP server's config
// may name a command or script anywhere (a checkout under /tmp, say); each such path is made
// visible read-only, and nothing else changes.
//
// What is bound is the top-level entry under the mount that hides the path (/tmp/checkout for
// /tmp/checkout/node_modules/x/bin.js), not the file alone: a script imports its package's files and
// node_modules, which sit beside it somewhere in that entry, and a nearest package.json is no safe
// guess (a package's own package.json sits below the node_modules it resolves from). The entry is the
// smallest directory that is sure to hold them, and it is read-only. Read-denied (hidden) paths stay
// hidden: a path inside one is skipped, and hidden mounts go on top of these anyway.
import { realpathSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { isWithin } from '../core/paths.ts';
import { coveringMount, type ConcreteMount } from './bwrap.ts';

/** The read-only binds that make `paths` (absolute host paths; missing ones are skipped) visible. */
export function readOnlyMounts(paths: string[], base: ConcreteMount[], hidden: string[]): ConcreteMount[] {
  return readOnlyMountsFor(readOnlyFacts(paths, hidden.map(existing).filter((p): p is string => p !== null)), base);
}

/** What those binds depend on: the canonical path of each of `paths` that exists and is not hidden. */
export function readOnlyFacts(paths: string[], hiddenReal: string[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    if (!isAbsolute(path)) continue;
    const real = existing(path);
    if (real && !hiddenReal.some((h) => isWithin(real, h))) out.push(real);
  }
  return out;
}

/** readOnlyMounts from its facts. */
export function readOnlyMountsFor(reals: string[], base: ConcreteMount[]): ConcreteMount[] {
  const out = new Map<string, ConcreteMount>();
  for (const real of reals) {
    const cover = coveringMount(base, real);
    // Visible as itself already (a plain bind or the read-only root): nothing to add.
    if (!cover || !hides(cover) || real === cover.path) continue;
    const entry = topEntry(cover.path, real);
    if (!out.has(entry)) out.set(entry, { type: 'ro-bind', path: entry, rank: 0 });
  }
  return [...out.values()];
}

/** A mount shows something else than the host path beneath it: another source, or a fresh tmpfs. */
function hides(mount: ConcreteMount): boolean {
  if (mount.type === 'tmpfs') return true;
  return mount.type.includes('bind') && mount.source !== undefined && mount.source !== mount.path;
}

function topEntry(mountPoint: string, path: string): string {
  const first = relative(mountPoint, path).split('/')[0]!;
  return mountPoint === '/' ? `/${first}` : `${mountPoint}/${first}`;
}

/** The realpath of an existing path, else null (a missing path needs no mount). */
function existing(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}
