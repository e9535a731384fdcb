import { describe, expect, it } from 'vitest';
import { canonicalByteLength, canonicalText } from './canonical-text';

describe('canonicalText', () => {
  describe('when two objects hold the same members in another order', () => {
    it('gives the same text', () => {
      expect(canonicalText({ b: [1, { d: 'x', c: null }], a: true })).toBe(
        canonicalText({ a: true, b: [1, { c: null, d: 'x' }] }),
      );
      expect(canonicalText({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    });
  });

  describe('when values differ', () => {
    it('gives different text', () => {
      expect(canonicalText({ id: 'a' })).not.toBe(canonicalText({ id: 'b' }));
    });
  });
});

describe('canonicalByteLength', () => {
  it('counts UTF-8 bytes, not UTF-16 units', () => {
    expect(canonicalByteLength('é')).toBe(4); // "é" in quotes: 1 + 2 + 1
  });
});
