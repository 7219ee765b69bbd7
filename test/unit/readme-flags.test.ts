// The README's flag table is the user's reference: it must list exactly the flags `conch --help`
// (and every subcommand's --help) offers, so a flag added or removed in one place fails here
// until the other says the same.
import { expect, test } from 'bun:test';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CONCH, REPO } from '../support/cli.ts';

async function help(args: string[]): Promise<string> {
  const proc = Bun.spawn([CONCH, ...args, '--help'], { cwd: REPO, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1' }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  expect(code).toBe(0);
  return out;
}

/** Lines of one "Name:" section of cac's help, up to the next blank line. */
function section(text: string, name: string): string[] {
  const lines = text.split('\n');
  const start = lines.indexOf(`${name}:`);
  if (start === -1) return [];
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

const FLAG = /(?<![\w-])--?[a-z][\w-]*/g;

/** Flags from the spec column of an Options section (before the description's wide gap). */
function helpFlags(text: string): string[] {
  return section(text, 'Options').flatMap((line) => line.trim().split(/\s{2,}/)[0]!.match(FLAG) ?? []);
}

/** Flags named in the first column of the README table headed `| flag | meaning |`. */
function readmeFlags(readme: string): string[] {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => /^\|\s*flag\s*\|\s*meaning\s*\|/.test(l));
  expect(start).toBeGreaterThan(-1);
  const flags: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const first = line.split('|')[1] ?? '';
    for (const code of first.match(/`[^`]+`/g) ?? []) flags.push(...(code.match(FLAG) ?? []));
  }
  return flags;
}

test("the README's flag table lists exactly the flags of `conch --help` and every subcommand's --help", async () => {
  const top = await help([]);
  // "  tools [action] [name]   …" → tools; the default command "[...task]" is the top-level help.
  const commands = section(top, 'Commands')
    .map((l) => l.trim().split(/\s+/)[0]!)
    .filter((c) => /^[a-z]/.test(c));
  expect(commands).toContain('run');
  const texts = [top, ...(await Promise.all(commands.map((c) => help([c]))))];
  const inHelp = new Set(texts.flatMap(helpFlags));
  expect(inHelp).toContain('--json');
  // The README promises --version; a user looks for it in --help first.
  expect(helpFlags(top)).toContain('--version');
  const inReadme = new Set(readmeFlags(await readFile(join(REPO, 'README.md'), 'utf8')));

  const missingFromReadme = [...inHelp].filter((f) => !inReadme.has(f)).sort();
  const notInHelp = [...inReadme].filter((f) => !inHelp.has(f)).sort();
  expect({ missingFromReadme, notInHelp }).toEqual({ missingFromReadme: [], notInHelp: [] });
});
