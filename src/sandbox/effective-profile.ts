// The sandbox profile shell commands run under, decided here and nowhere else: from the profiles
// the layers name (config files, the policy file, --profile, a resumed session's record) and
// whether the run is in read-only mode. Layers only narrow, so a later layer can move to a profile
// known to be at least as strict and no further: read-only is the strictest; a profile named on
// purpose is taken to be stricter than the default; between two named profiles conch cannot tell,
// so the earlier one stays (a project config cannot swap the profile your user config chose).
import { DEFAULT_PROFILE, READ_ONLY_PROFILE } from './profile-names.ts';

export interface ProfileInputs {
  /** The profile each layer names, earliest layer first; undefined where a layer names none. */
  chosen?: readonly (string | undefined)[];
  /** Nothing may be written (--read-only, a run in $HOME, a denied workspace, an MCP server without workspace write). */
  readOnly?: boolean;
}

function strictness(name: string): number {
  return name === READ_ONLY_PROFILE ? 2 : name === DEFAULT_PROFILE ? 0 : 1;
}

export function effectiveProfile({ chosen = [], readOnly = false }: ProfileInputs): string {
  if (readOnly) return READ_ONLY_PROFILE;
  let profile = DEFAULT_PROFILE;
  for (const name of chosen) {
    if (name !== undefined && strictness(name) > strictness(profile)) profile = name;
  }
  return profile;
}

/** True when `name` lost to an earlier named profile, not to read-only or as the default: worth a warning. */
export function overruled(name: string, effective: string): boolean {
  return name !== effective && strictness(name) === 1 && strictness(effective) === 1;
}
