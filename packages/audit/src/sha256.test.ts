import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as audit from './index';
import * as node from './sha256-node';
import * as portable from './sha256-portable';

// FIPS 180-2, Appendix B.1 ("abc") and B.2 (the 448-bit message); the empty string is the
// well-known digest of zero bytes (NIST CAVP SHA256ShortMsg, Len = 0).
const vectors = [
  { input: 'abc', hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' },
  {
    input: 'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq',
    hex: '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
  },
  { input: '', hex: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
] as const;

const implementations = [
  ['node:crypto', node],
  ['@noble/hashes', portable],
] as const;

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

describe('sha256', () => {
  describe.each(implementations)('when computed by %s', (name, impl) => {
    it.each(vectors)('hashes "$input" to the FIPS 180-2 digest', ({ input, hex: expected }) => {
      expect(impl.sha256Hex(input)).toBe(expected);
      expect(impl.sha256Hex(new TextEncoder().encode(input))).toBe(expected);
      expect(hex(impl.sha256(input))).toBe(expected);
    });

    it('returns 32 bytes as a plain Uint8Array', () => {
      const digest = impl.sha256('abc');
      expect(Object.getPrototypeOf(digest)).toBe(Uint8Array.prototype);
      expect(digest.byteLength).toBe(32);
    });

    it('hashes only the bytes a subarray views', () => {
      const buffer = new TextEncoder().encode('xxabcxx');
      expect(impl.sha256Hex(buffer.subarray(2, 5))).toBe(vectors[0].hex);
    });

    it('names itself', () => {
      expect(impl.sha256Implementation).toBe(name);
    });
  });

  describe('when both implementations hash the same input', () => {
    it('gives identical bytes for any string, astral characters included (as UTF-8)', () => {
      fc.assert(
        fc.property(fc.string({ unit: 'binary' }), (input) => {
          expect(portable.sha256(input)).toEqual(node.sha256(input));
          expect(portable.sha256Hex(input)).toBe(node.sha256Hex(input));
          expect(node.sha256Hex(input)).toBe(node.sha256Hex(new TextEncoder().encode(input)));
        }),
      );
    });

    it('gives identical bytes for any byte array', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 300 }), (input) => {
          expect(portable.sha256(input)).toEqual(node.sha256(input));
          expect(portable.sha256Hex(input)).toBe(node.sha256Hex(input));
        }),
      );
    });

    it('encodes a lone surrogate the same way (U+FFFD), though canonical JSON never holds one', () => {
      expect(portable.sha256Hex('a\ud800')).toBe(node.sha256Hex('a\ufffd'));
      expect(node.sha256Hex('a\ud800')).toBe(node.sha256Hex('a\ufffd'));
    });
  });

  describe('when imported from @vouch/audit under node', () => {
    it('uses node:crypto through the #sha256 imports map', () => {
      expect(audit.sha256Implementation).toBe('node:crypto');
      expect(audit.sha256Hex('abc')).toBe(vectors[0].hex);
    });
  });
});
