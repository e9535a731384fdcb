/** A JSON value: what checks, evidence, proposals and observations are made of. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
/** A JSON object. */
export type JsonObject = { readonly [key: string]: JsonValue };

/** Why a value cannot be canonical JSON; the same codes `@vouch/audit` uses when it refuses. */
export type JsonIssueCode =
  | 'NOT_JSON_VALUE'
  | 'LONE_SURROGATE'
  | 'CYCLE'
  | 'NOT_PLAIN_OBJECT'
  | 'NON_FINITE_NUMBER';

/** The first place where a value stops being canonicalizable JSON. */
export interface JsonIssue {
  code: JsonIssueCode;
  /** JSON Pointer (RFC 6901) to the offending value; `''` is the root. */
  path: string;
  message: string;
}

/**
 * Find the first reason `value` cannot be written as RFC 8785 canonical JSON, or `null`.
 *
 * The ledger hashes check results with `@vouch/audit`'s canonicalJson, which refuses rather than
 * drops: undefined, NaN, Infinity, BigInt, functions, symbols, lone surrogates, sparse arrays,
 * cycles and non-plain objects (Date, Map, class instances). The SDK may not import
 * `@vouch/audit`, so the same rules are checked here, before a result reaches the ledger.
 *
 * @example
 * findJsonIssue({ at: new Date() }); // { code: 'NOT_PLAIN_OBJECT', path: '/at', ... }
 */
export function findJsonIssue(value: unknown): JsonIssue | null {
  return walk(value, '', new Set<object>());
}

function walk(value: unknown, path: string, ancestors: Set<object>): JsonIssue | null {
  switch (typeof value) {
    case 'string':
      return LONE_SURROGATE.test(value)
        ? issue('LONE_SURROGATE', path, 'string holds a lone UTF-16 surrogate')
        : null;
    case 'number':
      return Number.isFinite(value)
        ? null
        : issue('NON_FINITE_NUMBER', path, `${value} is not a JSON number`);
    case 'boolean':
      return null;
    case 'object': {
      if (value === null) return null;
      if (ancestors.has(value)) return issue('CYCLE', path, 'value contains itself');
      ancestors.add(value);
      try {
        return walkObject(value, path, ancestors);
      } finally {
        ancestors.delete(value);
      }
    }
    default:
      return issue('NOT_JSON_VALUE', path, `${typeof value} is not a JSON value`);
  }
}

function walkObject(value: object, path: string, ancestors: Set<object>): JsonIssue | null {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) return issue('NOT_JSON_VALUE', `${path}/${i}`, 'sparse arrays are not JSON');
      const found = walk(value[i], `${path}/${i}`, ancestors);
      if (found) return found;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const kind = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
    return issue('NOT_PLAIN_OBJECT', path, `${kind} is not a plain object`);
  }
  if (Object.getOwnPropertySymbols(value).length > 0)
    return issue('NOT_JSON_VALUE', path, 'symbol keys are not JSON');
  for (const key of Object.keys(value)) {
    const childPath = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (LONE_SURROGATE.test(key))
      return issue('LONE_SURROGATE', childPath, 'key holds a lone UTF-16 surrogate');
    const found = walk((value as Record<string, unknown>)[key], childPath, ancestors);
    if (found) return found;
  }
  return null;
}

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

function issue(code: JsonIssueCode, path: string, message: string): JsonIssue {
  return { code, path, message: `${path === '' ? 'the root' : path}: ${message}` };
}

/**
 * A deep copy of a JSON value, frozen at every level. Each verifier gets its own, so one
 * plugin cannot change what another sees (or what the ledger records) by mutating its input.
 */
export function frozenCopy<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
