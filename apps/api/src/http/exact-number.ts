/**
 * Why a JSON number literal cannot be stored exactly, or undefined when it can.
 *
 * A JSON body becomes JavaScript doubles, and canonical JSON (RFC 8785) writes each double
 * back in its shortest round-trip form (ECMAScript `Number::toString`). A literal is carried
 * exactly when that form has the same decimal value as what the caller wrote: `1.50`, `1e2`
 * and `0.1` are (they come back as `1.5`, `100`, `0.1`); `1.0000000000000001` (comes back
 * as `1`), `1e-400` (as `0`) and `1e400` (no finite double) are not. Beyond ±(2^53 − 1)
 * doubles skip integers, so `9007199254740993` comes back as `9007199254740992`, and even
 * a literal that survives there (`9007199254740992`) stands for several integers a reader
 * in another language may parse differently: every magnitude past 2^53 − 1 is refused, and
 * such values travel as decimal strings.
 *
 * `literal` must be a JSON number token (`-?int frac? exp?`).
 */
export function inexactNumberReason(literal: string): string | undefined {
  // Fast path, taken by nearly every number: up to 15 digits, no fraction or exponent, is
  // always a safe integer and always written back digit for digit.
  if (literal.length <= 16 && /^-?\d{1,15}$/.test(literal)) return undefined;
  const value = Number(literal);
  if (!Number.isFinite(value)) return 'it is too large for a double (it overflows to infinity)';
  if (Math.abs(value) > Number.MAX_SAFE_INTEGER) {
    return 'its magnitude is beyond 2^53 - 1, where doubles cannot tell neighbouring integers apart';
  }
  if (!sameDecimal(decimalOf(literal), decimalOf(String(value)))) {
    return value === 0
      ? 'it is too small for a double (it underflows to 0)'
      : `it has more precision than a double carries (it would be stored as ${String(value)})`;
  }
  return undefined;
}

/** A decimal number as `sign · digits · 10^exponent`, digits without leading or trailing zeros. */
interface Decimal {
  negative: boolean;
  digits: string;
  exponent: number;
}

/** The exact decimal value of a JSON number token or of `String(number)` (`1e+21`, `1.5e-7`). */
function decimalOf(text: string): Decimal {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) throw new TypeError(`not a JSON number: ${text}`);
  const [, sign = '', whole = '', fraction = '', exp = '0'] = match;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  // A huge exponent only ever meets a value that is 0 or non-finite, refused before this.
  let exponent = Number(exp) - fraction.length;
  const trailing = /0*$/.exec(digits)![0].length;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  // Zero has one decimal value whatever its sign or exponent (canonical JSON writes -0 as 0).
  if (digits === '') return { negative: false, digits: '', exponent: 0 };
  return { negative: sign === '-', digits, exponent };
}

function sameDecimal(a: Decimal, b: Decimal): boolean {
  return a.negative === b.negative && a.digits === b.digits && a.exponent === b.exponent;
}
