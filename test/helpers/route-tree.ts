// The routes a Fastify instance serves, read from its route tree, to compare with what the
// OpenAPI document lists.

/**
 * `METHOD /path` of every route in `printRoutes({ commonPrefix: false })`'s output: each line is
 * a path segment appended to its parent.
 */
export function servedRoutes(tree: string): Set<string> {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.indexOf('── ');
    if (at < 0) continue;
    const depth = Math.round((at - 1) / 4);
    const match = /^(.*?)(?: \(([^)]*)\))?$/.exec(line.slice(at + 3).trimEnd())!;
    const path = (depth > 0 ? stack[depth - 1]! : '') + match[1]!;
    stack[depth] = path;
    stack.length = depth + 1;
    for (const method of (match[2] ?? '').split(',').map((m) => m.trim()).filter(Boolean)) out.add(`${method} ${path}`);
  }
  return out;
}

/** A Fastify path in OpenAPI's form: `:id` → `{id}`. */
export const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
