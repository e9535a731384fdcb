import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBase64, encodeBase64 } from './base64';

// Node's Buffer is the independent implementation these are checked against; the module
// itself must not use it, because @vouch/audit also runs in browsers.

describe('encodeBase64', () => {
  describe('when given any bytes', () => {
    it('matches Buffer base64', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
          expect(encodeBase64(bytes)).toBe(Buffer.from(bytes).toString('base64'));
        }),
      );
    });
  });

  describe('when given the RFC 4648 §10 test vectors', () => {
    it.each([
      ['', ''],
      ['f', 'Zg=='],
      ['fo', 'Zm8='],
      ['foo', 'Zm9v'],
      ['foob', 'Zm9vYg=='],
      ['fooba', 'Zm9vYmE='],
      ['foobar', 'Zm9vYmFy'],
    ])('encodes %j as %s', (text, encoded) => {
      expect(encodeBase64(new TextEncoder().encode(text))).toBe(encoded);
    });
  });
});

describe('decodeBase64', () => {
  describe('when given canonical base64', () => {
    it('returns the bytes that were encoded', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 70 }), (bytes) => {
          expect(decodeBase64(Buffer.from(bytes).toString('base64'))).toEqual(bytes);
        }),
      );
    });
  });

  describe('when the text is not exactly what encodeBase64 gives', () => {
    it.each([
      ['a length that is not a multiple of 4', 'Zm9'],
      ['missing padding', 'Zg'],
      ['a character outside the alphabet', 'Zm9-'],
      ['URL-safe characters', 'Zm9_'],
      ['a non-ASCII character', 'Zm9é'],
      ['whitespace', 'Zm9v\nYmFy'],
      ['padding in the middle', 'Zg==Zm9v'],
      ['three padding characters', 'Z==='],
      ['all padding', '===='],
      ['non-zero bits after one byte', 'Zh=='],
      ['non-zero bits after two bytes', 'Zm9='],
    ])('returns undefined for %s', (_, text) => {
      expect(decodeBase64(text)).toBeUndefined();
    });
  });
});
