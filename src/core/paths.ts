// Path math every layer shares: one containment test and one canonical form.
import { realpathSync } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Whether `child` is `parent` or lies below it. Both are normalised paths of the same kind: absolute
 * (`/` contains every absolute path) or workspace-relative (`''` is the workspace root).
 */
export function isWithin(child: string, parent: string): boolean {
  if (child === parent || parent === '') return true;
  return child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);
}

/** realpath of the longest existing ancestor, so that /tmp and /private/tmp compare equal. */
export function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : `${canonical(parent).replace(/\/$/, '')}/${basename(path)}`;
  }
}
