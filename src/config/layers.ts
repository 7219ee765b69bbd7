// Folding the policy parts of every layer (user config, project config, policy file, flags) into
// the one policy a run gets. Later layers narrow, never widen:
//   tools: deny lists accumulate, allow lists (and --tools) intersect; shell off anywhere is off;
//   write: your user config and --allow-write grant extra writable roots; a project config can only
//     narrow them; a policy file's write.allow confines and write.deny removes them — a flag that
//     asks for a denied root is an error, a config root is dropped with a warning;
//   protected globs and read denials accumulate; read roots intersect; secret-file denial sticks;
//   network off anywhere is off; the stricter sandbox profile wins (sandbox/effective-profile.ts);
//   command rules stay separate layers (see policy/command-rules.ts) so that each one must agree.
import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, relative, sep } from 'node:path';
import type { CommandLayer } from './command-layer.ts';
import type { SandboxSettings } from '../sandbox/index.ts';
import { effectiveProfile, overruled } from '../sandbox/effective-profile.ts';
import { escapeGlob } from '../sandbox/protected-paths.ts';
import { type Config, type PathDenial, type ToolsPolicy } from './types.ts';
import { canonical, isWithin } from '../core/paths.ts';
import { ConfigError } from '../core/errors.ts';

export type LayerKind = 'user' | 'project' | 'policy' | 'flags';

/** A root (absolute) or a workspace-relative glob, with the id of the rule that names it. */
export type PathRule = { rule: string; root: string } | { rule: string; glob: string };

/** Policy as one layer states it; absent fields leave the layers before untouched. */
export interface PolicyLayer {
  kind: LayerKind;
  /** For messages: 'user config /home/u/.config/conch/config.json', 'the --policy file …'. */
  source: string;
  toolsAllow?: { names: string[]; rule: string };
  toolsDeny: { name: string; rule: string }[];
  shellEnabled?: boolean;
  commands?: CommandLayer;
  /** Extra writable roots (absolute): grants from user config and flags; a narrowing from a project. */
  writableRoots?: string[];
  /** Policy file: writes only inside these roots. */
  writeAllow?: { root: string; rule: string }[];
  writeDeny: PathRule[];
  readRoots?: { root: string; rule: string }[];
  readDeny: PathRule[];
  denySecretFiles?: boolean;
  network?: boolean;
  /** The network allowlist this layer states (entries as written; presets expanded later). */
  netAllow?: string[];
  /** A name from sandbox-profiles/ (checked where the layer is read). */
  profile?: string;
  filesystem?: boolean;
  readOnly?: boolean;
}

/** A path a layer denied, kept with its rule id so that it can be named and enforced even under --unrestricted. */
export interface MergedPolicy {
  tools: ToolsPolicy;
  sandbox: SandboxSettings;
  workspace: Config['workspace'];
  shellRules: CommandLayer[] | null;
  denied: PathDenial[];
  warnings: string[];
}

/** Subtrees readable under both sets: each root of one set that lies within a root of the other. */
function intersectRoots(a: string[], b: string[]): string[] {
  const out = new Set<string>();
  for (const x of a) if (b.some((y) => isWithin(x, y))) out.add(x);
  for (const y of b) if (a.some((x) => isWithin(y, x))) out.add(y);
  return [...out];
}

function workspaceGlobs(root: string, workspace: string): string[] {
  const rel = escapeGlob(relative(workspace, root));
  return rel ? [rel, `${rel}/**`] : ['**'];
}

/**
 * --profile that lost: typed now, so never ignored in silence. Says which layer won and why, since
 * the user asked for something else (layers only narrow, and a command line is the last layer).
 */
function ignoredProfileFlag(asked: string, profile: string, layers: PolicyLayer[], workspaceDenial: string | null): string {
  const head = `--profile ${asked} ignored`;
  const winner = layers.find((l) => l.kind !== 'flags' && l.profile === profile);
  if (winner) return `${head}: sandbox.profile "${profile}" in ${winner.source} wins (a command line cannot widen a configured profile).`;
  if (layers.some((l) => l.readOnly)) return `${head}: --read-only runs shell commands under the "${profile}" profile.`;
  return `${head}: the workspace is read-only (rule "${workspaceDenial}"), so shell commands run under the "${profile}" profile.`;
}

export function mergePolicy(layers: PolicyLayer[], workspaceRoot: string): MergedPolicy {
  const cwd = canonical(workspaceRoot);
  const warnings: string[] = [];
  const denied: PathDenial[] = [];
  const tools: ToolsPolicy = { only: null, denied: [], shell: true, filesystem: true, readOnly: false };
  let network = true;
  // Your user config and flags grant hosts (their union); a project config or policy file narrows.
  let netGrant: string[] | null = null;
  const netNarrow: string[][] = [];
  let denySecretFiles = false;
  const protectedGlobs: string[] = [];
  const readDeny: string[] = [];
  let readRoots: string[] | null = null;
  let grants: { root: string; flag: boolean; source: string }[] = [];
  const shellRules: CommandLayer[] = [];
  const writeAllows: { roots: { root: string; rule: string }[]; source: string }[] = [];
  const writeDenyRoots: { root: string; rule: string; source: string }[] = [];

  for (const layer of layers) {
    if (layer.toolsAllow) {
      const names = layer.toolsAllow.names;
      tools.only = tools.only === null ? [...names] : tools.only.filter((n) => names.includes(n));
    }
    tools.denied.push(...layer.toolsDeny);
    if (layer.toolsDeny.some((d) => d.name === 'bash') || layer.shellEnabled === false) tools.shell = false;
    if (layer.filesystem === false) tools.filesystem = false;
    if (layer.readOnly) tools.readOnly = true;
    if (layer.commands) shellRules.push(layer.commands);
    if (layer.network === false) network = false;
    if (layer.netAllow) {
      if (layer.kind === 'user' || layer.kind === 'flags') netGrant = [...(netGrant ?? []), ...layer.netAllow];
      else netNarrow.push(layer.netAllow);
    }
    if (layer.denySecretFiles) denySecretFiles = true;

    if (layer.writableRoots) {
      const roots = layer.writableRoots.map(canonical);
      if (layer.kind === 'project') {
        const held = grants.map((g) => g.root);
        const kept = intersectRoots(held, roots);
        for (const r of roots.filter((r) => !held.some((h) => isWithin(r, h)))) {
          warnings.push(
            `${layer.source}: writable root ${r} ignored: a project config can only narrow the writable roots your user config or --allow-write grant.`,
          );
        }
        grants = kept.map((root) => ({ root, flag: grants.some((g) => g.root === root && g.flag), source: layer.source }));
      } else {
        grants.push(...roots.map((root) => ({ root, flag: layer.kind === 'flags', source: layer.source })));
      }
    }
    if (layer.writeAllow) {
      writeAllows.push({ roots: layer.writeAllow.map((a) => ({ ...a, root: canonical(a.root) })), source: layer.source });
    }
    for (const d of layer.writeDeny) {
      if ('glob' in d) {
        protectedGlobs.push(d.glob);
        denied.push({ mode: 'write', rule: d.rule, glob: d.glob });
      } else {
        const root = canonical(d.root);
        writeDenyRoots.push({ root, rule: d.rule, source: layer.source });
        denied.push({ mode: 'write', rule: d.rule, root });
      }
    }
    if (layer.readRoots) {
      const roots = layer.readRoots.map((r) => canonical(r.root));
      readRoots = readRoots === null ? roots : intersectRoots(readRoots, roots);
    }
    for (const d of layer.readDeny) {
      if ('glob' in d) {
        readDeny.push(d.glob);
        denied.push({ mode: 'read', rule: d.rule, glob: d.glob });
        continue;
      }
      const root = canonical(d.root);
      denied.push({ mode: 'read', rule: d.rule, root });
      if (isWithin(root, cwd) || isWithin(cwd, root)) readDeny.push(...workspaceGlobs(isWithin(cwd, root) ? cwd : root, cwd));
      if (readRoots) readRoots = readRoots.filter((r) => !isWithin(r, root));
    }
  }

  // Write denials and write.allow confinement apply to every grant, whichever layer it came from.
  const refusal = (root: string): string | null => {
    const hit = writeDenyRoots.find((d) => isWithin(root, d.root) || isWithin(d.root, root));
    if (hit) return `${isWithin(root, hit.root) ? 'lies in' : 'contains'} ${hit.root}, denied by rule "${hit.rule}" (${hit.source})`;
    const outside = writeAllows.find((a) => !a.roots.some((r) => isWithin(root, r.root)));
    return outside ? `is outside every write.allow root of ${outside.source}` : null;
  };
  const isDirectory = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  const writableRoots: string[] = [];
  for (const g of grants) {
    const why = refusal(g.root);
    if (!why) writableRoots.includes(g.root) || writableRoots.push(g.root);
    else if (g.flag) throw new ConfigError(`--allow-write ${g.root}: the root ${why}; a flag cannot override a policy denial.`, undefined, '--allow-write');
    else warnings.push(`${g.source}: writable root ${g.root} dropped: it ${why}.`);
  }
  // A configured root that is not there cannot be bound: kept, it failed every shell command of the
  // run with a message only the model saw. Dropped, the run goes on and the user is told what to fix.
  // (--allow-write of a missing directory is a setup error instead, in load.ts: that one was typed now.)
  for (const g of grants) {
    if (g.flag || !writableRoots.includes(g.root) || isDirectory(g.root)) continue;
    writableRoots.splice(writableRoots.indexOf(g.root), 1);
    warnings.push(`${g.source}: writable root ${g.root} dropped: it does not exist or is not a directory; create it, or remove it from write.writableRoots.`);
  }

  // The workspace itself: denied or outside write.allow → nothing in it may be written.
  const workspaceDenial =
    writeDenyRoots.find((d) => isWithin(cwd, d.root))?.rule ??
    (writeAllows.some((a) => !a.roots.some((r) => isWithin(cwd, r.root))) ? 'policy:write.allow' : null);
  if (workspaceDenial) {
    tools.readOnly = true;
    tools.denied.push({ name: 'write', rule: workspaceDenial }, { name: 'edit', rule: workspaceDenial });
  }
  for (const d of writeDenyRoots) if (isWithin(d.root, cwd) && d.root !== cwd) protectedGlobs.push(...workspaceGlobs(d.root, cwd));
  const profile = effectiveProfile({ chosen: layers.map((l) => l.profile), readOnly: tools.readOnly });
  for (const layer of layers) {
    if (!layer.profile || layer.profile === profile) continue;
    if (layer.kind === 'flags') warnings.push(ignoredProfileFlag(layer.profile, profile, layers, workspaceDenial));
    else if (overruled(layer.profile, profile)) {
      warnings.push(`${layer.source}: sandbox profile "${layer.profile}" ignored: an earlier layer chose "${profile}", and a later one can only narrow it to read-only.`);
    }
  }

  const unique = (xs: string[]) => [...new Set(xs)];
  let netAllow = netGrant;
  for (const list of netNarrow) netAllow = netAllow === null ? [...list] : netAllow.filter((e) => list.includes(e));
  return {
    tools,
    sandbox: { profile, network, writableRoots, protectedGlobs: unique(protectedGlobs), ...(netAllow ? { netAllow: unique(netAllow) } : {}) },
    workspace: { protectedGlobs: unique(protectedGlobs), writableRoots, readRoots, readDeny: unique(readDeny), denySecretFiles },
    shellRules: shellRules.length ? shellRules : null,
    denied,
    warnings,
  };
}
