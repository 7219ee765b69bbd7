// A JSON Schema whose references lead back to where they started without checking any part of the
// value on the way ({"$ref": "#"}, a → b → a, a $ref inside its own allOf) is a valid document, but a
// validator following it never stops: checking an answer ran out of stack after the whole run. Such
// a cycle moves only through the keywords that apply to the same value; one that goes through
// "properties", "items" and the like descends into the value each time, which ends.

/** Keywords whose subschemas apply to the value itself, not to a part of it. */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'];
const IN_PLACE_LIST = ['allOf', 'anyOf', 'oneOf'];
const IN_PLACE_MAP = ['dependentSchemas'];
/** Keywords whose values are data, not schemas. */
const DATA_KEYS = new Set(['const', 'enum', 'default', 'examples']);

type Node = Record<string, unknown>;

const isNode = (v: unknown): v is Node => !!v && typeof v === 'object' && !Array.isArray(v);

/** The first reference that starts a cycle of in-place references, as `at: "$ref": "…"`, or null. */
export function referenceCycle(root: unknown): string | null {
  if (!isNode(root)) return null;
  const where = new Map<Node, string>();
  const anchors = new Map<string, Node>();
  const ids = new Map<string, Node>();
  const visit = (node: unknown, at: string): void => {
    if (Array.isArray(node)) return node.forEach((n, i) => visit(n, `${at}/${i}`));
    if (!isNode(node)) return;
    if (!where.has(node)) where.set(node, at);
    for (const key of ['$anchor', '$dynamicAnchor']) if (typeof node[key] === 'string') anchors.set(node[key] as string, node);
    if (typeof node.$id === 'string') ids.set(node.$id.replace(/#$/, ''), node);
    for (const [key, value] of Object.entries(node)) if (!DATA_KEYS.has(key)) visit(value, `${at}/${key}`);
  };
  visit(root, '');

  const target = (ref: string): Node | undefined => {
    const hash = ref.indexOf('#');
    const base = hash < 0 ? ref : ref.slice(0, hash);
    const fragment = hash < 0 ? '' : ref.slice(hash + 1);
    const from = base === '' ? root : [...ids].find(([id]) => id === base || id.endsWith(`/${base}`))?.[1];
    if (!from) return undefined;
    if (fragment === '') return from;
    if (!fragment.startsWith('/')) return anchors.get(fragment);
    let node: unknown = from;
    for (const raw of fragment.slice(1).split('/')) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!node || typeof node !== 'object' || !(key in node)) return undefined;
      node = (node as Node)[key];
    }
    return isNode(node) ? node : undefined;
  };
  const next = (node: Node): { to: Node; ref?: string }[] => {
    const out: { to: Node; ref?: string }[] = [];
    for (const key of ['$ref', '$dynamicRef']) {
      const to = typeof node[key] === 'string' ? target(node[key] as string) : undefined;
      if (to) out.push({ to, ref: `"${key}": "${node[key]}"` });
    }
    for (const key of IN_PLACE_ONE) if (isNode(node[key])) out.push({ to: node[key] as Node });
    for (const key of IN_PLACE_LIST) if (Array.isArray(node[key])) for (const n of node[key] as unknown[]) if (isNode(n)) out.push({ to: n });
    for (const key of IN_PLACE_MAP) if (isNode(node[key])) for (const n of Object.values(node[key] as Node)) if (isNode(n)) out.push({ to: n });
    return out;
  };

  // Depth-first over the in-place edges; a node met again while still on the path closes a cycle.
  const state = new Map<Node, 'open' | 'done'>();
  const path: { node: Node; ref?: string }[] = [];
  const search = (node: Node): string | null => {
    state.set(node, 'open');
    for (const edge of next(node)) {
      const seen = state.get(edge.to);
      if (seen === 'done') continue;
      path.push({ node, ...(edge.ref && { ref: edge.ref }) });
      if (seen === 'open') {
        const start = path.findIndex((p) => p.node === edge.to);
        const first = path.slice(start).find((p) => p.ref) ?? path[start]!;
        return `${where.get(first.node) || '(root)'}: ${first.ref ?? 'its subschemas'}`;
      }
      const found = search(edge.to);
      if (found) return found;
      path.pop();
    }
    state.set(node, 'done');
    return null;
  };
  for (const node of where.keys()) {
    if (state.has(node)) continue;
    const found = search(node);
    if (found) return found;
  }
  return null;
}
