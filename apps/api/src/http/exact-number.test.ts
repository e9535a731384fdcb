import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inexactNumberReason } from './exact-number';

const exact = (literal: string) => inexactNumberReason(literal) === undefined;

// Any finite double within the safe range, written the way canonical JSON writes it.
const safeDouble = fc
  .double({
    noNaN: true,
    noDefaultInfinity: true,
    min: -Number.MAX_SAFE_INTEGER,
    max: Number.MAX_SAFE_INTEGER,
  })
  .filter((d) => Number.isFinite(d));

/** `String(d)` rewritten without an exponent, e.g. `1.5e-7` -> `0.00000015`. */
function plainDecimal(d: number): string {
  const text = String(Math.abs(d));
  const [mantissa = '', exp = '0'] = text.split('e');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = whole + fraction;
  const point = whole.length + Number(exp);
  const body =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + '0'.repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (d < 0 ? '-' : '') + body;
}

describe('inexactNumberReason', () => {
  describe('when the literal is what canonical JSON would write', () => {
    it('accepts every double in the safe range, in either notation', () => {
      fc.assert(
        fc.property(safeDouble, (d) => {
          expect(exact(String(d))).toBe(true);
          expect(exact(plainDecimal(d))).toBe(true);
        }),
      );
    });
  });

  describe('when the literal spells the same value differently', () => {
    it('accepts trailing zeros and shifted exponents', () => {
      fc.assert(
        fc.property(safeDouble, fc.nat(5), fc.integer({ min: -5, max: 5 }), (d, zeros, shift) => {
          const plain = plainDecimal(d);
          const withZeros = plain.includes('.')
            ? plain + '0'.repeat(zeros)
            : `${plain}.${'0'.repeat(zeros + 1)}`;
          expect(exact(withZeros)).toBe(true);
          // Move the decimal point by `shift` and compensate in the exponent: same value.
          const [sign, digits, point] = [
            d < 0 ? '-' : '',
            plain.replace(/^-/, '').replace('.', ''),
            plain.replace(/^-/, '').indexOf('.'),
          ];
          const at = point === -1 ? digits.length : point;
          const moved = at + shift;
          if (moved < 1 || moved > digits.length) return;
          const mantissa =
            moved === digits.length ? digits : `${digits.slice(0, moved)}.${digits.slice(moved)}`;
          expect(exact(`${sign}${mantissa}e${-shift}`)).toBe(true);
        }),
      );
    });

    it.each(['1.50', '1e2', '100', '0.1', '-0', '0e999999', '-0.000', '5E-324', '9007199254740.991e3'])(
      'accepts %s',
      (literal) => {
        expect(exact(literal)).toBe(true);
      },
    );
  });

  describe('when the literal has more precision than a double', () => {
    it('refuses it, whatever double it rounds to', () => {
      // A non-zero digit past the 17th significant digit: no double's shortest form has it.
      // (After 0 the digit would be the first significant one, so 0 is left out.)
      fc.assert(
        fc.property(
          safeDouble.filter((d) => d !== 0),
          fc.integer({ min: 1, max: 9 }),
          (d, last) => {
            const plain = plainDecimal(d);
            const extended = `${plain}${plain.includes('.') ? '' : '.'}${'0'.repeat(20)}${last}`;
            expect(exact(extended)).toBe(false);
          },
        ),
      );
    });

    it.each(['1.0000000000000001', '0.30000000000000001', '1e-400', '-1e-400', '2.4703282292062328e-324'])(
      'refuses %s',
      (literal) => {
        expect(exact(literal)).toBe(false);
      },
    );
  });

  describe('when the magnitude is beyond 2^53 - 1', () => {
    it('refuses every integer there and accepts every one below', () => {
      const limit = BigInt(Number.MAX_SAFE_INTEGER);
      fc.assert(
        fc.property(fc.bigInt({ min: -(limit * 4n), max: limit * 4n }), (n) => {
          const abs = n < 0n ? -n : n;
          expect(exact(String(n))).toBe(abs <= limit);
        }),
      );
    });

    it.each(['9007199254740993', '9007199254740992', '-9007199254740992', '1e16', '1e400', '-1e400'])(
      'refuses %s',
      (literal) => {
        expect(exact(literal)).toBe(false);
      },
    );

    it.each(['9007199254740991', '-9007199254740991'])('accepts %s', (literal) => {
      expect(exact(literal)).toBe(true);
    });
  });
});
