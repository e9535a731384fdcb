/** The value at a JSON Pointer, or `found: false`. */
export type PointerLookup = { found: true; value: unknown } | { found: false };

/**
 * Read `pointer` (RFC 6901) from `document`. Only own properties count, so a pointer like
 * `/__proto__` or `/constructor` never reads something the source did not send.
 *
 * @example
 * getByPointer({ a: [{ 'b/c': 1 }] }, '/a/0/b~1c'); // { found: true, value: 1 }
 */
export function getByPointer(document: unknown, pointer: string): PointerLookup {
  if (pointer === '') return { found: true, value: document };
  if (!pointer.startsWith('/')) return { found: false };
  let current = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= current.length) return { found: false };
      current = current[Number(token)];
    } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: current };
}

/** True when `pointer` is a syntactically valid JSON Pointer. */
export function isJsonPointer(pointer: string): boolean {
  return pointer === '' || (pointer.startsWith('/') && !/~[^01]|~$/.test(pointer));
}
