// Checking and decoding the 64-digit lowercase hex of a SHA-256 digest: a verifier does this
// three times per event, and a table lookup per char is about three times faster than
// matching /^[0-9a-f]{64}$/.

/** The value of each lowercase hex digit's char code; -1 for every other code below 256. */
const DIGIT_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) DIGIT_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) DIGIT_VALUE[97 + i] = 10 + i;

/** True when `text` is exactly 64 lowercase hex digits (what `/^[0-9a-f]{64}$/` matches). */
export function isHex64(text: string): boolean {
  if (text.length !== 64) return false;
  let invalid = 0;
  for (let i = 0; i < 64; i++) {
    const code = text.charCodeAt(i);
    // A code above 255 makes (255 - code) negative, and so the flag.
    invalid |= DIGIT_VALUE[code & 0xff]! | ((0xff - code) >> 31);
  }
  return invalid >= 0;
}

/** Decode 64 hex digits, checked by the caller with {@link isHex64}, into `out[0..32)`. */
export function decodeHex64Into(hex: string, out: Uint8Array): void {
  for (let i = 0; i < 32; i++) {
    out[i] =
      (DIGIT_VALUE[hex.charCodeAt(2 * i) & 0xff]! << 4) | DIGIT_VALUE[hex.charCodeAt(2 * i + 1) & 0xff]!;
  }
}
