// What the vault tools share: the index brought up to date under conch's read policy, naming a note
// for the model, and the check that a write may go where it goes.
import { isWithin, PolicyError, type ToolContext } from 'conch';
import type { Note, VaultIndex } from './notes.ts';

export interface Vault {
  index: VaultIndex;
}

/** The index, current; every note in it passed conch's read policy. */
export async function current(vault: Vault, ctx: ToolContext): Promise<VaultIndex> {
  const allowed = (abs: string) => ctx.workspace.resolve(abs, 'read').then(() => true, () => false);
  await vault.index.refresh(allowed, ctx.signal);
  return vault.index;
}

/**
 * Why conch's workspace policy refuses a write to `abs` (canonical), or null. Inside the workspace
 * its rules hold (.git and the other protected paths stay read-only); a vault outside it was chosen
 * by the user in their config, so only a policy's explicit denials apply there.
 */
export async function writeRefusal(ctx: ToolContext, abs: string): Promise<string | null> {
  try {
    await ctx.workspace.resolve(abs, 'write');
    return null;
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error;
    if (error.rule === 'workspace.outside' && !isWithin(abs, ctx.workspace.root)) return null;
    return error.message;
  }
}

export function numbered(lines: string[], first: number): string {
  const width = String(first + lines.length - 1).length;
  return lines.map((l, i) => `${String(first + i).padStart(width)}\t${l}`).join('\n');
}

export function splitLines(text: string): string[] {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  if (text.endsWith('\n')) lines.pop();
  return lines;
}

export function describe(note: Note): string {
  return note.title === note.name ? note.path : `${note.path} — ${note.title}`;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
