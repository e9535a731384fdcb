import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { type AuthorKey, authorKeyFromSeed } from './author-signature';
import { parseSignerKey, SIGNER_PREFIX, splitKey } from './note-keys';

/** Domain separation of {@link deriveAuthorKey}: a derived seed is nothing but a Vouch author key. */
const AUTHOR_DERIVATION_SALT = new TextEncoder().encode('vouch/author-key/v1');

/**
 * The author key the server signs its own records with as `identity` (`vouch:server`),
 * derived from the log signing master key `masterKey` (HKDF-SHA256, RFC 5869: the master's
 * Ed25519 seed as input keying material, a fixed salt of its own, `identity` as info). The
 * operator keeps one secret; the derived key reveals neither it nor any checkpoint key, and
 * the same master always gives the same key, so every instance of a server signs alike.
 *
 * @example
 * const serverKey = deriveAuthorKey(process.env.VOUCH_LOG_SIGNING_KEY!, 'vouch:server');
 */
export function deriveAuthorKey(masterKey: string, identity: string): AuthorKey {
  if (!masterKey.startsWith(SIGNER_PREFIX)) throw new TypeError(`a master key starts with ${SIGNER_PREFIX}`);
  parseSignerKey(masterKey);
  const [, , masterSeed] = splitKey(masterKey.slice(SIGNER_PREFIX.length));
  return authorKeyFromSeed(
    hkdf(sha256, masterSeed, AUTHOR_DERIVATION_SALT, new TextEncoder().encode(identity), 32),
  );
}
