// The pure parts of the Linux sandbox: protected-path planning, mount ordering, profile loading,
// probe failure messages. No bwrap needed.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, readSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  baseMounts,
  buildBwrapArgv,
  classifyProbeFailure,
  mountArgs,
  probeFailureStatus,
  withProtection,
  writableAt,
} from '../../src/sandbox/bwrap.ts';
import { hiddenMounts } from '../../src/sandbox/hidden.ts';
import { checkedAtBuild, listProfiles, loadProfile, loadProtectedDefaults, policyDigest, validPolicyDigests } from '../../src/sandbox/profiles.ts';
import { PROFILES_DIR } from '../../src/sandbox/profile-names.ts';
import { defaultPatterns, patternFromGlob, planProtected } from '../../src/sandbox/protected-paths.ts';
import { DEFAULT_PROTECTED_GLOBS } from '../../src/workspace/paths.ts';
import { filterPath, openSeccompFd } from '../../src/sandbox/seccomp-fd.ts';
import { buildFilter, encodeFilter, hostSeccompArch } from '../../src/sandbox/seccomp.ts';

let root: string;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'conch-plan-')));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const defaults = () => defaultPatterns(loadProtectedDefaults());
const rel = (paths: string[]) => paths.map((p) => (p === root ? '.' : p.slice(root.length + 1)));

describe('protected-path planning', () => {
  test('existing defaults are held, absent ones masked by their first missing component', async () => {
    mkdirSync(join(root, '.git'));
    writeFileSync(join(root, '.env'), 'A=1\n');
    writeFileSync(join(root, '.env.preview'), 'B=1\n');
    const plan = planProtected(root, defaults());
    const existing = plan.targets.filter((t) => t.exists);
    const missing = plan.targets.filter((t) => !t.exists);
    expect(rel(existing.map((t) => t.path)).sort()).toEqual(['.env', '.env.preview', '.git']);
    expect(missing.find((t) => t.path.endsWith('/.conch'))?.kind).toBe('dir');
    expect(missing.find((t) => t.path.endsWith('/.env.local'))?.kind).toBe('file');
    expect(rel(missing.map((t) => t.path))).toContain('.env.production.local');
    expect(plan.pins).toEqual([]);
  });

  test('nested paths pin their existing parents and mask the first missing component', async () => {
    mkdirSync(join(root, 'config', 'secrets'), { recursive: true });
    const plan = planProtected(root, [patternFromGlob('config/secrets/prod/key.pem')]);
    expect(plan.targets).toEqual([{ path: join(root, 'config/secrets/prod'), kind: 'dir', exists: false }]);
    expect(rel(plan.pins)).toEqual(['config', 'config/secrets']);
  });

  test('a path inside another protected path is covered by it', async () => {
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true });
    const plan = planProtected(root, [...defaults(), patternFromGlob('.git/hooks/**'), patternFromGlob('.git/config')]);
    expect(rel(plan.targets.map((t) => t.path)).filter((p) => p.startsWith('.git'))).toEqual(['.git']);
  });

  test('globs expand one directory level at a time, without walking the tree', async () => {
    mkdirSync(join(root, 'deploy', 'deep'), { recursive: true });
    writeFileSync(join(root, 'deploy', 'a.yaml'), '');
    writeFileSync(join(root, 'deploy', 'b.yaml'), '');
    writeFileSync(join(root, 'deploy', 'deep', 'c.yaml'), '');
    const plan = planProtected(root, [patternFromGlob('deploy/*.yaml')]);
    expect(rel(plan.targets.map((t) => t.path)).sort()).toEqual(['deploy/a.yaml', 'deploy/b.yaml']);
    expect(rel(plan.pins)).toEqual(['deploy']);
  });

  test('`**` is held at the first level only, and says so', async () => {
    writeFileSync(join(root, 'id_rsa'), '');
    const plan = planProtected(root, [patternFromGlob('**/id_rsa')]);
    expect(rel(plan.targets.map((t) => t.path))).toEqual(['id_rsa']);
    expect(plan.notes[0]).toContain('first level only');
  });

  test('a symlink at a protected name is refused with the fix', async () => {
    symlinkSync('/etc/hostname', join(root, '.env'));
    expect(() => planProtected(root, defaults())).toThrow(/"\.env" is a symbolic link.*--unrestricted/);
  });

  test('globs: `dir/**` means the directory; escaping the workspace is refused', () => {
    expect(patternFromGlob('./secrets/**')).toEqual({ pattern: 'secrets', kind: 'dir' });
    expect(patternFromGlob('a.pem')).toEqual({ pattern: 'a.pem', kind: 'file' });
    expect(() => patternFromGlob('/etc/passwd')).toThrow(/workspace-relative/);
    expect(() => patternFromGlob('a/../../b')).toThrow(/workspace-relative/);
  });

  test('protected.json covers every default protected glob of the workspace layer', () => {
    const names = defaults().map((p) => p.pattern);
    for (const glob of DEFAULT_PROTECTED_GLOBS) expect(names).toContain(glob.replace(/\/\*\*$/, ''));
  });
});

describe('mounts', () => {
  const inputs = { workspace: '/home/u/proj', tmpDir: '/tmp/conch-run-1', writableRoots: ['/home/u/.cache/x'] };

  test('workspace-write: read-only root, the run temp dir as /tmp, parents before children, protection last', () => {
    const profile = loadProfile('workspace-write');
    const base = baseMounts(profile, inputs);
    const mounts = withProtection(base, ['/home/u/proj/.git'], ['/home/u/proj/config'], 'ro-bind');
    const argv = buildBwrapArgv({ bwrap: '/usr/bin/bwrap', mounts, network: false, disableUserns: true, seccompFd: 3, cwd: '/home/u/proj', command: ['/bin/sh', '-c', 'x'] });
    const text = argv.join(' ');
    expect(text).toContain('--unshare-user --disable-userns --unshare-pid');
    expect(text).toContain('--unshare-net');
    expect(text).toContain('--new-session --die-with-parent --cap-drop ALL --seccomp 3');
    expect(text.indexOf('--ro-bind / /')).toBeLessThan(text.indexOf('--bind /tmp/conch-run-1 /tmp '));
    expect(text).toContain('--bind /tmp/conch-run-1 /tmp/conch-run-1');
    expect(text.indexOf('--bind /home/u/proj /home/u/proj')).toBeLessThan(text.indexOf('--bind /home/u/proj/config /home/u/proj/config'));
    expect(text.indexOf('--bind /home/u/proj/config')).toBeLessThan(text.indexOf('--ro-bind /home/u/proj/.git'));
    expect(text.endsWith('--chdir /home/u/proj -- /bin/sh -c x')).toBe(true);
    expect(writableAt(base, '/home/u/proj/.env')).toBe(true);
    expect(writableAt(base, '/home/u/other')).toBe(false);
  });

  test('read-only: the workspace is read-only, writable roots are ignored, pins stay read-only', () => {
    const base = baseMounts(loadProfile('read-only'), inputs);
    expect(writableAt(base, '/home/u/proj/x')).toBe(false);
    expect(writableAt(base, '/home/u/.cache/x/y')).toBe(false);
    expect(writableAt(base, '/tmp/conch-run-1/y')).toBe(true);
    expect(withProtection(base, [], ['/home/u/proj/config'], 'ro-bind').at(-1)).toMatchObject({ type: 'ro-bind' });
  });

  test('hidden paths: a directory becomes a tmpfs made read-only last, a file an empty read-only file, skipping what is already hidden', () => {
    const ws = join(root, 'ws');
    mkdirSync(join(ws, 'keys', 'deep'), { recursive: true });
    writeFileSync(join(ws, 'keys', 'deep', 'a.pem'), 'A');
    writeFileSync(join(ws, '.env'), 'A=1');
    const base = baseMounts(loadProfile('workspace-write'), { workspace: ws, tmpDir: join(root, 'tmp'), writableRoots: [] });
    const hidden = hiddenMounts([join(ws, 'keys', 'deep', 'a.pem'), join(ws, '.env'), join(ws, 'keys'), join(ws, 'absent')], base);
    expect(hidden.map((m) => [m.type, rel([m.path])[0], m.readOnly ?? false])).toEqual([
      ['ro-bind', 'ws/.env', false],
      ['tmpfs', 'ws/keys', true],
    ]);
    expect(readFileSync(hidden[0]!.source!, 'utf8')).toBe('');
    const all = [...base, ...hidden];
    expect(writableAt(all, join(ws, 'keys', 'x'))).toBe(false);
    expect(writableAt(all, join(ws, '.env'))).toBe(false);
    expect(writableAt(all, join(ws, 'src'))).toBe(true);
    const argv = mountArgs(all);
    expect(argv.slice(-2)).toEqual(['--remount-ro', join(ws, 'keys')]);
    expect(argv.indexOf(join(ws, 'keys'))).toBeGreaterThan(argv.indexOf(ws));
    // /tmp inside is the run's temp dir: a host path under /tmp is not what the command sees there
    const other = join(root, 'other');
    mkdirSync(other);
    expect(hiddenMounts([other], base)).toHaveLength(root.startsWith('/tmp/') ? 0 : 1);
  });

  test('network on: no network namespace', () => {
    const argv = buildBwrapArgv({ bwrap: 'b', mounts: [], network: true, disableUserns: false, seccompFd: 3, cwd: '/', command: ['true'] });
    expect(argv).not.toContain('--unshare-net');
    expect(argv).not.toContain('--disable-userns');
  });
});

describe('profiles', () => {
  test('both shipped profiles load; unknown names list what exists', () => {
    expect(listProfiles()).toEqual(['read-only', 'workspace-write']);
    expect(() => loadProfile('nope')).toThrow(/available: read-only, workspace-write/);
    expect(() => loadProfile('../etc/passwd')).toThrow(/unknown sandbox profile/);
  });

  test('a profile that does not start from a read-only root is rejected, naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conch-profiles-'));
    try {
      const mounts = [{ type: 'bind', path: '/' }];
      writeFileSync(join(dir, 'open.json'), JSON.stringify({ description: 'x', bwrap: { mounts }, seatbelt: { template: 'seatbelt.sb', writable: [] } }));
      writeFileSync(join(dir, 'typo.json'), JSON.stringify({ description: 'x', bwrap: { mounts: [{ type: 'bind', path: '{workspcae}' }] }, seatbelt: { template: 'seatbelt.sb', writable: [] } }));
      writeFileSync(join(dir, 'extra.json'), JSON.stringify({ description: 'x', network: true, bwrap: { mounts }, seatbelt: { template: 'seatbelt.sb', writable: [] } }));
      expect(() => loadProfile('open', dir)).toThrow(`${join(dir, 'open.json')}: the first mount must be`);
      expect(() => loadProfile('typo', dir)).toThrow(/mounts\/0\/path "\{workspcae\}"/);
      expect(() => loadProfile('extra', dir)).toThrow(/extra\.json is malformed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('policy files checked when the bundle was built', () => {
  test('every shipped profile and protected.json is recorded with the digest of its text', () => {
    const digests = validPolicyDigests();
    expect(Object.keys(digests).sort()).toEqual(['protected.json', 'read-only.json', 'workspace-write.json']);
    for (const [name, digest] of Object.entries(digests)) expect(digest).toBe(policyDigest(readFileSync(join(PROFILES_DIR, name), 'utf8')));
  });

  test('only a valid file is recorded, and only a shipped file with the very text recorded skips the check', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conch-profiles-'));
    try {
      const good = readFileSync(join(PROFILES_DIR, 'read-only.json'), 'utf8');
      writeFileSync(join(dir, 'good.json'), good);
      writeFileSync(join(dir, 'extra.json'), JSON.stringify({ ...JSON.parse(good), network: true }));
      writeFileSync(join(dir, 'broken.json'), '{');
      expect(validPolicyDigests(dir)).toEqual({ 'good.json': policyDigest(good) });
      // A malformed file in that folder is still reported, whatever the build recorded for its name.
      expect(() => loadProfile('extra', dir)).toThrow(/extra\.json is malformed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const text = readFileSync(join(PROFILES_DIR, 'workspace-write.json'), 'utf8');
    const recorded = { 'workspace-write.json': policyDigest(text) };
    expect(checkedAtBuild(PROFILES_DIR, 'workspace-write.json', text, recorded)).toBe(true);
    expect(checkedAtBuild(PROFILES_DIR, 'workspace-write.json', `${text} `, recorded)).toBe(false);
    expect(checkedAtBuild(PROFILES_DIR, 'read-only.json', text, recorded)).toBe(false);
    expect(checkedAtBuild('/elsewhere', 'workspace-write.json', text, recorded)).toBe(false);
    expect(checkedAtBuild(PROFILES_DIR, 'toString', text, recorded)).toBe(false);
    // Run from source, nothing was recorded: every file is checked.
    expect(checkedAtBuild(PROFILES_DIR, 'workspace-write.json', text)).toBe(false);
  });
});

describe('probe failure messages', () => {
  test('user namespaces denied', () => {
    const stderr = 'bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.';
    expect(classifyProbeFailure(stderr)).toBe('userns');
    expect(classifyProbeFailure('bwrap: setting up uid map: Permission denied')).toBe('userns');
    const status = probeFailureStatus('userns', '/usr/bin/bwrap', stderr);
    expect(status.fix).toContain('kernel.unprivileged_userns_clone');
    expect(status.fix).toContain('apparmor_restrict_unprivileged_userns');
    expect(status.fix).toContain('--unrestricted');
  });

  test('AppArmor-restricted user namespaces (Ubuntu 23.10+): recognised, with the exact profile and sysctl fix', () => {
    for (const stderr of ['bwrap: setting up uid map: Permission denied', 'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted']) {
      expect(classifyProbeFailure(stderr, true)).toBe('apparmor');
      expect(classifyProbeFailure(stderr, false)).not.toBe('apparmor');
    }
    const status = probeFailureStatus('apparmor', '/usr/bin/bwrap', 'bwrap: setting up uid map: Permission denied');
    expect(status.detail).toContain('kernel.apparmor_restrict_unprivileged_userns = 1');
    expect(status.fix).toContain('profile bwrap /usr/bin/bwrap flags=(unconfined)');
    expect(status.fix).toContain('userns,');
    expect(status.fix).toContain('apparmor_parser -r /etc/apparmor.d/bwrap');
    expect(status.fix).toContain('sysctl -w kernel.apparmor_restrict_unprivileged_userns=0');
    expect(status.fix).toContain('--unrestricted');
  });

  test('/proc mount refused (containers)', () => {
    const stderr = 'bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted';
    expect(classifyProbeFailure(stderr)).toBe('proc');
    const status = probeFailureStatus('proc', '/usr/bin/bwrap', stderr);
    expect(status.detail).toContain('/proc');
    expect(status.fix).toContain('--unrestricted');
  });

  test('anything else carries bwrap\'s own words', () => {
    const stderr = 'bwrap: execvp /bin/true: No such file or directory';
    expect(classifyProbeFailure(stderr)).toBe('other');
    expect(probeFailureStatus('other', '/opt/bwrap', stderr).detail).toContain('execvp /bin/true');
  });
});

describe('seccomp descriptor', () => {
  test('a tampered program file is rewritten before it is handed out', () => {
    const expected = Buffer.from(encodeFilter(buildFilter(hostSeccompArch()!)));
    openSeccompFd().close();
    // Replaced, not overwritten in place: the file is shared by every conch process of this user, and
    // one of them may be handing its descriptor to bwrap right now (bwrap then read 'not a filter':
    // "Invalid seccomp data, must be multiple of 8", seen in another test file under load).
    writeFileSync(`${filterPath()}.tampered`, 'not a filter');
    renameSync(`${filterPath()}.tampered`, filterPath());
    const opened = openSeccompFd();
    try {
      const seen = Buffer.alloc(expected.length + 16);
      const length = readSync(opened.fd, seen, 0, seen.length, null);
      expect(seen.subarray(0, length).equals(expected)).toBe(true);
    } finally {
      opened.close();
    }
  });
});
