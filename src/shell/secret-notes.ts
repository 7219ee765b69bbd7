// A sandboxed command sees a hidden credential location as empty, which looks like a broken file
// rather than a decision. When the command names one, the result says it is hidden and by which rule.
import type { SecretLocation } from '../workspace/secrets.ts';

export function secretNotes(command: string, secrets: SecretLocation[]): string[] {
  const notes: string[] = [];
  for (const s of secrets) {
    const tail = s.absolute.slice(s.absolute.lastIndexOf('/') + 1);
    const fromHome = s.path.startsWith('~/') ? s.path.slice(2) : null;
    const forms = [s.absolute, ...(fromHome ? [`~/${fromHome}`, `$HOME/${fromHome}`, `\${HOME}/${fromHome}`] : [])];
    if (!tail || !forms.some((f) => command.includes(f))) continue;
    notes.push(
      `policy: ${s.path} is hidden by policy (rule read.secret:${s.name}); commands see it empty` +
        `${s.except?.length ? ` except ${s.except.join(', ')}` : ''}. Only the user can lift this (read.allowSecret in their user config).`,
    );
  }
  return notes;
}
