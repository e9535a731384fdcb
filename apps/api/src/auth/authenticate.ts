import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import { hashApiKey, hashesEqual } from './api-key';
import type { KeyStore } from './key-store';

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/=-]{1,512})[ ]*$/i;

/**
 * Establish who is calling from `Authorization: Bearer <key>`. Only the SHA-256 of the key
 * is looked up (the store holds nothing else), then compared again in constant time. Every
 * failure is the same 401 `UNAUTHENTICATED`, so a caller learns nothing about which keys
 * exist or were revoked.
 */
export function authenticate(keys: KeyStore): MiddlewareHandler<AppEnv> {
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
    const key = await keys.findByHash(hash);
    if (!key || !hashesEqual(key.keyHash, hash)) {
      throw new ApiError('UNAUTHENTICATED', 'the API key is not valid (unknown or revoked)');
    }
    c.set('principal', {
      keyId: key.id,
      identity: key.identity,
      roles: key.roles,
      scopes: key.scopes,
      environments: key.environments,
      logs: key.logs,
    });
    await next();
  };
}
