// A project config that chooses the model or adds providers, in a workspace the user has not
// trusted: the repository would pick which server drives the tools (and, on a 401, conch would
// advise putting a key into the repository's provider). Those keys are then ignored, saying so.
import type { ConfigFile } from './file.ts';

/** Whether the user trusted this workspace (`conch trust`, plugins/trust.ts). */
export type IsTrusted = (configDir: string, cwd: string) => Promise<boolean>;

/** The warning when the project file's "model"/"providers" are ignored; null when they count or there are none. */
export async function untrustedModelChoice(
  files: ConfigFile[],
  configDir: string,
  cwd: string,
  isTrusted: IsTrusted | undefined,
): Promise<{ warning: string } | null> {
  const project = files.find((f) => f.kind === 'project');
  if (!project) return null;
  const keys = [
    ...(project.value.model !== undefined ? ['"model"'] : []),
    ...(Object.keys(project.value.providers ?? {}).length ? ['"providers"'] : []),
  ];
  if (keys.length === 0 || (await isTrusted?.(configDir, cwd))) return null;
  return {
    warning: `${project.file}: ${keys.join(' and ')} ignored: this workspace is not trusted, and a repository must not choose your model server. Run \`conch trust\` here to use ${keys.length > 1 ? 'them' : 'it'}.`,
  };
}
