// The run's network allowlist proxy (sandbox/proxy.ts), started with the session when the
// allowlist is in force and closed with it; none otherwise.
import { parseAllowList } from '../sandbox/net-rules.ts';
import type { NetworkProxy } from '../sandbox/proxy.ts';
import type { SessionSandbox } from './sandbox.ts';

export async function networkProxy(sandbox: SessionSandbox, dir: string): Promise<NetworkProxy | null> {
  const allow = sandbox.settings.netAllow;
  if (sandbox.unrestricted || !sandbox.settings.network || !allow) return null;
  // Imported only when an allowlist is in force: every other start skips its node:dns and node:net.
  const { startProxy } = await import('../sandbox/proxy.ts');
  return startProxy({ allow: parseAllowList(allow, (i) => `network allow entry ${i}:`), dir, source: '--allow-net / sandbox.network.allow' });
}
