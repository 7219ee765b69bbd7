// ${VAR} references in what users write for programs conch starts (an MCP server's args, env and
// headers), expanded the way Claude Code expands them in .mcp.json.

/** `${VAR}` and `${VAR:-default}`, as Claude Code expands them; unset names without a default are collected. */
export function expandVars(text: string, env: Record<string, string | undefined>, missing: Set<string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_all, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    missing.add(name);
    return '';
  });
}
