import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/** SHA-256 in pure JS (@noble/hashes): for browsers and runtimes without node:crypto. */
export function sha256(data: Uint8Array | string): Uint8Array {
  return nobleSha256(typeof data === 'string' ? utf8ToBytes(data) : data);
}

/** SHA-256 of the UTF-8 bytes (or raw bytes) as lowercase hex. */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(sha256(data));
}

export const sha256Implementation = '@noble/hashes' as const;
