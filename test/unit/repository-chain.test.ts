import { afterAll, describe, expect, test } from 'bun:test';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repositoryChain } from '../../src/workspace/repository-chain.ts';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'conch-chain-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function layout(name: string) {
  const repo = join(base, name);
  const cwd = join(repo, 'packages', 'api');
  mkdirSync(cwd, { recursive: true });
  mkdirSync(join(repo, '.git'));
  return { repo, cwd };
}

describe('repositoryChain', () => {
  test('from the repository root down to the working directory', () => {
    const { repo, cwd } = layout('mine');
    expect(repositoryChain(cwd)).toEqual([repo, join(repo, 'packages'), cwd]);
  });

  test('a folder above the working directory that anyone can write to ends the walk (a .git planted in a shared /tmp)', () => {
    const { repo, cwd } = layout('shared');
    chmodSync(repo, 0o1777);
    expect(repositoryChain(cwd)).toEqual([cwd]);
    chmodSync(repo, 0o755);
    expect(repositoryChain(cwd)).toEqual([repo, join(repo, 'packages'), cwd]);
  });

  test('the working directory itself may be world-writable: the user chose it', () => {
    const { repo } = layout('chosen');
    chmodSync(repo, 0o777);
    expect(repositoryChain(repo)).toEqual([repo]);
  });

  test.skipIf(process.getuid?.() !== 0)('a folder above owned by another user ends the walk', () => {
    const { repo, cwd } = layout('theirs');
    chownSync(repo, 54321, 54321);
    expect(repositoryChain(cwd)).toEqual([cwd]);
    chownSync(repo, 0, 0);
    expect(repositoryChain(cwd)).toEqual([repo, join(repo, 'packages'), cwd]);
  });

  test.skipIf(process.getuid?.() !== 0)("a folder above writable by a group not the user's own ends the walk (a team's shared folder)", () => {
    // Its members are other users: a .git and an AGENTS.md one of them put there were read as the
    // project's, instructions and all, as `conch trust` already refuses such a folder.
    const { repo, cwd } = layout('team');
    chownSync(repo, 0, 54321);
    chmodSync(repo, 0o775);
    expect(repositoryChain(cwd)).toEqual([cwd]);
    chmodSync(repo, 0o755);
    expect(repositoryChain(cwd)).toEqual([repo, join(repo, 'packages'), cwd]);
    // The user's own group (a private group, as umask 002 setups give every folder) is the user.
    chownSync(repo, 0, process.getgid!());
    chmodSync(repo, 0o775);
    expect(repositoryChain(cwd)).toEqual([repo, join(repo, 'packages'), cwd]);
  });
});
