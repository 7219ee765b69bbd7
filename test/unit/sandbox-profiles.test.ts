// Which sandbox profiles exist (the files of sandbox-profiles/) and which one a run gets (one
// function, effective-profile.ts, that every place deciding it calls).
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergePolicy, type PolicyLayer } from '../../src/config/layers.ts';
import { effectiveProfile } from '../../src/sandbox/effective-profile.ts';
import { listProfiles, profileChoices, profileChoicesText, unknownProfile } from '../../src/sandbox/profile-names.ts';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'conch-profile-names-')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the profiles are the files of sandbox-profiles/', () => {
  test('the shipped ones', () => {
    expect(listProfiles()).toEqual(['read-only', 'workspace-write']);
    expect(profileChoices()).toEqual(['workspace-write', 'read-only']);
    expect(profileChoicesText()).toBe('workspace-write (default) or read-only');
    expect(unknownProfile('workspace-write')).toBeNull();
    expect(unknownProfile('secrets')).toContain('available: read-only, workspace-write');
  });

  test('every *.json but the data files is a profile; nothing is parsed to tell', () => {
    for (const name of ['workspace-write', 'read-only', 'offline', 'protected', 'secrets', 'caches', 'network']) {
      // Not JSON at all: listing names the files, it does not read them.
      writeFileSync(join(dir, `${name}.json`), 'not json');
    }
    writeFileSync(join(dir, 'seatbelt.sb'), '(version 1)');
    writeFileSync(join(dir, '.hidden.json'), '{}');
    mkdirSync(join(dir, 'sub'));
    expect(listProfiles(dir)).toEqual(['offline', 'read-only', 'workspace-write']);
    expect(profileChoices(dir)).toEqual(['workspace-write', 'offline', 'read-only']);
    expect(profileChoicesText(dir)).toBe('workspace-write (default), offline or read-only');
    expect(unknownProfile('offline', dir)).toBeNull();
    expect(unknownProfile('caches', dir)).toBe(`unknown sandbox profile "caches"; available: offline, read-only, workspace-write (the profiles in ${dir})`);
  });
});

describe('the effective profile', () => {
  test('nothing named: the default; read-only mode: read-only whatever is named', () => {
    expect(effectiveProfile({})).toBe('workspace-write');
    expect(effectiveProfile({ chosen: [undefined, undefined] })).toBe('workspace-write');
    expect(effectiveProfile({ chosen: ['workspace-write', 'offline'], readOnly: true })).toBe('read-only');
  });

  test('layers only narrow: read-only wins, a named profile beats the default, an earlier named one stays', () => {
    expect(effectiveProfile({ chosen: ['read-only', 'workspace-write'] })).toBe('read-only');
    expect(effectiveProfile({ chosen: ['workspace-write', 'read-only'] })).toBe('read-only');
    expect(effectiveProfile({ chosen: ['offline', 'workspace-write'] })).toBe('offline');
    expect(effectiveProfile({ chosen: ['workspace-write', 'offline'] })).toBe('offline');
    expect(effectiveProfile({ chosen: ['offline', 'read-only'] })).toBe('read-only');
    expect(effectiveProfile({ chosen: ['offline', 'other'] })).toBe('offline');
  });

  const layer = (kind: PolicyLayer['kind'], profile: string): PolicyLayer => ({ kind, source: `${kind} layer`, profile, toolsDeny: [], writeDeny: [], readDeny: [] });

  test('merging layers: a named profile a later layer cannot take is a warning naming that layer', () => {
    const merged = mergePolicy([layer('user', 'offline'), layer('project', 'other'), layer('flags', 'workspace-write')], dir);
    expect(merged.sandbox.profile).toBe('offline');
    // --profile that loses is said too, naming the layer that won (it used to lose in silence).
    expect(merged.warnings).toEqual([
      'project layer: sandbox profile "other" ignored: an earlier layer chose "offline", and a later one can only narrow it to read-only.',
      '--profile workspace-write ignored: sandbox.profile "offline" in user layer wins (a command line cannot widen a configured profile).',
    ]);
    const narrowed = mergePolicy([layer('user', 'offline'), layer('project', 'read-only')], dir);
    expect(narrowed.sandbox.profile).toBe('read-only');
    expect(narrowed.warnings).toEqual([]);
  });

  test('--profile a configured profile overrides is a warning naming the config file and key; one that takes effect is none', () => {
    const lost = mergePolicy([layer('user', 'read-only'), layer('flags', 'workspace-write')], dir);
    expect(lost.sandbox.profile).toBe('read-only');
    expect(lost.warnings).toEqual(['--profile workspace-write ignored: sandbox.profile "read-only" in user layer wins (a command line cannot widen a configured profile).']);
    const readOnly = mergePolicy([{ ...layer('flags', 'workspace-write'), readOnly: true }], dir);
    expect(readOnly.sandbox.profile).toBe('read-only');
    expect(readOnly.warnings).toEqual(['--profile workspace-write ignored: --read-only runs shell commands under the "read-only" profile.']);
    const denied = mergePolicy([{ ...layer('policy', 'workspace-write'), profile: undefined, writeDeny: [{ rule: 'policy:write.deny[0]', root: dir }] }, layer('flags', 'workspace-write')], dir);
    expect(denied.warnings).toEqual(['--profile workspace-write ignored: the workspace is read-only (rule "policy:write.deny[0]"), so shell commands run under the "read-only" profile.']);
    for (const taken of [[layer('user', 'workspace-write'), layer('flags', 'read-only')], [layer('user', 'read-only'), layer('flags', 'read-only')], [layer('flags', 'workspace-write')]]) {
      expect(mergePolicy(taken, dir).warnings).toEqual([]);
    }
  });
});
