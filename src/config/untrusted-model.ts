// A project config that chooses the model or adds providers, in a workspace the user has not
// trusted, or whose config changed since: the repository would pick which server drives the tools
// (and, on a 401, conch would advise putting a key into the repository's provider). Those keys are
// then ignored, saying so and naming the command that lets them in.
import type { ConfigFile } from './file.ts';

/**
 * Whether the project config, read as `text`, may choose the model (`conch trust`, plugins/trust.ts):
 * 'changed' when the workspace is trusted but the file is not the one trusted.
 */
export type ProjectTrust = (configDir: string, cwd: string, text: string) => Promise<'trusted' | 'untrusted' | 'changed'>;

/** The warning when the project file's "model"/"providers" are ignored; null when they count or there are none. */
export async function untrustedModelChoice(
  files: ConfigFile[],
  configDir: string,
  cwd: string,
  projectTrust: ProjectTrust | undefined,
): Promise<{ warning: string } | null> {
  const project = files.find((f) => f.kind === 'project');
  if (!project) return null;
  const keys = [
    ...(project.value.model !== undefined ? ['"model"'] : []),
    ...(Object.keys(project.value.providers ?? {}).length ? ['"providers"'] : []),
  ];
  if (keys.length === 0) return null;
  const trust = projectTrust ? await projectTrust(configDir, cwd, project.text) : 'untrusted';
  if (trust === 'trusted') return null;
  const them = keys.length > 1 ? 'them' : 'it';
  const why =
    trust === 'changed'
      ? `the file changed since you trusted this workspace, and a repository must not choose your model server. Review it and run \`conch trust\` here again to use ${them}.`
      : `this workspace is not trusted, and a repository must not choose your model server. Run \`conch trust\` here to use ${them}.`;
  return { warning: `${project.file}: ${keys.join(' and ')} ignored: ${why}` };
}
