// A sandboxed command sees a hidden credential location as empty, which looks like a broken file
// rather than a decision. When the command names one, the result says it is hidden and by which rule.
import type { SecretLocation } from '../workspace/secrets.ts';

// The names each location goes by, made once per run's list (the list is the same every command).
const formsOf = new WeakMap<SecretLocation[], { location: SecretLocation; forms: string[] }[]>();

function namesOf(secrets: SecretLocation[]) {
  let found = formsOf.get(secrets);
  if (!found) {
    found = [];
    for (const location of secrets) {
      const tail = location.absolute.slice(location.absolute.lastIndexOf('/') + 1);
      if (!tail) continue;
      const fromHome = location.path.startsWith('~/') ? location.path.slice(2) : null;
      found.push({ location, forms: [location.absolute, ...(fromHome ? [`~/${fromHome}`, `$HOME/${fromHome}`, `\${HOME}/${fromHome}`] : [])] });
    }
    formsOf.set(secrets, found);
  }
  return found;
}

export function secretNotes(command: string, secrets: SecretLocation[]): string[] {
  const notes: string[] = [];
  for (const { location: s, forms } of namesOf(secrets)) {
    if (!forms.some((f) => command.includes(f))) continue;
    notes.push(
      `policy: ${s.path} is hidden by policy (rule read.secret:${s.name}); commands see it empty` +
        `${s.except?.length ? ` except ${s.except.join(', ')}` : ''}. Only the user can lift this (read.allowSecret in their user config).`,
    );
  }
  return notes;
}
