// Standard base64 (RFC 4648 §4, with padding), written out here rather than taken from
// atob/btoa or Buffer: those differ between runtimes in what they tolerate (whitespace,
// missing padding, non-zero trailing bits), and a verifier must accept exactly one
// spelling of each byte string so that a signed text cannot be re-encoded around a check.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

const VALUES: Int8Array = (() => {
  const values = new Int8Array(128).fill(-1);
  for (let i = 0; i < ALPHABET.length; i++) values[ALPHABET.charCodeAt(i)] = i;
  return values;
})();

/** Bytes as standard base64 with padding (RFC 4648 §4). */
export function encodeBase64(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}==`;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += `${ALPHABET[n >> 18]!}${ALPHABET[(n >> 12) & 63]!}${ALPHABET[(n >> 6) & 63]!}=`;
  }
  return out;
}

/**
 * Decode canonical standard base64, or return `undefined` when `text` is not the exact
 * output `encodeBase64` would give for some bytes (bad length, characters outside the
 * alphabet, missing or misplaced padding, non-zero bits after the last byte).
 */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - padding);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length;
    const a = valueAt(text, i);
    const b = valueAt(text, i + 1);
    const c = last && padding === 2 ? 0 : valueAt(text, i + 2);
    const d = last && padding >= 1 ? 0 : valueAt(text, i + 3);
    if ((a | b | c | d) < 0) return undefined;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    if (last && padding === 2) {
      if ((n & 0xffff) !== 0) return undefined;
      break;
    }
    out[o++] = (n >> 8) & 0xff;
    if (last && padding === 1) {
      if ((n & 0xff) !== 0) return undefined;
      break;
    }
    out[o++] = n & 0xff;
  }
  return out;
}

function valueAt(text: string, i: number): number {
  const code = text.charCodeAt(i);
  return code < 128 ? VALUES[code]! : -1;
}
