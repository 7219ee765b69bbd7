// Loads the sandbox policies from sandbox-profiles/ (data, not code): one JSON file per profile
// describing the bubblewrap mounts and the Seatbelt template, plus protected.json with the paths
// every profile keeps read-only. Files are read once per process and validated; a broken file is
// reported with its name and the offending key. Which names are profiles: profile-names.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type, Check, Errors, type Static, type TSchema } from '../core/typebox.ts';
import { listProfiles, PROFILES_DIR, unknownProfile } from './profile-names.ts';

export { listProfiles, PROFILES_DIR } from './profile-names.ts';

/** Symbolic mount sources filled in per command. */
export const MOUNT_VARIABLES = ['{workspace}', '{tmpDir}', '{writableRoots}', '{protected}'] as const;
export type MountVariable = (typeof MOUNT_VARIABLES)[number];

const MountSchema = Type.Object(
  {
    type: Type.Union([
      Type.Literal('ro-bind'),
      Type.Literal('ro-bind-try'),
      Type.Literal('bind'),
      Type.Literal('dev'),
      Type.Literal('proc'),
      Type.Literal('tmpfs'),
    ]),
    path: Type.String({ minLength: 1 }),
    /** For bind/ro-bind: what to mount at path (default: path itself). */
    source: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const ProfileSchema = Type.Object(
  {
    $comment: Type.Optional(Type.String()),
    description: Type.String(),
    /** false: no toolchain cache (caches.ts) for commands under this profile. */
    caches: Type.Optional(Type.Boolean()),
    bwrap: Type.Object(
      { $comment: Type.Optional(Type.String()), mounts: Type.Array(MountSchema, { minItems: 1 }) },
      { additionalProperties: false },
    ),
    seatbelt: Type.Object(
      { template: Type.String({ pattern: '^[A-Za-z0-9._-]+\\.sb$' }), writable: Type.Array(Type.String()) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const Kind = Type.Union([Type.Literal('dir'), Type.Literal('file')]);
const ProtectedSchema = Type.Object(
  {
    $comment: Type.Optional(Type.String()),
    paths: Type.Array(
      Type.Object(
        {
          path: Type.String({ minLength: 1 }),
          kind: Kind,
          /** When absent, no placeholder while one of these (workspace-relative) is a non-empty regular file. */
          placeholderUnless: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
        },
        { additionalProperties: false },
      ),
    ),
    globs: Type.Array(
      Type.Object(
        { pattern: Type.String({ minLength: 1 }), kind: Kind, knownNames: Type.Array(Type.String({ minLength: 1 })) },
        { additionalProperties: false },
      ),
    ),
    limitation: Type.String(),
  },
  { additionalProperties: false },
);

export type BwrapMount = Static<typeof MountSchema>;
export type SandboxProfile = Static<typeof ProfileSchema> & { name: string; file: string };
export type ProtectedDefaults = Static<typeof ProtectedSchema>;

/** A broken or missing policy file, or an unknown profile name: a message naming file and fix. */
export class SandboxProfileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxProfileError';
  }
}


function readJson(file: string): { text: string; value: unknown } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SandboxProfileError(`cannot read sandbox policy ${file}: ${(error as Error).message}`);
  }
  try {
    return { text, value: JSON.parse(text) };
  } catch (error) {
    throw new SandboxProfileError(`sandbox policy ${file} is not valid JSON: ${(error as Error).message}`);
  }
}

declare const __conchCheckedPolicies: Record<string, string> | undefined;
/**
 * The files of sandbox-profiles/ the bundle's build found valid (src/build.ts), each with a digest of
 * the text it checked; none when conch runs from source. Checking a profile against its schema ran
 * so much of TypeBox for the first time that it was 3 MiB of a sandboxed run's peak memory (issue
 * 17): a file still as it was built is not checked again, and any other one is. The digest tells an
 * edit from the shipped text, not an attacker: one who can write this folder can write conch's code.
 */
const CHECKED_AT_BUILD: Record<string, string> = typeof __conchCheckedPolicies === 'undefined' ? {} : __conchCheckedPolicies;

export const policyDigest = (text: string): string => Bun.hash(text).toString(36);

/** Whether `name` in `dir`, read as `text`, is what the build checked (`checked`: name → digest). */
export function checkedAtBuild(dir: string, name: string, text: string, checked: Record<string, string> = CHECKED_AT_BUILD): boolean {
  return dir === PROFILES_DIR && Object.hasOwn(checked, name) && checked[name] === policyDigest(text);
}

/** The valid profile and protected-path files in `dir`, name → digest, for the bundle (src/build.ts). */
export function validPolicyDigests(dir: string = PROFILES_DIR): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...listProfiles(dir).map((p) => `${p}.json`), 'protected.json']) {
    try {
      const { text, value } = readJson(join(dir, name));
      if (Check(name === 'protected.json' ? ProtectedSchema : ProfileSchema, value)) out[name] = policyDigest(text);
    } catch {
      // Unreadable or not JSON: the run reports it.
    }
  }
  return out;
}

// Interpreted, not compiled: each file is checked once per process, and compiling both schemas at import
// cost every start (unrestricted ones included) ≈ 6 ms of CPU.
function firstError(schema: TSchema, value: unknown): string {
  for (const error of Errors(schema, value)[1]) {
    const e = error as { instancePath?: string; message?: string };
    return `${e.instancePath || '(root)'}: ${e.message ?? 'invalid'}`;
  }
  return 'invalid';
}

const profileCache = new Map<string, SandboxProfile>();

export function loadProfile(name: string, dir: string = PROFILES_DIR): SandboxProfile {
  const key = `${dir}\0${name}`;
  const cached = profileCache.get(key);
  if (cached) return cached;
  const unknown = unknownProfile(name, dir);
  if (unknown) throw new SandboxProfileError(`${unknown}.`);
  const file = join(dir, `${name}.json`);
  const { text, value } = readJson(file) as { text: string; value: Static<typeof ProfileSchema> };
  if (!checkedAtBuild(dir, `${name}.json`, text) && !Check(ProfileSchema, value)) {
    throw new SandboxProfileError(`sandbox profile ${file} is malformed at ${firstError(ProfileSchema, value)}; restore it from the conch distribution.`);
  }
  for (const [index, mount] of value.bwrap.mounts.entries()) {
    for (const key of ['path', 'source'] as const) {
      const entry = mount[key];
      if (entry === undefined) continue;
      const variable = entry.startsWith('{');
      if (variable ? !(MOUNT_VARIABLES as readonly string[]).includes(entry) : !entry.startsWith('/')) {
        throw new SandboxProfileError(
          `sandbox profile ${file}: /bwrap/mounts/${index}/${key} "${entry}" must be an absolute path or one of ${MOUNT_VARIABLES.join(', ')}.`,
        );
      }
    }
    const single = mount.path !== '{writableRoots}' && mount.path !== '{protected}';
    if (mount.source !== undefined && (!single || !mount.type.includes('bind') || mount.source === '{writableRoots}' || mount.source === '{protected}')) {
      throw new SandboxProfileError(`sandbox profile ${file}: /bwrap/mounts/${index}/source is only for a bind or ro-bind of a single path.`);
    }
  }
  // Whatever a profile says, the root must be read-only first: a profile cannot open the machine.
  const first = value.bwrap.mounts[0]!;
  if (first.type !== 'ro-bind' || first.path !== '/') {
    throw new SandboxProfileError(`sandbox profile ${file}: the first mount must be { "type": "ro-bind", "path": "/" }.`);
  }
  const profile: SandboxProfile = { ...value, name, file };
  profileCache.set(key, profile);
  return profile;
}

let protectedCache: { dir: string; value: ProtectedDefaults } | null = null;

export function loadProtectedDefaults(dir: string = PROFILES_DIR): ProtectedDefaults {
  if (protectedCache?.dir === dir) return protectedCache.value;
  const file = join(dir, 'protected.json');
  const { text, value } = readJson(file) as { text: string; value: ProtectedDefaults };
  if (!checkedAtBuild(dir, 'protected.json', text) && !Check(ProtectedSchema, value)) {
    throw new SandboxProfileError(`sandbox policy ${file} is malformed at ${firstError(ProtectedSchema, value)}; restore it from the conch distribution.`);
  }
  protectedCache = { dir, value };
  return value;
}

const templateCache = new Map<string, string>();

/** A Seatbelt template or fragment from sandbox-profiles/ (validated names only). */
export function loadTemplate(name: string, dir: string = PROFILES_DIR): string {
  const key = `${dir}\0${name}`;
  const cached = templateCache.get(key);
  if (cached !== undefined) return cached;
  const file = join(dir, name);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SandboxProfileError(`cannot read Seatbelt template ${file}: ${(error as Error).message}`);
  }
  templateCache.set(key, text);
  return text;
}

/**
 * Workspace-relative names the sandbox may hold with an empty read-only placeholder while a run
 * lasts (protected files that do not exist): not the user's files. From protected.json.
 */
export function placeholderNames(defaults: ProtectedDefaults = loadProtectedDefaults()): string[] {
  const files = defaults.paths.filter((p) => p.kind === 'file').map((p) => p.path);
  return [...files, ...defaults.globs.filter((g) => g.kind === 'file').flatMap((g) => g.knownNames ?? [])];
}
