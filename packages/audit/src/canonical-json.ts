import { AuditError } from './errors';

/**
 * Serialize a JSON value as RFC 8785 (JSON Canonicalization Scheme) text.
 *
 * Keys are sorted by UTF-16 code units at every level, there is no whitespace, numbers use
 * the ECMAScript shortest round-trip form (RFC 8785 §3.2.2.3) and strings use JCS escaping.
 * Values JSON cannot carry are refused with an `AuditError` whose `path` is a JSON Pointer
 * (RFC 6901) to the offending value, never dropped: a ledger that silently loses `undefined`
 * would hash something other than what the caller sent.
 *
 * Only JSON data is accepted: `null`, booleans, finite numbers, well-formed strings, arrays
 * without holes or extra properties, and objects whose prototype is `Object.prototype` or
 * `null`. `toJSON` is never called, so a `Date` (or anything else that converts itself) is
 * refused and must be converted by the caller first: the bytes that are hashed should be
 * the bytes the caller chose, not what a class decided to turn into. Own enumerable string
 * keys are what is serialized (an own `"__proto__"` key from `JSON.parse` included); getters
 * among them are read once.
 *
 * The walk is iterative, so nesting depth is bounded by memory, not by the call stack: any
 * value `JSON.parse` can build can be canonicalized.
 *
 * @example
 * canonicalJson({ b: [1e21, 'é'], a: null }); // '{"a":null,"b":[1e+21,"é"]}'
 */
export function canonicalJson(value: unknown): string {
  const walk = new Walk();
  // Pieces are collected and joined once: building one string by `+=` leaves a rope of
  // millions of nodes for the collector on large payloads.
  const out = [walk.write(value)];
  for (;;) {
    const top = walk.stack.at(-1);
    if (top === undefined) return out.join('');
    if (top.next < top.size) {
      // Descend into the next child of the innermost open container.
      const index = top.next++;
      if (index > 0) out.push(',');
      if (top.keys === undefined) {
        // A hole reads as undefined; refusing it here names the hole rather than "undefined".
        if (!Object.hasOwn(top.container, index)) {
          throw new AuditError('NOT_JSON_VALUE', `hole at ${walk.path()}: sparse arrays are not JSON`, {
            path: walk.path(),
          });
        }
        out.push(walk.write((top.container as readonly unknown[])[index]));
      } else {
        const key = top.keys[index]!;
        out.push(
          serializeString(key, walk),
          ':',
          walk.write((top.container as Record<string, unknown>)[key]),
        );
      }
    } else {
      out.push(top.keys === undefined ? ']' : '}');
      walk.close();
    }
  }
}

/** One open array or object: its children are written from `next` up to `size`. */
interface Frame {
  readonly container: object;
  /** Sorted keys of an object; `undefined` for an array. */
  readonly keys: readonly string[] | undefined;
  readonly size: number;
  next: number;
}

/**
 * The state of one serialization: the open containers from the root down. The stack doubles
 * as the path of the value being written (each frame's `next - 1` is the child in progress),
 * so no path strings are built unless an error needs one.
 */
class Walk {
  readonly stack: Frame[] = [];
  /** The containers on the stack: meeting one of them again is a cycle. */
  private readonly open = new Set<object>();

  /** Serialize a scalar, or open a container and return its opening bracket. */
  write(value: unknown): string {
    switch (typeof value) {
      case 'string':
        return serializeString(value, this);
      case 'number':
        if (!Number.isFinite(value)) {
          throw new AuditError(
            'NON_FINITE_NUMBER',
            `${String(value)} at ${this.where()} is not a JSON number`,
            {
              path: this.path(),
            },
          );
        }
        // ECMAScript Number::toString is exactly the RFC 8785 §3.2.2.3 number form
        // (shortest round-trip digits, exponent from 1e21 and below 1e-6), and it prints -0 as "0".
        return String(value);
      case 'boolean':
        return value ? 'true' : 'false';
      case 'object':
        return value === null ? 'null' : this.openContainer(value);
      default:
        // undefined, function, symbol, bigint: JSON has no such value. A BigInt is refused rather
        // than printed as digits because other JCS implementations would read it back as a double.
        throw new AuditError('NOT_JSON_VALUE', `${typeof value} at ${this.where()} is not a JSON value`, {
          path: this.path(),
        });
    }
  }

  /** Pop the innermost container once all its children are written. */
  close(): void {
    this.open.delete(this.stack.pop()!.container);
  }

  /** JSON Pointer (RFC 6901) of the value being written. */
  path(): string {
    let path = '';
    for (const frame of this.stack) {
      const index = frame.next - 1;
      path += `/${frame.keys === undefined ? index : escapePointer(frame.keys[index]!)}`;
    }
    return path;
  }

  /** The path for a message: the root has the empty pointer, which reads badly. */
  where(): string {
    return this.stack.length === 0 ? 'the root' : this.path();
  }

  private openContainer(value: object): string {
    if (this.open.has(value)) {
      throw new AuditError(
        'CYCLE',
        `cycle at ${this.where()}: JSON cannot carry a value that contains itself`,
        {
          path: this.path(),
        },
      );
    }
    // The prototype first: a Promise or a Map is not plain data whatever keys instrumentation
    // (async hooks, tracing) has hung on it.
    const proto: unknown = Object.getPrototypeOf(value);
    const plain = Array.isArray(value)
      ? proto === Array.prototype
      : proto === Object.prototype || proto === null;
    if (plain && Object.getOwnPropertySymbols(value).length > 0) {
      throw new AuditError('NOT_JSON_VALUE', `symbol key at ${this.where()} is not JSON`, {
        path: this.path(),
      });
    }
    if (Array.isArray(value)) {
      if (proto !== Array.prototype) throw this.notPlain(value, 'an array subclass');
      // Without holes an array has exactly `length` own enumerable keys; more means named
      // properties (a RegExp match's `index`, `arr.note = ...`) that JSON would drop silently.
      if (Object.keys(value).length > value.length)
        throw this.notPlain(value, 'an array with named properties');
      this.push({ container: value, keys: undefined, size: value.length, next: 0 });
      return '[';
    }
    if (proto !== Object.prototype && proto !== null) throw this.notPlain(value, 'not a plain object');
    // Array.prototype.sort without a comparator compares UTF-16 code units: RFC 8785 §3.2.3.
    const keys = Object.keys(value).sort();
    this.push({ container: value, keys, size: keys.length, next: 0 });
    return '{';
  }

  private push(frame: Frame): void {
    this.stack.push(frame);
    this.open.add(frame.container);
  }

  private notPlain(value: object, what: string): AuditError {
    const kind = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return new AuditError(
      'NOT_PLAIN_OBJECT',
      `${typeof kind === 'string' ? kind : 'object'} at ${this.where()} is ${what}; convert it to plain JSON data first (for a Date, toISOString())`,
      { path: this.path() },
    );
  }
}

function serializeString(value: string, walk: Walk): string {
  if (LONE_SURROGATE.test(value)) {
    // RFC 8785 §3.2.2.2: a lone surrogate cannot be encoded as UTF-8, so implementations would
    // disagree on the bytes (U+FFFD, an escape, or an error). Refusing is the only safe answer.
    throw new AuditError('LONE_SURROGATE', `string at ${walk.where()} holds a lone UTF-16 surrogate`, {
      path: walk.path(),
    });
  }
  // JSON.stringify on a well-formed string produces exactly the JCS escaping (RFC 8785 §3.2.2.2):
  // \" \\ \b \t \n \f \r, \u00xx in lowercase for the other controls, everything else verbatim.
  return JSON.stringify(value);
}

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}
