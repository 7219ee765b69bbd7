// The system prompt: short and true. It states the tools, where paths are relative to, the policy in
// force, the skills catalog, and the user's and the project's AGENTS.md guidance (bounded, so a huge
// file or a deep monorepo cannot eat the context).
import { readCheckedSmallFile, readSmallFile, type SmallFile } from '../workspace/small-file.ts';
import { repositoryChain } from '../workspace/repository-chain.ts';
import { canonical, isWithin } from '../core/paths.ts';
import { join, basename, relative } from 'node:path';
import { tildePath } from '../core/display-path.ts';

export const AGENTS_MD_MAX_BYTES = 32 * 1024;
/** The project's AGENTS.md files together, from the repository root down to the workspace. */
export const PROJECT_AGENTS_MD_MAX_BYTES = 64 * 1024;

export interface PromptFacts {
  workspaceRoot: string;
  tools: string[];
  unrestricted: boolean;
  network: boolean;
  /** The network allowlist, when the network is limited to it. */
  netAllow?: string[];
  readOnly: boolean;
  /** AGENTS.md texts, lowest precedence first: user-wide, then the repository root's down to the workspace's. */
  guidance: { label: string; text: string }[];
  /** The skills catalog (src/skills/catalog.ts), only when the model has `read` to open a skill. */
  skills?: string | null;
}

export function systemPrompt(facts: PromptFacts): string {
  const lines = [
    'You are conch, a coding agent working in a terminal on a single task. Work through the task with the tools, then reply with a concise final answer.',
    `Tools: ${facts.tools.length ? facts.tools.join(', ') : '(none)'}.`,
    `Workspace: the directory "${basename(facts.workspaceRoot)}"; give paths relative to it.`,
  ];
  if (facts.unrestricted) {
    lines.push('Policy: unrestricted. The user disabled the workspace checks and the process sandbox; act with care.');
  } else {
    const writes = facts.readOnly ? 'The workspace is read-only.' : 'Writes are allowed inside the workspace only; .git, .conch and .env files are read-only.';
    const net = !facts.network ? 'off' : facts.netAllow ? `limited to ${facts.netAllow.join(', ') || 'no host'} (through the HTTP(S) proxy set in the environment; other hosts get 403)` : 'on';
    const shell = facts.tools.includes('bash') ? ` Shell commands run in a sandbox with network ${net}.` : '';
    lines.push(`Policy: restricted. ${writes}${shell}`);
    lines.push('A tool error that names a rule is a policy decision made by the user: adapt instead of retrying the same action.');
    lines.push('Credential locations (~/.ssh keys, ~/.aws, ~/.netrc, ~/.npmrc, ~/.config/gh, keyrings, browser profiles …) are hidden by policy: the read tool refuses them and shell commands see them empty.');
  }
  if (facts.tools.includes('write') || facts.tools.includes('edit')) {
    lines.push('Read a file before changing it; write and edit check the revision you saw.');
  }
  if (facts.skills) lines.push('', facts.skills);
  if (facts.guidance.length > 1) lines.push('', 'Guidance follows from the most general AGENTS.md to the most specific; where two disagree, the later one wins.');
  for (const g of facts.guidance) lines.push('', `# Guidance from ${g.label}`, g.text.trim());
  return lines.join('\n');
}

/**
 * Load AGENTS.md from the config dir, then from every directory from the enclosing repository's root
 * down to the workspace root (just the workspace's outside a repository, and never above `home`),
 * each bounded and the project's together bounded too; the nearest is the most specific, so it is
 * the one kept whole when they exceed the total. Missing files are fine. Each project file passes the
 * read policy first (`mayRead` throws when it is denied, and resolves to the canonical path): a
 * repository's AGENTS.md that links to a denied file must not carry it into the prompt. It must stay
 * in the repository (or the workspace, outside one): it is the project's guidance, not any file of
 * the user's it links to. What is read is the file that was checked, through one descriptor: a link
 * or FIFO swapped in after the check is not followed.
 */
export async function loadGuidance(
  configDir: string,
  workspaceRoot: string,
  mayRead: (path: string) => Promise<string>,
  home: string,
): Promise<{ label: string; text: string }[]> {
  const found: { label: string; text: string }[] = [];
  const user = await guidanceFrom(() => readSmallFile(join(configDir, 'AGENTS.md'), AGENTS_MD_MAX_BYTES), AGENTS_MD_MAX_BYTES);
  if (user !== null) found.push({ label: tildePath(join(configDir, 'AGENTS.md')), text: user });

  const chain = repositoryChain(workspaceRoot, canonical(home));
  const top = chain[0]!;
  const project: { label: string; text: string }[] = [];
  const seen = new Set<string>();
  let budget = PROJECT_AGENTS_MD_MAX_BYTES;
  for (const dir of chain.reverse()) {
    if (budget === 0) break;
    const path = join(dir, 'AGENTS.md');
    const max = Math.min(AGENTS_MD_MAX_BYTES, budget);
    let used = 0;
    const text = await guidanceFrom(async () => {
      const approved = await mayRead(path);
      // A link to a file that already gave guidance (a package's AGENTS.md linking to the root's) adds nothing.
      if (!isWithin(approved, top) || seen.has(approved)) return null;
      seen.add(approved);
      const read = await readCheckedSmallFile(approved, max);
      used = read?.bytes.length ?? 0;
      return read;
    }, max);
    if (text === null) continue;
    budget -= used;
    project.unshift({ label: relative(workspaceRoot, path), text });
  }
  return [...found, ...project];
}

/** The file's text, marked when cut at `max`; null when it is missing, denied or not a regular file. */
async function guidanceFrom(read: () => Promise<SmallFile | null>, max: number): Promise<string | null> {
  let file;
  try {
    file = await read();
  } catch {
    return null; // denied, not a regular file, unreadable: no guidance from it
  }
  if (!file) return null;
  let text = file.bytes.toString('utf8').replace(/\uFFFD$/, '');
  if (file.truncated) {
    text +=
      max < AGENTS_MD_MAX_BYTES
        ? `\n[AGENTS.md truncated: the project's AGENTS.md files are limited to ${PROJECT_AGENTS_MD_MAX_BYTES} bytes together]`
        : `\n[AGENTS.md truncated at ${AGENTS_MD_MAX_BYTES} bytes]`;
  }
  return text;
}
