/**
 * With several upstreams, each one's tools and prompts are shown to the agent as
 * `<upstream>__<name>`. `__` is legal in MCP tool names (letters, digits, `_`, `-`, `.`) and
 * upstream names hold no `_`, so the first `__` of an exposed name always ends the namespace.
 */
export const NAMESPACE_SEPARATOR = '__';

/** The name the agent sees for `name` of upstream `upstream`. */
export function namespaced(upstream: string, name: string): string {
  return `${upstream}${NAMESPACE_SEPARATOR}${name}`;
}

/** The upstream and its own name for an exposed name, or null when it has no namespace. */
export function splitNamespaced(exposed: string): { upstream: string; name: string } | null {
  const at = exposed.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0) return null;
  return { upstream: exposed.slice(0, at), name: exposed.slice(at + NAMESPACE_SEPARATOR.length) };
}
