import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { canonicalJson } from './canonical-json';
import { isAuditError } from './errors';
import { cyberphoneCases, cyberphoneNumberLines } from './fixtures/jcs/cyberphone-testdata';
import { appendixBNumberSamples, primitivesExample, sortingExample } from './fixtures/jcs/rfc8785';

/** The code and JSON Pointer of the AuditError that canonicalJson throws for `value`. */
function refusalOf(value: unknown): { name: string; code: string; path: string | undefined } {
  try {
    canonicalJson(value);
  } catch (error) {
    if (isAuditError(error)) return { name: error.name, code: error.code, path: error.path };
    throw error;
  }
  throw new Error('canonicalJson accepted a value it must refuse');
}

function doubleFromHex(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

function pointer(segments: readonly (string | number)[]): string {
  return segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

// --- An independent model of RFC 8785, written from the RFC's rules rather than from the code
// under test: recursive, an explicit code-unit comparator instead of the default sort, and the
// §3.2.2.2 escaping rule character by character instead of JSON.stringify. Numbers use
// Number::toString, which §3.2.2.3 names; they are checked on their own further down.

function modelString(value: string): string {
  const short: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit === 0x22) out += '\\"';
    else if (unit === 0x5c) out += '\\\\';
    else if (short[unit] !== undefined) out += short[unit];
    else if (unit < 0x20) out += `\\u${unit.toString(16).padStart(4, '0')}`;
    else out += value[i];
  }
  return `${out}"`;
}

function compareCodeUnits(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
}

function modelJcs(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return modelString(value);
  if (Array.isArray(value)) return `[${value.map(modelJcs).join(',')}]`;
  const entries = Object.entries(value as object).sort(([a], [b]) => compareCodeUnits(a, b));
  return `{${entries.map(([k, v]) => `${modelString(k)}:${modelJcs(v)}`).join(',')}}`;
}

/** Rebuild every object with its keys inserted in a shuffled order (fromEntries keeps `__proto__` an own key). */
function shuffleKeysDeep(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeysDeep(item, random));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, shuffleKeysDeep(v, random)]));
}

/** A small seeded PRNG (mulberry32) so a failing shuffle replays from fast-check's seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** JSON.parse cannot give back -0 from canonical text (JCS writes it as 0): compare without it. */
function withoutMinusZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(withoutMinusZero);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutMinusZero(v)]));
}

const anyJson = fc.jsonValue({ stringUnit: 'binary', maxDepth: 5 });
const JSON_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?(e[+-][0-9]+)?$/;

describe('canonicalJson', () => {
  describe('when given the RFC 8785 Appendix B number samples', () => {
    const serializable = appendixBNumberSamples.filter((row) => row.expected !== null);
    const refused = appendixBNumberSamples.filter((row) => row.expected === null);

    it.each(serializable)('writes $ieee754 as $expected ($note)', ({ ieee754, expected }) => {
      const value = doubleFromHex(ieee754);
      expect(canonicalJson(value)).toBe(expected);
      expect(canonicalJson([value])).toBe(`[${expected}]`);
    });

    it.each(refused)('refuses $ieee754 ($note) with NON_FINITE_NUMBER', ({ ieee754 }) => {
      expect(refusalOf(doubleFromHex(ieee754))).toMatchObject({ code: 'NON_FINITE_NUMBER', path: '' });
    });

    it('covers the whole table (26 rows, 2 of them refused)', () => {
      expect([serializable.length, refused.length]).toEqual([24, 2]);
    });
  });

  describe('when given the cyberphone ES6 number sample lines', () => {
    it.each(cyberphoneNumberLines)('writes %s', (line) => {
      const [hex, expected] = line.split(',') as [string, string];
      expect(canonicalJson(doubleFromHex(hex.padStart(16, '0')))).toBe(expected);
    });
  });

  describe('when given the RFC 8785 §3.2.2 example', () => {
    it('writes the canonical text the RFC gives', () => {
      expect(canonicalJson(JSON.parse(primitivesExample.input))).toBe(primitivesExample.expected);
    });

    it('produces the UTF-8 bytes of §3.2.4', () => {
      const bytes = new TextEncoder().encode(canonicalJson(JSON.parse(primitivesExample.input)));
      const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
      expect(hex).toBe(primitivesExample.utf8Hex);
    });
  });

  describe('when given the RFC 8785 §3.2.3 sorting example', () => {
    it('orders the properties as the RFC does', () => {
      const text = canonicalJson(JSON.parse(sortingExample.input));
      // Read the order from the text: JSON.parse would enumerate the integer-like key "1" first.
      const positions = sortingExample.expectedValueOrder.map((value) => text.indexOf(`"${value}"`));
      expect(positions.every((position, i) => position > (positions[i - 1] ?? 0))).toBe(true);
      expect(text).toBe(
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
      );
    });

    it('puts the astral-plane key before U+FB33, unlike code point order', () => {
      const text = canonicalJson({ '\ufb33': 1, '\u{1f600}': 2 });
      expect(text).toBe('{"😀":2,"\ufb33":1}');
      // Sorting by code point would have put U+FB33 (64307) first: this is the case that tells the two apart.
      expect('\u{1f600}'.codePointAt(0)).toBeGreaterThan(0xfb33);
    });
  });

  describe('when given the cyberphone/json-canonicalization testdata', () => {
    it.each(cyberphoneCases)('canonicalizes $name as the reference output', ({ input, expected }) => {
      expect(canonicalJson(JSON.parse(input))).toBe(expected);
    });
  });

  describe('when given numbers', () => {
    it('writes -0 as 0', () => {
      expect(canonicalJson(-0)).toBe('0');
      expect(canonicalJson({ a: [-0] })).toBe('{"a":[0]}');
    });

    it('switches to exponent form exactly at 1e21', () => {
      expect(canonicalJson(1e21)).toBe('1e+21');
      expect(canonicalJson(-1e21)).toBe('-1e+21');
      expect(canonicalJson(999999999999999900000)).toBe('999999999999999900000');
      expect(canonicalJson(1e21 - 131072)).toBe('999999999999999900000');
      expect(canonicalJson(1e20)).toBe('100000000000000000000');
    });

    it('switches to exponent form below 1e-6', () => {
      expect(canonicalJson(1e-6)).toBe('0.000001');
      expect(canonicalJson(1e-7)).toBe('1e-7');
      expect(canonicalJson(1.5e-7)).toBe('1.5e-7');
      expect(canonicalJson(0.1 + 0.2)).toBe('0.30000000000000004');
    });

    it('writes integers beyond 2^53 as their double', () => {
      expect(canonicalJson(2 ** 53 + 2)).toBe('9007199254740994');
      expect(canonicalJson(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    });

    it('writes every finite double as the shortest JSON number that reads back to it', () => {
      fc.assert(
        fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
          const text = canonicalJson(value);
          expect(text).toMatch(JSON_NUMBER);
          expect(Number(text)).toBe(Object.is(value, -0) ? 0 : value);
          const magnitude = Math.abs(value);
          expect(text.includes('e')).toBe(magnitude >= 1e21 || (magnitude < 1e-6 && magnitude !== 0));
          // Shortest: one significant digit fewer no longer reads back to the same double.
          const digits = text.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '');
          const significant = digits.replace(/0+$/, '').length;
          if (significant > 1) expect(Number(value.toPrecision(significant - 1))).not.toBe(value);
        }),
      );
    });
  });

  describe('when given strings', () => {
    it('escapes every control character as RFC 8785 §3.2.2.2 says, and nothing else', () => {
      for (let unit = 0; unit < 0x20; unit++) {
        const char = String.fromCharCode(unit);
        expect(canonicalJson(char)).toBe(modelString(char));
      }
      expect(canonicalJson('\b\t\n\f\r')).toBe('"\\b\\t\\n\\f\\r"');
      expect(canonicalJson('\u0000\u000f\u001f')).toBe('"\\u0000\\u000f\\u001f"');
    });

    it('leaves /, DEL, U+2028, U+2029 and non-ASCII characters as they are', () => {
      expect(canonicalJson('/\u007f\u2028\u2029é€😀')).toBe('"/\u007f\u2028\u2029é€😀"');
    });

    it('escapes the quote and the backslash', () => {
      expect(canonicalJson('say "hi" \\ bye')).toBe('"say \\"hi\\" \\\\ bye"');
    });

    it('keeps surrogate pairs, which are not lone surrogates', () => {
      expect(canonicalJson('\ud83d\ude00')).toBe('"😀"');
    });

    it('escapes any string as the RFC rule does and reads back to it', () => {
      fc.assert(
        fc.property(fc.string({ unit: 'binary' }), (value) => {
          const text = canonicalJson(value);
          expect(text).toBe(modelString(value));
          expect(JSON.parse(text)).toBe(value);
        }),
      );
    });
  });

  describe('when sorting keys', () => {
    it('compares UTF-16 code units, not locale or numeric order', () => {
      expect(canonicalJson({ b: 1, a: 2, B: 3, '10': 4, '9': 5, '': 6, é: 7, e: 8 })).toBe(
        '{"":6,"10":4,"9":5,"B":3,"a":2,"b":1,"e":8,"é":7}',
      );
    });

    it('sorts the raw key, not its escaped form', () => {
      // "\n" (0x0a) sorts before "!" (0x21), although its escape "\\n" would sort after.
      expect(canonicalJson({ '!': 1, '\n': 2 })).toBe('{"\\n":2,"!":1}');
    });

    it('sorts at every level but keeps array order', () => {
      expect(canonicalJson({ z: [{ y: 1, x: 2 }, 3, 1], a: { d: { c: 1, b: 2 } } })).toBe(
        '{"a":{"d":{"b":2,"c":1}},"z":[{"x":2,"y":1},3,1]}',
      );
    });

    it('orders any set of keys by code units', () => {
      fc.assert(
        fc.property(fc.dictionary(fc.string({ unit: 'binary' }), fc.integer()), (object) => {
          expect(canonicalJson(object)).toBe(modelJcs(object));
        }),
      );
    });
  });

  describe('when an object has an own "__proto__" key', () => {
    it('serializes it as data, as JSON.parse built it', () => {
      const parsed: unknown = JSON.parse('{"b":2,"__proto__":{"x":1}}');
      expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":1},"b":2}');
    });

    it('serializes it from Object.fromEntries and from a null-prototype object', () => {
      expect(canonicalJson(Object.fromEntries([['__proto__', [1]]]))).toBe('{"__proto__":[1]}');
      const bare = Object.create(null) as Record<string, unknown>;
      Reflect.set(bare, '__proto__', 'plain data');
      expect(canonicalJson(bare)).toBe('{"__proto__":"plain data"}');
    });

    it('refuses an object with a prototype of its own, rather than dropping what it inherits', () => {
      const inherited: object = Object.setPrototypeOf({ own: 1 }, { inherited: 2 });
      expect(refusalOf({ a: inherited })).toEqual({
        name: 'AuditError',
        code: 'NOT_PLAIN_OBJECT',
        path: '/a',
      });
    });
  });

  describe('when given empty and scalar values', () => {
    it.each([
      [{}, '{}'],
      [[], '[]'],
      [[[], {}], '[[],{}]'],
      [{ a: {}, b: [] }, '{"a":{},"b":[]}'],
      ['', '""'],
      [null, 'null'],
      [true, 'true'],
      [false, 'false'],
      [0, '0'],
      [Object.create(null), '{}'],
    ])('writes %j as %s', (value, expected) => {
      expect(canonicalJson(value)).toBe(expected);
    });

    it('writes an empty key', () => {
      expect(canonicalJson({ '': '' })).toBe('{"":""}');
    });
  });

  describe('when given deep nesting', () => {
    // The walk keeps its own stack, so depth is bounded by memory, not by the call stack:
    // whatever JSON.parse can build (it is iterative too) canonicalizes.
    function nestedArrays(depth: number): unknown {
      let value: unknown = 0;
      for (let i = 0; i < depth; i++) value = [value];
      return value;
    }

    it('writes 1000 nested arrays and objects', () => {
      let object: unknown = null;
      for (let i = 0; i < 1000; i++) object = { a: object };
      expect(canonicalJson(object)).toBe(`${'{"a":'.repeat(1000)}null${'}'.repeat(1000)}`);
      expect(canonicalJson(nestedArrays(1000))).toBe(`${'['.repeat(1000)}0${']'.repeat(1000)}`);
    });

    it('writes 100000 nested arrays without overflowing the call stack', () => {
      const text = canonicalJson(nestedArrays(100_000));
      expect(text).toBe(`${'['.repeat(100_000)}0${']'.repeat(100_000)}`);
      expect(canonicalJson(JSON.parse(text))).toBe(text);
    });

    it('names the full path of a refusal 1000 levels down', () => {
      let object: unknown;
      for (let i = 0; i < 1000; i++) object = { a: object };
      expect(refusalOf(object)).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/a'.repeat(1000) });
    });
  });

  describe('when given values JSON cannot carry', () => {
    it.each([
      ['undefined', undefined, 'NOT_JSON_VALUE'],
      ['a function', () => 1, 'NOT_JSON_VALUE'],
      ['a symbol', Symbol('s'), 'NOT_JSON_VALUE'],
      ['a BigInt', 10n, 'NOT_JSON_VALUE'],
      ['NaN', Number.NaN, 'NON_FINITE_NUMBER'],
      ['Infinity', Number.POSITIVE_INFINITY, 'NON_FINITE_NUMBER'],
      ['-Infinity', Number.NEGATIVE_INFINITY, 'NON_FINITE_NUMBER'],
      ['a lone high surrogate', '\ud800', 'LONE_SURROGATE'],
      ['a lone low surrogate', 'a\udc00b', 'LONE_SURROGATE'],
      ['a reversed surrogate pair', '\ude00\ud83d', 'LONE_SURROGATE'],
      ['a high surrogate at the end', 'ok\udbff', 'LONE_SURROGATE'],
    ])('refuses %s at the root, in an object and in an array', (_, value, code) => {
      expect(refusalOf(value)).toEqual({ name: 'AuditError', code, path: '' });
      expect(refusalOf({ ok: 1, bad: value })).toEqual({ name: 'AuditError', code, path: '/bad' });
      expect(refusalOf([0, 1, value])).toEqual({ name: 'AuditError', code, path: '/2' });
    });

    it('refuses a lone surrogate in a key, at that key', () => {
      expect(refusalOf({ x: { 'k\ud800': 1 } })).toMatchObject({
        code: 'LONE_SURROGATE',
        path: '/x/k\ud800',
      });
    });

    it('refuses a symbol key, even a non-enumerable one', () => {
      expect(refusalOf({ a: { [Symbol('s')]: 1 } })).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/a' });
      const hidden = Object.defineProperty({}, Symbol('h'), { value: 1, enumerable: false });
      expect(refusalOf([hidden])).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/0' });
      expect(refusalOf(Object.assign([1], { [Symbol('s')]: 1 }))).toMatchObject({
        code: 'NOT_JSON_VALUE',
        path: '',
      });
    });

    it('refuses a hole in a sparse array, at the hole', () => {
      // biome-ignore lint/suspicious/noSparseArray: the hole is what this test is about
      expect(refusalOf({ list: [1, , 3] })).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/list/1' });
      expect(refusalOf(new Array(2))).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/0' });
    });

    it('does not fill a hole from a polluted Array.prototype', () => {
      // A hole reads through the prototype chain: only own elements are data.
      Object.defineProperty(Array.prototype, '1', { value: 'injected', writable: true, configurable: true });
      try {
        // biome-ignore lint/suspicious/noSparseArray: the hole is what this test is about
        expect(refusalOf([1, , 3])).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/1' });
      } finally {
        delete (Array.prototype as unknown as Record<string, unknown>)['1'];
      }
      expect(Object.hasOwn(Array.prototype, '1')).toBe(false);
    });

    it('escapes ~ and / in the path as RFC 6901 says', () => {
      expect(refusalOf({ 'a/b': { 'm~n': [0, undefined] } })).toMatchObject({
        code: 'NOT_JSON_VALUE',
        path: '/a~1b/m~0n/1',
      });
    });

    it('points at the refused value wherever it is nested', () => {
      const segment = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 4 }),
        fc.string({ unit: fc.constantFrom('~', '/', '0', '1', 'a'), maxLength: 4 }),
        fc.nat(3),
      );
      const bad = fc.constantFrom<[unknown, string]>(
        [undefined, 'NOT_JSON_VALUE'],
        [10n, 'NOT_JSON_VALUE'],
        [() => 0, 'NOT_JSON_VALUE'],
        [Number.NaN, 'NON_FINITE_NUMBER'],
        [Number.NEGATIVE_INFINITY, 'NON_FINITE_NUMBER'],
        ['\udc00', 'LONE_SURROGATE'],
        [new Date(0), 'NOT_PLAIN_OBJECT'],
        [new Map(), 'NOT_PLAIN_OBJECT'],
      );
      fc.assert(
        fc.property(
          fc.array(segment, { maxLength: 6 }),
          bad,
          fc.array(anyJson, { maxLength: 3 }),
          (path, [value, code], fill) => {
            // Build the container chain from the inside out, with valid JSON siblings around the bad value.
            let node: unknown = value;
            for (const step of [...path].reverse()) {
              if (typeof step === 'number') {
                node = [
                  ...fill.slice(0, step),
                  ...Array.from({ length: Math.max(0, step - fill.length) }, () => null),
                  node,
                  ...fill,
                ];
              } else {
                node = Object.fromEntries([
                  ...fill.map((v, i) => [`${step}.${i}`, v] as const),
                  [step, node],
                ]);
              }
            }
            expect(refusalOf(node)).toEqual({ name: 'AuditError', code, path: pointer(path) });
          },
        ),
      );
    });
  });

  describe('when given a cycle', () => {
    it('refuses an object that contains itself, at the repeated reference', () => {
      const node: Record<string, unknown> = { a: [{}] };
      (node.a as Record<string, unknown>[])[0]!.back = node;
      expect(refusalOf(node)).toEqual({ name: 'AuditError', code: 'CYCLE', path: '/a/0/back' });
    });

    it('refuses an array that contains itself', () => {
      const list: unknown[] = [1];
      list.push(list);
      expect(refusalOf(list)).toMatchObject({ code: 'CYCLE', path: '/1' });
    });

    it('accepts the same object twice when it is not its own ancestor', () => {
      const shared = { v: 1 };
      expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"v":1},"b":[{"v":1},{"v":1}]}');
    });
  });

  describe('when given objects that are not plain JSON data', () => {
    class Point {
      x = 1;
    }
    class Tagged extends Array<number> {}

    it.each([
      ['a Date', new Date(0)],
      ['a Map', new Map([['a', 1]])],
      ['a Set', new Set([1])],
      ['a RegExp', /x/],
      ['an Error', new Error('x')],
      ['a class instance', new Point()],
      ['a Uint8Array', new Uint8Array([1])],
      ['a boxed string', Object('s')],
      ['a promise', Promise.resolve(1)],
      // What async hooks and tracing libraries hang on promises they track.
      ['a promise tagged with a symbol key', Object.assign(Promise.resolve(1), { [Symbol('async_id')]: 7 })],
      ['an array subclass', Tagged.from([1])],
      ['an array with named properties', Object.assign([1, 2], { note: 'dropped by JSON.stringify' })],
      ['an object with an inherited prototype', Object.create({ inherited: 1 })],
      ['an object whose prototype has no constructor', Object.create(Object.create(null))],
    ])('refuses %s with NOT_PLAIN_OBJECT and its path', (_, value) => {
      expect(refusalOf(value)).toEqual({ name: 'AuditError', code: 'NOT_PLAIN_OBJECT', path: '' });
      expect(refusalOf({ k: [value] })).toEqual({
        name: 'AuditError',
        code: 'NOT_PLAIN_OBJECT',
        path: '/k/0',
      });
    });

    it('refuses the named properties of a RegExp match array', () => {
      expect(refusalOf({ m: /b/.exec('abc') })).toMatchObject({ code: 'NOT_PLAIN_OBJECT', path: '/m' });
    });

    it('never calls toJSON: a Date is refused, not converted', () => {
      const date = new Date(0);
      const toJSON = vi.spyOn(date, 'toJSON');
      expect(refusalOf({ at: date })).toMatchObject({ code: 'NOT_PLAIN_OBJECT', path: '/at' });
      expect(toJSON).not.toHaveBeenCalled();
    });

    it('never calls toJSON: a plain object holding one is refused at the function', () => {
      const toJSON = vi.fn(() => 'converted');
      expect(refusalOf({ a: { toJSON, b: 1 } })).toMatchObject({ code: 'NOT_JSON_VALUE', path: '/a/toJSON' });
      expect(toJSON).not.toHaveBeenCalled();
    });

    it('treats a toJSON key that is plain data as data', () => {
      expect(canonicalJson({ toJSON: 'not a function' })).toBe('{"toJSON":"not a function"}');
    });
  });

  describe('when given arbitrary JSON values', () => {
    it('writes what an independent model of RFC 8785 writes', () => {
      fc.assert(
        fc.property(anyJson, (value) => {
          expect(canonicalJson(value)).toBe(modelJcs(value));
        }),
      );
    });

    it('parses back to an equal value', () => {
      fc.assert(
        fc.property(anyJson, (value) => {
          expect(JSON.parse(canonicalJson(value))).toEqual(withoutMinusZero(value));
        }),
      );
    });

    it('does not depend on the order keys were inserted in', () => {
      fc.assert(
        fc.property(anyJson, fc.integer(), (value, seed) => {
          const shuffled = shuffleKeysDeep(value, seededRandom(seed));
          expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        }),
      );
    });

    it('is idempotent through JSON.parse', () => {
      fc.assert(
        fc.property(anyJson, (value) => {
          const text = canonicalJson(value);
          expect(canonicalJson(JSON.parse(text))).toBe(text);
        }),
      );
    });

    it('has no whitespace outside strings', () => {
      fc.assert(
        fc.property(anyJson, (value) => {
          const outsideStrings = canonicalJson(value).replace(/"(?:[^"\\]|\\.)*"/g, '""');
          expect(outsideStrings).not.toMatch(/\s/);
        }),
      );
    });
  });
});
