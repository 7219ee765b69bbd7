// Resuming narrows, never widens: the policy now ∩ the one a session was recorded under.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import type { CliFlags } from '../../src/config/types.ts';
import { narrowToRecorded, policySnapshot, resumedPolicyFlag } from '../../src/sessions/policy.ts';

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-spolicy-')));
  for (const d of ['home', 'xdg', 'project', 'extra']) mkdirSync(join(root, d));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const load = (flags: CliFlags = {}) =>
  loadConfig({ cwd: join(root, 'project'), env: { HOME: join(root, 'home'), XDG_CONFIG_HOME: join(root, 'xdg') }, flags });

describe('policy on resume', () => {
  test('a read-only, no-network, no-shell session stays so when resumed with no flags', async () => {
    const recorded = policySnapshot(await load({ readOnly: true, network: false, shell: false }));
    const now = await load();
    const notes = narrowToRecorded(now, recorded);
    expect(now.tools.readOnly).toBe(true);
    expect(now.sandbox.profile).toBe('read-only');
    expect(now.sandbox.network).toBe(false);
    expect(now.tools.shell).toBe(false);
    expect(notes).toEqual(['read-only', 'no shell', 'no network']);
  });

  test('--unrestricted holds only when both the session and this run have it', async () => {
    const restricted = policySnapshot(await load());
    const now = await load({ unrestricted: true });
    expect(narrowToRecorded(now, restricted)[0]).toContain('restricted');
    expect(now.unrestricted).toBe(false);
    const unrestricted = policySnapshot(await load({ unrestricted: true }));
    const plain = await load();
    narrowToRecorded(plain, unrestricted);
    expect(plain.unrestricted).toBe(false);
    const again = await load({ unrestricted: true });
    expect(narrowToRecorded(again, unrestricted)).toEqual([]);
    expect(again.unrestricted).toBe(true);
  });

  test('tool lists intersect and writable roots not recorded are dropped', async () => {
    const recorded = policySnapshot(await load({ tools: 'read,bash' }));
    const now = await load({ tools: 'read,write', allowWrite: [join(root, 'extra')] });
    const notes = narrowToRecorded(now, recorded);
    expect(now.tools.only).toEqual(['read']);
    expect(now.workspace.writableRoots).toEqual([]);
    expect(notes.join('; ')).toContain('not writable');
  });

  test('a nothing-narrowed resume has no notes', async () => {
    const recorded = policySnapshot(await load({ readOnly: true }));
    const now = await load({ readOnly: true, network: false });
    expect(narrowToRecorded(now, recorded)).toEqual([]);
  });

  test('a recorded sandbox profile other than the default stays when the run now names none', async () => {
    const recorded = { ...policySnapshotStub(), profile: 'offline' };
    const now = await load();
    expect(narrowToRecorded(now, recorded)).toEqual(['offline sandbox profile']);
    expect(now.sandbox.profile).toBe('offline');
    const readOnly = await load({ profile: 'read-only' });
    expect(narrowToRecorded(readOnly, recorded)).toEqual([]);
    expect(readOnly.sandbox.profile).toBe('read-only');
    expect(narrowToRecorded(await load(), { ...recorded, profile: 'read-only' })).toEqual(['read-only sandbox profile']);
  });

  test('the recorded --policy file is reused; a different one is refused', () => {
    const recorded = { ...policySnapshotStub(), policyFile: '/p/policy.json' };
    expect(resumedPolicyFlag({}, recorded, (p) => p, 'abc').policy).toBe('/p/policy.json');
    expect(resumedPolicyFlag({ policy: '/p/policy.json' }, recorded, (p) => p, 'abc').policy).toBe('/p/policy.json');
    expect(() => resumedPolicyFlag({ policy: '/q.json' }, recorded, (p) => p, 'abc')).toThrow('recorded under --policy /p/policy.json');
  });
});

function policySnapshotStub() {
  return {
    unrestricted: false, readOnly: false, shell: true, filesystem: true, network: true, profile: 'workspace-write' as const,
    only: null, denied: [], writableRoots: [], policyFile: null,
  };
}
