// The system prompt: short and true. It states the tools, where paths are relative to, the policy in
// force, the skills catalog, and the user's AGENTS.md guidance (bounded, so a huge file cannot eat
// the context).
import { readCheckedSmallFile, readSmallFile } from '../workspace/small-file.ts';
import { isWithin } from '../core/paths.ts';
import { join, basename } from 'node:path';

export const AGENTS_MD_MAX_BYTES = 32 * 1024;

export interface PromptFacts {
  workspaceRoot: string;
  tools: string[];
  unrestricted: boolean;
  network: boolean;
  /** The network allowlist, when the network is limited to it. */
  netAllow?: string[];
  readOnly: boolean;
  /** AGENTS.md texts, in order of precedence (user-wide first, then the workspace's). */
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
  for (const g of facts.guidance) lines.push('', `# Guidance from ${g.label}`, g.text.trim());
  return lines.join('\n');
}

/**
 * Load AGENTS.md from the config dir and the workspace root, each bounded. Missing files are fine.
 * The workspace's copy passes the read policy first (`mayRead` throws when it is denied, and
 * resolves to the canonical path): a repository's AGENTS.md that links to a denied file must not
 * carry it into the prompt. It must stay in the workspace (it is the project's guidance, not any
 * file of the user's it links to), and what is read is the file that was checked, through one
 * descriptor: a link or FIFO swapped in after the check is not followed.
 */
export async function loadGuidance(
  configDir: string,
  workspaceRoot: string,
  mayRead: (path: string) => Promise<string>,
): Promise<{ label: string; text: string }[]> {
  const found: { label: string; text: string }[] = [];
  for (const [label, path, checked] of [
    ['~/.config/conch/AGENTS.md', join(configDir, 'AGENTS.md'), false],
    ['AGENTS.md', join(workspaceRoot, 'AGENTS.md'), true],
  ] as const) {
    let read;
    try {
      if (checked) {
        const canonical = await mayRead(path);
        if (!isWithin(canonical, workspaceRoot)) continue;
        read = await readCheckedSmallFile(canonical, AGENTS_MD_MAX_BYTES);
      } else read = await readSmallFile(path, AGENTS_MD_MAX_BYTES);
    } catch {
      continue; // denied, not a regular file, unreadable: no guidance from it
    }
    if (!read) continue;
    let text = read.bytes.toString('utf8').replace(/\uFFFD$/, '');
    if (read.truncated) text += `\n[AGENTS.md truncated at ${AGENTS_MD_MAX_BYTES} bytes]`;
    found.push({ label, text });
  }
  return found;
}
