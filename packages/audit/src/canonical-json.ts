import { AuditError } from './errors';

/**
 * Serialize a JSON value as RFC 8785 (JSON Canonicalization Scheme) text.
 *
 * Keys are sorted by UTF-16 code units at every level, there is no whitespace, numbers use
 * the ECMAScript shortest round-trip form (RFC 8785 §3.2.2.3) and strings use JCS escaping.
 * Values JSON cannot carry are refused with an `AuditError`, never dropped: a ledger that
 * silently loses `undefined` would hash something other than what the caller sent.
 *
 * @example
 * canonicalJson({ b: [1e21, 'é'], a: null }); // '{"a":null,"b":[1e+21,"é"]}'
 */
export function canonicalJson(value: unknown): string {
  return serialize(value, '', new Set<object>());
}

function serialize(value: unknown, path: string, ancestors: Set<object>): string {
  switch (typeof value) {
    case 'string':
      return serializeString(value, path);
    case 'number':
      if (!Number.isFinite(value)) {
        throw new AuditError('NON_FINITE_NUMBER', `${String(value)} at ${pathOrRoot(path)} is not a JSON number`, {
          path,
        });
      }
      // ECMAScript Number::toString is exactly the RFC 8785 number form; -0 becomes "0".
      return Object.is(value, -0) ? '0' : String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      return serializeObject(value, path, ancestors);
    default:
      throw new AuditError('NOT_JSON_VALUE', `${typeof value} at ${pathOrRoot(path)} is not a JSON value`, { path });
  }
}

function serializeObject(value: object, path: string, ancestors: Set<object>): string {
  if (ancestors.has(value)) {
    throw new AuditError('CYCLE', `cycle at ${pathOrRoot(path)}: JSON cannot carry a value that contains itself`, {
      path,
    });
  }
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const parts: string[] = [];
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) {
          throw new AuditError('NOT_JSON_VALUE', `hole at ${path}/${i}: sparse arrays are not JSON`, {
            path: `${path}/${i}`,
          });
        }
        parts.push(serialize(value[i], `${path}/${i}`, ancestors));
      }
      return `[${parts.join(',')}]`;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      throw new AuditError(
        'NOT_PLAIN_OBJECT',
        `${kind} at ${pathOrRoot(path)} is not a plain object; convert it to JSON first (for a Date, toISOString())`,
        { path },
      );
    }
    if (Object.getOwnPropertySymbols(value).length > 0) {
      throw new AuditError('NOT_JSON_VALUE', `symbol key at ${pathOrRoot(path)} is not JSON`, { path });
    }
    // Default sort compares UTF-16 code units, which is what RFC 8785 §3.2.3 asks for.
    const keys = Object.keys(value).sort();
    const parts: string[] = [];
    for (const key of keys) {
      const childPath = `${path}/${escapePointer(key)}`;
      parts.push(
        `${serializeString(key, childPath)}:${serialize((value as Record<string, unknown>)[key], childPath, ancestors)}`,
      );
    }
    return `{${parts.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

function serializeString(value: string, path: string): string {
  if (LONE_SURROGATE.test(value)) {
    throw new AuditError('LONE_SURROGATE', `string at ${pathOrRoot(path)} holds a lone UTF-16 surrogate`, { path });
  }
  // JSON.stringify on a well-formed string produces exactly the JCS escaping (RFC 8785 §3.2.2.2).
  return JSON.stringify(value);
}

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function pathOrRoot(path: string): string {
  return path === '' ? 'the root' : path;
}
