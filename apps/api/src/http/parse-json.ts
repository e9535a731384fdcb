import { canonicalJson } from '@vouch/audit';
import { ApiError } from '../errors';
import { inexactNumberReason } from './exact-number';

const MAY_HOLD_SURROGATE = /\\u[dD][89a-fA-F]|[\uD800-\uDFFF]/;
const MAY_HOLD_NUL = /\\u0000/;

/**
 * Parse a request body as JSON for a ledger that hashes what it is given.
 *
 * `JSON.parse` alone is too forgiving at this trust boundary: it keeps the last of two
 * duplicate keys (another parser might keep the first, so two readers could disagree about
 * what was approved), turns `1e999` into `Infinity`, and accepts lone surrogates. Each of
 * those is refused here with its own code, and nesting is bounded before anything is built.
 * A number is checked as the caller wrote it, before `JSON.parse` rounds it to a double: one
 * the ledger could not carry exactly (see `inexactNumberReason`) would otherwise be stored,
 * hashed and shown to an approver as another number.
 *
 * Throws `ApiError` (`NESTING_TOO_DEEP`, `MALFORMED_JSON`, `DUPLICATE_KEY`, `NUMBER_NOT_EXACT`
 * with the JSON Pointer of the number, and `NUL_CHARACTER` for U+0000, which Postgres cannot
 * store) or `AuditError` (`LONE_SURROGATE`).
 */
export function parseJsonBody(text: string, options: { maxDepth: number }): unknown {
  const { duplicate, inexact } = scanStructure(text, options.maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new ApiError('MALFORMED_JSON', 'the request body is not valid JSON', {
      cause,
      details: { reason: cause instanceof Error ? cause.message : String(cause) },
    });
  }
  if (duplicate !== undefined) {
    throw new ApiError('DUPLICATE_KEY', `the key ${JSON.stringify(duplicate)} appears twice in one object`, {
      details: { key: duplicate },
    });
  }
  if (inexact !== undefined) {
    const { path, literal, reason } = inexact;
    const shown = literal.length > 40 ? `${literal.slice(0, 40)}…` : literal;
    throw new ApiError(
      'NUMBER_NOT_EXACT',
      `the number ${shown} at ${path || '(root)'} cannot be stored exactly: ${reason}; send it as a decimal string`,
      { details: { path, number: shown } },
    );
  }
  // The same check the ledger applies before hashing: refuses non-finite numbers and lone
  // surrogates with AuditError codes, so nothing is written that could not be canonicalized.
  // Past the number scan above, a surrogate is all it can still refuse, and a parsed value
  // holds one only where the text does (escaped, or raw in text not decoded from UTF-8).
  if (MAY_HOLD_SURROGATE.test(text)) canonicalJson(value);
  // JSON cannot carry a raw U+0000 in a string, only the escape.
  const nul = MAY_HOLD_NUL.test(text) ? findNul(value, '') : undefined;
  if (nul !== undefined) {
    // Postgres text and jsonb cannot hold U+0000; refusing it here keeps it a 400, not a 500.
    throw new ApiError(
      'NUL_CHARACTER',
      `the string at ${nul || '(root)'} contains U+0000, which cannot be stored`,
      {
        details: { path: nul },
      },
    );
  }
  return value;
}

function findNul(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    const at = `${path}/${escapePointer(key)}`;
    if (key.includes('\u0000')) return at;
    const found = findNul(child, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

interface Frame {
  object: boolean;
  keys: Set<string> | null;
  expectKey: boolean;
  /** The member name (object) or element index (array) being read, for JSON Pointers. */
  at: string | number;
}

interface InexactNumber {
  path: string;
  literal: string;
  reason: string;
}

const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * One pass over the text outside of strings: bounds the depth (throws at the first level
 * past `maxDepth`), and returns the first duplicate key and the first number that cannot be
 * stored exactly, if any. Malformed text may give a meaningless answer here; `JSON.parse`
 * then reports it as `MALFORMED_JSON`.
 */
function scanStructure(
  text: string,
  maxDepth: number,
): { duplicate: string | undefined; inexact: InexactNumber | undefined } {
  const stack: Frame[] = [];
  let duplicate: string | undefined;
  let inexact: InexactNumber | undefined;
  let i = 0;
  while (i < text.length) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i;
      i++;
      while (i < text.length) {
        const c = text.charCodeAt(i);
        if (c === 0x5c /* \ */) i += 2;
        else if (c === 0x22) break;
        else i++;
      }
      const top = stack[stack.length - 1];
      if (top?.object && top.expectKey) {
        top.expectKey = false;
        const key = decodeKey(text.slice(start, i + 1));
        top.at = key ?? '';
        if (duplicate === undefined) {
          top.keys ??= new Set();
          if (key !== undefined && top.keys.has(key)) duplicate = key;
          else if (key !== undefined) top.keys.add(key);
        }
      }
      i++;
      continue;
    }
    if (ch === 0x2d /* - */ || (ch >= 0x30 && ch <= 0x39) /* 0-9 */) {
      NUMBER_TOKEN.lastIndex = i;
      const token = NUMBER_TOKEN.exec(text);
      if (token === null) {
        i++;
        continue;
      }
      if (inexact === undefined) {
        const reason = inexactNumberReason(token[0]);
        if (reason !== undefined) inexact = { path: pointerOf(stack), literal: token[0], reason };
      }
      i += token[0].length;
      continue;
    }
    if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      if (stack.length >= maxDepth) {
        throw new ApiError('NESTING_TOO_DEEP', `the request body nests deeper than ${maxDepth} levels`, {
          details: { maxDepth },
        });
      }
      stack.push({ object: ch === 0x7b, keys: null, expectKey: ch === 0x7b, at: ch === 0x7b ? '' : 0 });
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
    } else if (ch === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.object) top.expectKey = true;
      else if (top) top.at = (top.at as number) + 1;
    }
    i++;
  }
  return { duplicate, inexact };
}

/** RFC 6901 JSON Pointer of the value the scanner is at. */
function pointerOf(stack: readonly Frame[]): string {
  return stack.map((frame) => `/${escapePointer(String(frame.at))}`).join('');
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function decodeKey(quoted: string): string | undefined {
  if (!quoted.includes('\\')) return quoted.slice(1, -1);
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}
