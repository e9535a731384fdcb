import { hexToBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeHex64Into, isHex64 } from './hex64';

const HEX64 = /^[0-9a-f]{64}$/;
/** Strings near 64 hex digits: the right length from digits, upper case, neighbours of the digit ranges and wide chars. */
const nearHex = fc.string({
  unit: fc.constantFrom(
    '0',
    '9',
    'a',
    'f',
    '/',
    ':',
    '`',
    'g',
    'A',
    'F',
    '\u0130',
    '\u0161',
    '\u0230',
    '\ud800',
  ),
  minLength: 62,
  maxLength: 66,
});

describe('isHex64', () => {
  it('accepts exactly what /^[0-9a-f]{64}$/ matches', () => {
    fc.assert(
      fc.property(fc.oneof(nearHex, fc.string({ unit: 'binary' })), (text) => {
        expect(isHex64(text)).toBe(HEX64.test(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses a char whose low byte is a hex digit', () => {
    // U+0161 and U+0130 end in 0x61 ('a') and 0x30 ('0').
    expect(isHex64(`${'0'.repeat(63)}\u0161`)).toBe(false);
    expect(isHex64(`\u0130${'0'.repeat(63)}`)).toBe(false);
    expect(isHex64('0'.repeat(64))).toBe(true);
  });
});

describe('decodeHex64Into', () => {
  it('gives the bytes hexToBytes gives', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const hex = Buffer.from(bytes).toString('hex');
        const out = new Uint8Array(32);
        decodeHex64Into(hex, out);
        expect(out).toEqual(hexToBytes(hex));
      }),
    );
  });
});
