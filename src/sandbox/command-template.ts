// What a sandboxed command's argv is made of that stays the same from one command of a run to the
// next: the mounts every command starts from (the profile's, with the read-only and hidden paths),
// and bwrap's options up to --chdir. Both are memoised on every fact they depend on, and those
// facts are read afresh for each command (which hidden paths exist, where links lead, which
// protected paths are held), so a change on disk gives a new layout or new options; what is saved is
// building them again, about a third of conch's own work per command (the rest of it runs cold,
// right after bwrap, so less code run is most of what there is to gain).
import {
  baseMounts,
  bwrapOptions,
  coveringMount,
  depth,
  hostWritableIn,
  protectedMountType,
  withProtection,
  writableIn,
  type BwrapOptions,
  type ConcreteMount,
} from './bwrap.ts';
import { emptyFile, hiddenFacts, hiddenMountsFor } from './hidden.ts';
import type { BwrapMount, SandboxProfile } from './profiles.ts';
import { readOnlyFacts, readOnlyMountsFor } from './read-only-paths.ts';

export interface Layout {
  /**
   * Whether a command could write `path` under the layout's mounts (the profile's, the read-only and
   * the hidden paths): a protected path there needs a mount.
   */
  needed: (path: string) => boolean;
  /** Whether a command could write (so remove) the host path `path`, at that same path inside. */
  hostWritable: (path: string) => boolean;
  /** Whether the host directory `path` is what a command sees there: mounted at its own path, nothing over it. */
  shows: (path: string) => boolean;
  /** bwrap's options for this layout, the given protection and settings (memoised per layout). */
  options(spec: Omit<BwrapOptions, 'mounts'> & { protectedPaths: string[]; pins: string[]; othersPlaceholders?: string[] }): string[];
}

export interface LayoutInputs {
  workspace: string;
  tmpDir: string;
  writableRoots: string[];
  /** Writable, after the profile's mounts (the toolchain cache). */
  cacheRoots: string[];
  readOnlyPaths: string[];
  hidden: string[];
  /** conch's own directories (index.ts says which): hidden wherever a command could write them. */
  own: string[];
}

// A run has one layout (more only when a hidden path appears or goes): a few are plenty.
const KEPT = 8;
const layouts = new WeakMap<SandboxProfile, Map<string, Layout>>();

export function mountLayout(profile: SandboxProfile, inputs: LayoutInputs): Layout {
  const hidden = hiddenFacts(inputs.hidden);
  const own = hiddenFacts(inputs.own);
  const readOnly = readOnlyFacts(inputs.readOnlyPaths, hidden.map(([path]) => path));
  // The file bound over hidden files is checked for each command: a layout naming one that is gone
  // would fail every command after.
  const empty = hidden.some(([, kind]) => kind === 'file') ? emptyFile() : '';
  const key = [
    inputs.workspace,
    inputs.tmpDir,
    inputs.writableRoots.join('\n'),
    inputs.cacheRoots.join('\n'),
    readOnly.join('\n'),
    hidden.map(([path, kind]) => `${kind}:${path}`).join('\n'),
    own.map(([path, kind]) => `${kind}:${path}`).join('\n'),
    empty,
  ].join('\0');
  let known = layouts.get(profile);
  if (!known) layouts.set(profile, (known = new Map()));
  let layout = known.get(key);
  if (!layout) {
    if (known.size >= KEPT) known.clear();
    const profileMounts = [
      ...baseMounts(profile, inputs),
      ...inputs.cacheRoots.map((path) => ({ type: 'bind' as const, path, rank: 0 })),
    ];
    const visible = [...profileMounts, ...readOnlyMountsFor(readOnly, profileMounts)];
    const writable = writableIn(visible);
    const covered = [...hidden, ...own.filter(([path]) => writable(path))].sort((a, b) => depth(a[0]) - depth(b[0]));
    // Hidden paths count as planned mounts: a protected path inside one needs no mount of its own.
    layout = build([...visible, ...hiddenMountsFor(covered, visible, empty)], protectedMountType(profile));
    known.set(key, layout);
  }
  return layout;
}

function build(base: ConcreteMount[], protectedType: BwrapMount['type'] | null): Layout {
  // Only paths a command could otherwise write need a mount (none at all in the read-only profile).
  const needed = protectedType ? writableIn(base) : () => false;
  const hostWritable = protectedType ? hostWritableIn(base) : () => false;
  const options = new Map<string, string[]>();
  // The settings' env is one object per run (index.ts keeps it): its text is made once.
  const envKeys = new WeakMap<Record<string, string>, string>();
  const envKey = (env: Record<string, string> | undefined): string => {
    if (!env) return '';
    let key = envKeys.get(env);
    if (key === undefined) envKeys.set(env, (key = Object.entries(env).flat().join('\n')));
    return key;
  };
  // Asked for the workspace and each writable root at every command: the answer is the layout's.
  const shown = new Map<string, boolean>();
  const shows = (path: string) => {
    let found = shown.get(path);
    if (found === undefined) {
      const cover = coveringMount(base, path);
      shown.set(path, (found = cover !== null && cover.path === path && cover.type.includes('bind') && (cover.source ?? path) === path));
    }
    return found;
  };
  return {
    needed,
    hostWritable,
    shows,
    options(spec) {
      const { protectedPaths, pins, othersPlaceholders = [], ...rest } = spec;
      const key = [
        protectedPaths.join('\n'),
        pins.join('\n'),
        othersPlaceholders.join('\n'),
        rest.bwrap,
        rest.network,
        rest.disableUserns,
        rest.seccompFd,
        rest.infoFd ?? '',
        envKey(rest.env),
      ].join('\0');
      let found = options.get(key);
      if (!found) {
        if (options.size >= KEPT) options.clear();
        const mounts = withProtection(base, protectedPaths, pins, protectedType ?? 'ro-bind', othersPlaceholders);
        options.set(key, (found = bwrapOptions({ ...rest, mounts })));
      }
      return found;
    },
  };
}
