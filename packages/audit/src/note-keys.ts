import { ed25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { decodeBase64, encodeBase64 } from './base64';
import { AuditError } from './errors';
import { sha256 } from './sha256';

// Ed25519 keys for C2SP signed notes (c2sp.org/signed-note), in the text forms of Go's
// golang.org/x/mod/sumdb/note, so keys made here work with the Go tools and back:
//   verifier key: <name>+<8 hex key ID>+<base64(0x01 || 32-byte public key)>
//   signer key:   PRIVATE+KEY+<name>+<8 hex key ID>+<base64(0x01 || 32-byte seed)>
// A malformed key text is an `AuditError` `MALFORMED_CHECKPOINT`: keys are part of the
// checkpoint format, and a key that does not parse cannot verify any checkpoint.

/** Signature type byte of Ed25519 in c2sp.org/signed-note. */
const ED25519 = 0x01;
export const SIGNER_PREFIX = 'PRIVATE+KEY+';
const KEY_ID = /^[0-9a-f]{8}$/;
// Go's unicode.IsSpace plus what JavaScript's \s adds (U+FEFF): refusing more is safe.
const NOT_IN_NAME = /[\s\u0085+]|\p{Surrogate}|\p{Cc}/u;

/** A public key that can check signatures on notes: build one with `parseVerifierKey`. */
export interface NoteVerifier {
  readonly name: string;
  /** First 4 bytes of SHA-256(name || 0x0A || 0x01 || public key), big-endian. */
  readonly keyId: number;
  readonly publicKey: Uint8Array;
  /** Ed25519 (RFC 8032, strict: no malleable or small-order encodings) over the note text bytes. */
  verify(message: Uint8Array, signature: Uint8Array): boolean;
}

/** A private key that signs notes: build one with `parseSignerKey`. Keep its text secret. */
export interface NoteSigner {
  readonly name: string;
  readonly keyId: number;
  readonly publicKey: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

/**
 * True when `name` may name a key: non-empty, without Unicode spaces, `+`, control
 * characters or lone surrogates (c2sp.org/signed-note "Key names").
 */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !NOT_IN_NAME.test(name);
}

/** The key ID of an Ed25519 key: SHA-256(name || 0x0A || 0x01 || public key)[:4] as a big-endian uint32. */
export function noteKeyId(name: string, publicKey: Uint8Array, type = ED25519): number {
  const nameBytes = new TextEncoder().encode(name);
  const input = new Uint8Array(nameBytes.length + 2 + publicKey.length);
  input.set(nameBytes, 0);
  input[nameBytes.length] = 0x0a;
  input[nameBytes.length + 1] = type;
  input.set(publicKey, nameBytes.length + 2);
  return readUint32(sha256(input), 0);
}

/**
 * Generate a new Ed25519 key pair named `name` (for a Vouch log, use the checkpoint origin).
 * `signerKey` is the secret the server signs with; `verifierKey` is what auditors trust.
 *
 * @example
 * const { signerKey, verifierKey } = generateNoteKeys('vouch.example/log/default');
 */
export function generateNoteKeys(name: string): { signerKey: string; verifierKey: string } {
  requireName(name);
  const seed = ed25519.utils.randomSecretKey();
  const publicKey = ed25519.getPublicKey(seed);
  const keyId = hex8(noteKeyId(name, publicKey));
  return {
    signerKey: `${SIGNER_PREFIX}${name}+${keyId}+${encodeBase64(withType(seed))}`,
    verifierKey: `${name}+${keyId}+${encodeBase64(withType(publicKey))}`,
  };
}

/** The verifier key text for an Ed25519 public key: `<name>+<hex key ID>+<base64(0x01 || key)>`. */
export function formatVerifierKey(name: string, publicKey: Uint8Array): string {
  requireName(name);
  if (publicKey.length !== 32) malformed('an Ed25519 public key is 32 bytes');
  return `${name}+${hex8(noteKeyId(name, publicKey))}+${encodeBase64(withType(publicKey))}`;
}

/** Parse a verifier key text; throws `MALFORMED_CHECKPOINT` unless it is well formed and its key ID matches. */
export function parseVerifierKey(text: string): NoteVerifier {
  const [name, keyIdHex, keyData] = splitKey(text);
  const publicKey = keyData;
  const keyId = noteKeyId(name, publicKey);
  if (hex8(keyId) !== keyIdHex) malformed('verifier key ID does not match its name and key');
  // Decode the point once: a key that is not a valid Ed25519 point can verify nothing.
  if (!ed25519.utils.isValidPublicKey(publicKey, false))
    malformed('verifier key is not an Ed25519 public key');
  return {
    name,
    keyId,
    publicKey,
    verify(message, signature) {
      // zip215: false is RFC 8032 verification: non-canonical encodings are refused, so
      // a signature cannot be re-encoded into a second valid one.
      return signature.length === 64 && ed25519.verify(signature, message, publicKey, { zip215: false });
    },
  };
}

/** Parse a signer key text; throws `MALFORMED_CHECKPOINT` unless it is well formed and its key ID matches. */
export function parseSignerKey(text: string): NoteSigner {
  if (!text.startsWith(SIGNER_PREFIX)) malformed(`signer key must start with ${SIGNER_PREFIX}`);
  const [name, keyIdHex, seed] = splitKey(text.slice(SIGNER_PREFIX.length));
  // The key ID names the public key, which only exists once derived from the seed.
  const publicKey = ed25519.getPublicKey(seed);
  const keyId = noteKeyId(name, publicKey);
  if (hex8(keyId) !== keyIdHex) malformed('signer key ID does not match its name and key');
  return { name, keyId, publicKey, sign: (message) => ed25519.sign(message, seed) };
}

/** Domain separation of {@link deriveSignerKey}: a derived seed can be nothing but a Vouch log key. */
const DERIVATION_SALT = new TextEncoder().encode('vouch/log-signing-key/v1');

/**
 * A signer key named `name`, derived from the signer key `masterKey` (HKDF-SHA256, RFC 5869:
 * the master's Ed25519 seed as input keying material, a fixed Vouch salt, `name` as info).
 * The same master and name always give the same key, so a server signs each log with its own
 * key (named after the log's checkpoint origin) while the operator keeps one secret. The
 * derivation is one-way: a derived key reveals neither the master nor any other log's key.
 *
 * @example
 * const perLog = deriveSignerKey(masterSignerKey, 'audit.example/vouch/orders');
 */
export function deriveSignerKey(masterKey: string, name: string): string {
  requireName(name);
  if (!masterKey.startsWith(SIGNER_PREFIX)) malformed(`signer key must start with ${SIGNER_PREFIX}`);
  parseSignerKey(masterKey);
  const [, , masterSeed] = splitKey(masterKey.slice(SIGNER_PREFIX.length));
  const seed = hkdf(nobleSha256, masterSeed, DERIVATION_SALT, new TextEncoder().encode(name), 32);
  const keyId = hex8(noteKeyId(name, ed25519.getPublicKey(seed)));
  return `${SIGNER_PREFIX}${name}+${keyId}+${encodeBase64(withType(seed))}`;
}

/** `<name>+<key id>+<base64(type || 32 bytes)>` into its parts, the 32 bytes decoded. */
export function splitKey(text: string, type = ED25519): [name: string, keyId: string, key: Uint8Array] {
  // Names cannot hold '+', but base64 can: only the first two '+' separate fields.
  const first = text.indexOf('+');
  const second = text.indexOf('+', first + 1);
  if (first < 0 || second < 0) malformed('key text must be <name>+<key id>+<key>');
  const name = text.slice(0, first);
  const keyId = text.slice(first + 1, second);
  const encoded = text.slice(second + 1);
  requireName(name);
  if (!KEY_ID.test(keyId)) malformed('key ID must be 8 lowercase hex digits');
  const bytes = decodeBase64(encoded);
  if (bytes === undefined || bytes.length !== 33) malformed('key data must be base64 of 33 bytes');
  if (bytes[0] !== type) {
    malformed(
      type === ED25519
        ? 'only Ed25519 keys (type 0x01) are supported'
        : `expected a key of signature type 0x${type.toString(16).padStart(2, '0')}`,
    );
  }
  return [name, keyId, bytes.slice(1)];
}

export function requireName(name: string): void {
  if (!isValidKeyName(name)) malformed('key name must be non-empty, without spaces, + or control characters');
}

export function withType(key: Uint8Array, type = ED25519): Uint8Array {
  const out = new Uint8Array(1 + key.length);
  out[0] = type;
  out.set(key, 1);
  return out;
}

export function hex8(value: number): string {
  return value.toString(16).padStart(8, '0');
}

/** Big-endian uint32 at `offset` (no bitwise result sign issues: multiply, don't shift). */
export function readUint32(bytes: Uint8Array, offset: number): number {
  return (
    bytes[offset]! * 2 ** 24 + bytes[offset + 1]! * 2 ** 16 + bytes[offset + 2]! * 2 ** 8 + bytes[offset + 3]!
  );
}

function malformed(message: string): never {
  throw new AuditError('MALFORMED_CHECKPOINT', message);
}
