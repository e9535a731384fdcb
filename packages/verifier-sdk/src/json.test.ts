import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findJsonIssue, frozenCopy } from './json';

describe('findJsonIssue', () => {
  describe('when the value is plain JSON', () => {
    it('finds nothing', () => {
      fc.assert(
        fc.property(fc.jsonValue(), (value) => {
          expect(findJsonIssue(value)).toBeNull();
        }),
      );
    });
  });

  describe('when the value holds something JSON cannot carry', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    it.each([
      ['undefined', { a: undefined }, 'NOT_JSON_VALUE', '/a'],
      ['NaN', [1, Number.NaN], 'NON_FINITE_NUMBER', '/1'],
      ['Infinity', { n: Number.POSITIVE_INFINITY }, 'NON_FINITE_NUMBER', '/n'],
      ['a BigInt', { n: 1n }, 'NOT_JSON_VALUE', '/n'],
      ['a function', { f: () => 1 }, 'NOT_JSON_VALUE', '/f'],
      ['a lone surrogate', { s: 'a\uD800' }, 'LONE_SURROGATE', '/s'],
      ['a lone surrogate in a key', { 'k\uDC00': 1 }, 'LONE_SURROGATE', '/k\uDC00'],
      ['a Date', { at: new Date(0) }, 'NOT_PLAIN_OBJECT', '/at'],
      ['a Map', { m: new Map() }, 'NOT_PLAIN_OBJECT', '/m'],
      // biome-ignore lint/suspicious/noSparseArray: the hole is the point of this case
      ['a sparse array', { a: [1, , 3] }, 'NOT_JSON_VALUE', '/a/1'],
      ['a cycle', cycle, 'CYCLE', '/self'],
      ['a symbol key', { [Symbol('s')]: 1 }, 'NOT_JSON_VALUE', ''],
      ['an escaped pointer', { 'a/b': { '~': undefined } }, 'NOT_JSON_VALUE', '/a~1b/~0'],
    ])('reports %s with its code and path', (_label, value, code, path) => {
      expect(findJsonIssue(value)).toMatchObject({ code, path });
    });
  });

  describe('when the same object appears twice without a cycle', () => {
    it('finds nothing', () => {
      const shared = { a: 1 };
      expect(findJsonIssue({ x: shared, y: [shared] })).toBeNull();
    });
  });
});

describe('frozenCopy', () => {
  describe('when given nested JSON', () => {
    it('returns an equal copy that cannot be changed at any depth', () => {
      const original = { a: { b: [1, { c: 2 }] } };
      const copy = frozenCopy(original);
      expect(copy).toEqual(original);
      expect(copy).not.toBe(original);
      expect(() => {
        (copy.a.b[1] as { c: number }).c = 3;
      }).toThrow(TypeError);
    });
  });
});
