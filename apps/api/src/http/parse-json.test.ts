import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from './parse-json';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

// JSON values the parser must accept: JSON.stringify writes U+0000 and lone surrogates as
// escapes, and those two are refused on purpose (tested below), as are magnitudes past
// 2^53 - 1 (exact-number.test.ts).
const storable = fc
  .jsonValue({ maxDepth: 5, noUnicodeString: false })
  .filter((value) => !/\\u0000|\\ud[89a-f]/i.test(JSON.stringify(value)) && numbersAreSafe(value));

function numbersAreSafe(value: unknown): boolean {
  if (typeof value === 'number') return Math.abs(value) <= Number.MAX_SAFE_INTEGER;
  if (value === null || typeof value !== 'object') return true;
  return Object.values(value).every(numbersAreSafe);
}

describe('parseJsonBody', () => {
  describe('when the text is well-formed JSON within the limits', () => {
    it('returns what JSON.parse returns', () => {
      fc.assert(
        fc.property(storable, (value) => {
          const text = JSON.stringify(value);
          // fast-check may produce -0, which JSON.stringify writes as 0.
          expect(parseJsonBody(text, { maxDepth: 10 })).toEqual(JSON.parse(text));
        }),
      );
    });

    it('keeps numbers that canonical JSON carries exactly, in any spelling', () => {
      const text = '{"a":1.50,"b":1e2,"c":-0.1,"d":9007199254740991,"e":"9007199254740993"}';
      expect(parseJsonBody(text, { maxDepth: 2 })).toEqual(JSON.parse(text));
    });

    it('ignores brackets, quotes and keys inside strings', () => {
      const text = '{"a":"[[[[{{{{","b":"\\"a\\":1,\\"a\\":2","c":["a","a"]}';
      expect(parseJsonBody(text, { maxDepth: 2 })).toEqual(JSON.parse(text));
    });

    it('allows the same key in different objects', () => {
      const text = '{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":1}]}';
      expect(parseJsonBody(text, { maxDepth: 3 })).toEqual(JSON.parse(text));
    });
  });

  describe('when the text is refused', () => {
    it.each([
      ['[[[]]]', 2, 'NESTING_TOO_DEEP'],
      ['{"a":{"b":{}}}', 2, 'NESTING_TOO_DEEP'],
      ['{"a":1,"a":1}', 5, 'DUPLICATE_KEY'],
      ['{"x":{"a":1,"b":2,"a":3}}', 5, 'DUPLICATE_KEY'],
      ['{"a":1,"\\u0061":2}', 5, 'DUPLICATE_KEY'],
      ['{"a":1,}', 5, 'MALFORMED_JSON'],
      ["{'a':1}", 5, 'MALFORMED_JSON'],
      ['', 5, 'MALFORMED_JSON'],
      ['[1e400]', 5, 'NUMBER_NOT_EXACT'],
      ['9007199254740993', 5, 'NUMBER_NOT_EXACT'],
      ['"\\udc00"', 5, 'LONE_SURROGATE'],
      ['{"k":["a\\uD8FF"]}', 5, 'LONE_SURROGATE'],
      // Raw, as text that was not decoded from UTF-8 can hold it.
      ['{"k":"a\ud800"}', 5, 'LONE_SURROGATE'],
      ['{"k":"\\\\u0000","n":"\\u0000"}', 5, 'NUL_CHARACTER'],
      ['{"\\u0000":1}', 5, 'NUL_CHARACTER'],
      ['["ok","a\\u0000"]', 5, 'NUL_CHARACTER'],
    ])('refuses %s (depth %i) with %s', (text, maxDepth, code) => {
      expect(codeOf(() => parseJsonBody(text, { maxDepth }))).toBe(code);
    });

    it.each([
      ['{"arguments":{"amount":9007199254740993}}', '/arguments/amount'],
      ['{"a":[1,2,{"b":1e-400}]}', '/a/2/b'],
      ['{"x":"1e-400","a/b":{"~":[0.1,1.0000000000000001]}}', '/a~1b/~0/1'],
      ['{"\\u0061":[[],{"k":"v"},-1e400]}', '/a/2'],
      ['1.0000000000000001', ''],
    ])('refuses an inexact number in %s with its JSON Pointer', (text, path) => {
      let error: unknown;
      try {
        parseJsonBody(text, { maxDepth: 5 });
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({ code: 'NUMBER_NOT_EXACT', details: { path } });
    });

    it('reports malformed JSON before an inexact number', () => {
      expect(codeOf(() => parseJsonBody('[9007199254740993,', { maxDepth: 5 }))).toBe('MALFORMED_JSON');
    });

    it('refuses deep nesting before parsing it', () => {
      const text = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
      expect(codeOf(() => parseJsonBody(text, { maxDepth: 32 }))).toBe('NESTING_TOO_DEEP');
    });
  });
});
