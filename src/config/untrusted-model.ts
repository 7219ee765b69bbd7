// A project config that chooses the model or adds providers, in a workspace the user has not
// trusted, or whose config changed since: the repository would pick which server drives the tools
// (and, on a 401, conch would advise putting a key into the repository's provider). Its output
// tokens, thinking and temperature for your model are the same kind of choice: maximal thinking and
// output on your paid model multiply what each call costs. Those keys are then ignored, saying so
// and naming the command that lets them in.
import type { ConfigFile } from './file.ts';

/**
 * Whether the project config, read as `text`, may choose the model (`conch trust`, plugins/trust.ts):
 * 'changed' when the workspace is trusted but the file is not the one trusted.
 */
export type ProjectTrust = (configDir: string, cwd: string, text: string) => Promise<'trusted' | 'untrusted' | 'changed'>;

/** The warning when the project file's "model"/"providers" and model controls are ignored; null when they count or there are none. */
export async function untrustedModelChoice(
  files: ConfigFile[],
  configDir: string,
  cwd: string,
  projectTrust: ProjectTrust | undefined,
): Promise<{ warning: string } | null> {
  const project = files.find((f) => f.kind === 'project');
  if (!project) return null;
  const v = project.value;
  const server = [...(v.model !== undefined ? ['"model"'] : []), ...(Object.keys(v.providers ?? {}).length ? ['"providers"'] : [])];
  const controls = (['maxOutputTokens', 'thinking', 'temperature', 'models'] as const).filter((k) => v[k] !== undefined).map((k) => `"${k}"`);
  const keys = [...server, ...controls];
  if (keys.length === 0) return null;
  const trust = projectTrust ? await projectTrust(configDir, cwd, project.text) : 'untrusted';
  if (trust === 'trusted') return null;
  const them = keys.length > 1 ? 'them' : 'it';
  const choice = server.length && controls.length ? 'your model server or how much its calls spend' : server.length ? 'your model server' : 'how much your model calls spend';
  const why =
    trust === 'changed'
      ? `the file changed since you trusted this workspace, and a repository must not choose ${choice}. Review it and run \`conch trust\` here again to use ${them}.`
      : `this workspace is not trusted, and a repository must not choose ${choice}. Run \`conch trust\` here to use ${them}.`;
  return { warning: `${project.file}: ${listed(keys)} ignored: ${why}` };
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : items[0]!;
}
