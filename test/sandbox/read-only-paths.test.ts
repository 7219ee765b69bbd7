// SandboxRequest.readOnlyPaths (real bwrap): a program or script under the host's /tmp, which the
// sandbox's private /tmp hides, is visible read-only with its checkout around it (an MCP server run
// from a clone under /tmp); nothing else of the host's /tmp shows, and hidden paths stay hidden.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canRun, fixture, sandboxed, type Fixture } from './harness.ts';

let fx: Fixture;
let checkout: string;
let other: string;
let script: string;
beforeEach(() => {
  fx = fixture();
  checkout = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sbx-checkout-')));
  other = realpathSync(mkdtempSync(join(tmpdir(), 'conch-sbx-other-')));
  mkdirSync(join(checkout, 'node_modules', 'dep'), { recursive: true });
  mkdirSync(join(checkout, 'bin'));
  script = join(checkout, 'bin', 'server.js');
  writeFileSync(script, 'SCRIPT\n');
  writeFileSync(join(checkout, 'node_modules', 'dep', 'index.js'), 'DEP\n');
  writeFileSync(join(checkout, 'secret.txt'), 'TOKEN\n');
  writeFileSync(join(other, 'file'), 'OTHER\n');
});
afterEach(() => {
  fx.cleanup();
  rmSync(checkout, { recursive: true, force: true });
  rmSync(other, { recursive: true, force: true });
});

describe.skipIf(!canRun)('read-only paths', () => {
  test('a script under the host /tmp is invisible by default', async () => {
    const result = await sandboxed(fx, `cat ${script} 2>/dev/null || echo MISSING`);
    expect(result.stdout).toBe('MISSING\n');
  });

  test('named, it is readable with its checkout around it, read-only; the rest of the host /tmp stays out of sight', async () => {
    const result = await sandboxed(
      fx,
      `cat ${script} ${join(checkout, 'node_modules/dep/index.js')}; ` +
        `echo x > ${script} 2>/dev/null || echo WRITE-REFUSED; touch ${join(checkout, 'new')} 2>/dev/null || echo CREATE-REFUSED; ` +
        `cat ${join(other, 'file')} 2>/dev/null || echo OTHER-MISSING; echo ok > /tmp/mine && cat /tmp/mine`,
      { readOnlyPaths: [script, '/does/not/exist', 'relative/path'] },
    );
    expect(result.stdout).toBe('SCRIPT\nDEP\nWRITE-REFUSED\nCREATE-REFUSED\nOTHER-MISSING\nok\n');
    expect(readFileSync(script, 'utf8')).toBe('SCRIPT\n');
    // /tmp inside is still the run's temp dir.
    expect(readFileSync(join(fx.tmp, 'mine'), 'utf8')).toBe('ok\n');
  });

  test('a hidden path inside the checkout stays hidden', async () => {
    const result = await sandboxed(fx, `cat ${script}; echo "[$(cat ${join(checkout, 'secret.txt')})]"`, {
      readOnlyPaths: [script],
      hidden: [join(checkout, 'secret.txt')],
    });
    expect(result.stdout).toBe('SCRIPT\n[]\n');
  });
});
