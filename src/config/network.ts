// sandbox.network.allow and --allow-net entries are checked where they are written, so a typo is
// reported with its file and key (or the flag) and the expected form.
import { ConfigError } from '../core/errors.ts';
import { NetRuleError, parseAllowList } from '../sandbox/net-rules.ts';
import type { ConfigFile } from './file.ts';

export function checkNetAllow(files: ConfigFile[], flag: string[] | undefined): void {
  for (const { file, value } of files) {
    const network = value.sandbox?.network;
    if (typeof network !== 'object') continue;
    check(network.allow, (i) => `${file}: "sandbox.network.allow[${i}]"`, file, 'sandbox.network.allow');
  }
  if (flag?.length) check(flag, () => '--allow-net', undefined, '--allow-net');
}

function check(entries: string[], where: (i: number) => string, file: string | undefined, key: string): void {
  try {
    parseAllowList(entries, where);
  } catch (error) {
    if (error instanceof NetRuleError) throw new ConfigError(error.message, file, key);
    throw error;
  }
}
