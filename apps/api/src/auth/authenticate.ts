import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import { hashApiKey, hashesEqual } from './api-key';
import type { KeyStore } from './key-store';

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/=-]{1,512})[ ]*$/i;

/**
 * Establish who is calling from `Authorization: Bearer <key>`. Only the SHA-256 of the key
 * is looked up (the store holds nothing else), with the row's proof against its event in the
 * `system` log, then compared again in constant time. Every
 * failure is the same 401 `UNAUTHENTICATED`, so a caller learns nothing about which keys
 * exist or were revoked.
 */
export function authenticate(
  keys: KeyStore,
  expiry: { maxAgeDays: number; now?: () => Date } = { maxAgeDays: 0 },
): MiddlewareHandler<AppEnv> {
  const now = expiry.now ?? (() => new Date());
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (header === undefined) {
      throw new ApiError('UNAUTHENTICATED', 'send an API key as Authorization: Bearer <key>');
    }
    const match = BEARER.exec(header);
    if (!match) {
      throw new ApiError('UNAUTHENTICATED', 'the Authorization header must be Bearer <key>');
    }
    const hash = hashApiKey(match[1]!);
    const found = await keys.findByHash(hash);
    if (found?.status === 'refused') {
      // A row the chain does not account for (inserted or edited behind the ledger's back):
      // the lookup raised the integrity alarm (`KEY_MISMATCH`, /readyz); this line ties it to
      // the request. The key id only: never the secret or its hash.
      c.get('logger').error('api key row fails its chain proof: refused', {
        key_id: found.keyId,
        proof: found.proof,
      });
    }
    if (found?.status !== 'valid' || !hashesEqual(found.keyHash, hash)) {
      throw new ApiError('UNAUTHENTICATED', 'the API key is not valid (unknown or revoked)');
    }
    const { key } = found;
    // A deadline the chain records (`api_key.expires`: a rotation's grace period).
    if (key.expiresAt !== null && now().getTime() >= Date.parse(key.expiresAt)) {
      throw new ApiError('KEY_EXPIRED', 'the API key has expired: it was rotated, use its replacement', {
        details: { key_id: key.id, expired_at: key.expiresAt },
      });
    }
    if (expiry.maxAgeDays > 0) {
      const expiresAt = Date.parse(key.createdAt) + expiry.maxAgeDays * 86_400_000;
      if (now().getTime() >= expiresAt) {
        // Only the holder of the key gets this far: telling it the key expired tells nobody else anything.
        throw new ApiError('KEY_EXPIRED', 'the API key has expired: rotate it (vouch keys rotate)', {
          details: { key_id: key.id, expired_at: new Date(expiresAt).toISOString() },
        });
      }
    }
    c.set('principal', {
      keyId: key.id,
      identity: key.identity,
      roles: key.roles,
      scopes: key.scopes,
      environments: key.environments,
      logs: key.logs,
      keyIssuedAt: key.createdAt,
    });
    await next();
  };
}
