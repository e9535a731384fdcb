import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const KEY_PREFIX = 'vch_';
const KEY_ID_PREFIX = 'key_';

/** A newly made key: the secret (shown once, never stored) and what is stored instead. */
export interface GeneratedKey {
  id: string;
  secret: string;
  hash: string;
}

/**
 * Make a new API key: `vch_` + 32 random bytes in base64url (256 bits, so it cannot be
 * guessed and a fast hash is enough to store it), with a separate public id for logs and
 * revocation.
 */
export function generateApiKey(): GeneratedKey {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { id: newKeyId(), secret, hash: hashApiKey(secret) };
}

/** A new public key id (`key_` + 12 random bytes base64url). */
export function newKeyId(): string {
  return KEY_ID_PREFIX + randomBytes(12).toString('base64url');
}

/** SHA-256 hex of the secret: the only form in which a key is stored. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Compare two key hashes in constant time. The lookup that found the row already compared
 * hashes (never secrets); this repeats the comparison without a data-dependent early exit,
 * so nothing about a stored hash leaks through timing.
 */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Smallest secret accepted from `VOUCH_ADMIN_KEY`: shorter ones could be guessed. */
export const MIN_SUPPLIED_KEY_LENGTH = 32;
