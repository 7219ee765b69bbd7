// The network allowlist's rules: parsing HOST[:PORT] / *.domain / IP literal / @preset entries
// (presets are data: sandbox-profiles/network.json), matching a request's authority against them
// before any DNS lookup. Which addresses a name may then lead to is net-addresses.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROFILES_DIR } from './profiles.ts';

export const NETWORK_FILE = join(PROFILES_DIR, 'network.json');

export interface AllowRule {
  /** As written (after preset expansion), for messages. */
  text: string;
  /** Lower case, no brackets; for a wildcard the suffix after "*." */
  host: string;
  wildcard: boolean;
  /** null: 80 and 443. */
  port: number | null;
  /** The host is an IP literal: the one way a loopback/private address is reachable. */
  literal: boolean;
}

/** An entry that is not a valid rule; the message says what is expected. */
export class NetRuleError extends Error {}

let presets: Record<string, string[]> | null = null;

export function networkPresets(): Record<string, string[]> {
  if (presets) return presets;
  try {
    const value = JSON.parse(readFileSync(NETWORK_FILE, 'utf8')) as { presets?: Record<string, unknown> };
    const p = value.presets ?? {};
    if (!Object.values(p).every((v) => Array.isArray(v) && v.every((x) => typeof x === 'string'))) throw new Error('presets must be lists of strings');
    return (presets = p as Record<string, string[]>);
  } catch (error) {
    throw new NetRuleError(`${NETWORK_FILE} is malformed (${(error as Error).message}); restore it from the conch distribution.`);
  }
}

let netIsIP: ((input: string) => number) | undefined;

/**
 * node:net's isIP, required at the first allowlist entry rather than imported: this file loads on
 * every start, and node:net brings node:stream with it (≈ 6 ms of CPU), for runs that have no list.
 */
export function isIpLiteral(host: string): boolean {
  netIsIP ??= (require('node:net') as typeof import('node:net')).isIP;
  return netIsIP(host) !== 0;
}

const HOST = /^(\*\.)?([a-z0-9_]([a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/;

export function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
}

export function parseRule(entry: string): AllowRule {
  const text = entry.trim();
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(text);
  const expected = `expected HOST[:PORT] (e.g. registry.npmjs.org, *.example.org, 127.0.0.1:8080, [::1]:8080) or @PRESET (${Object.keys(networkPresets()).join(', ')})`;
  if (!m) throw new NetRuleError(`"${entry}": ${expected}.`);
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && (port < 1 || port > 65535)) throw new NetRuleError(`"${entry}": port ${m[2]} is out of range 1-65535.`);
  const host = normalizeHost(m[1]!);
  const literal = isIpLiteral(host);
  if (!literal && !HOST.test(host)) throw new NetRuleError(`"${entry}": ${expected}.`);
  // No DNS name ends in an all-digit label: `8080` (a port given alone) or `127.1` would be a rule
  // that matches nothing the user meant.
  if (!literal && /(^|\.)\d+$/.test(host)) {
    throw new NetRuleError(`"${entry}": ${host} ends in a number, so it is no host name, and it is no whole IP address either; a port goes after its host (127.0.0.1:8080).`);
  }
  const wildcard = host.startsWith('*.');
  return { text, host: wildcard ? host.slice(2) : host, wildcard, port, literal };
}

/** Expand @presets and parse; `where` names the flag or key for the message. */
export function parseAllowList(entries: string[], where: (i: number) => string): AllowRule[] {
  const rules: AllowRule[] = [];
  for (const [i, entry] of entries.entries()) {
    try {
      if (entry.startsWith('@')) {
        // Own keys only: @constructor is no preset, whatever every object inherits.
        const presets = networkPresets();
        const list = Object.hasOwn(presets, entry.slice(1)) ? presets[entry.slice(1)] : undefined;
        if (!list) throw new NetRuleError(`"${entry}" is no preset; available: ${Object.keys(networkPresets()).map((n) => `@${n}`).join(', ')} (${NETWORK_FILE}).`);
        rules.push(...list.map(parseRule));
      } else rules.push(parseRule(entry));
    } catch (error) {
      if (error instanceof NetRuleError) throw new NetRuleError(`${where(i)} ${error.message}`);
      throw error;
    }
  }
  return rules;
}

/** The rule allowing host:port (host as the client sent it), or null. No DNS involved. */
export function matchRule(rules: AllowRule[], host: string, port: number): AllowRule | null {
  const h = normalizeHost(host);
  for (const rule of rules) {
    const portOk = rule.port === null ? port === 80 || port === 443 : rule.port === port;
    if (!portOk) continue;
    if (rule.wildcard ? h.endsWith(`.${rule.host}`) : h === rule.host) return rule;
  }
  return null;
}
