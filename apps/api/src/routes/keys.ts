import { createRoute } from '@hono/zod-openapi';
import {
  KEY_CREATE_ACTION,
  KEY_REVOKE_ACTION,
  type Ledger,
  SYSTEM_LOG,
  signatureOfRequest,
} from '@vouch/ledger';
import type { Context } from 'hono';
import type { VouchApp } from '../app';
import { assertEnvironment, assertLog, requireRole } from '../auth/authorize';
import type { KeyStore, StoredApiKey } from '../auth/key-store';
import { ApiError } from '../errors';
import type { AppEnv } from '../http/app-env';
import { jsonBody } from '../http/json-body';
import { bearerSecurity, bodyErrors, commonErrors, errorResponseSpec } from '../schemas/common';
import {
  ApiKeyListSchema,
  CreatedKeySchema,
  CreateKeyBodySchema,
  KeyIdParamSchema,
  RevokedKeySchema,
} from '../schemas/keys';
import { rawBody, recordContext } from './record-context';

/** The API view of a stored key (snake_case, no hash). */
export function keyView(key: StoredApiKey) {
  return {
    id: key.id,
    identity: key.identity,
    roles: key.roles,
    scopes: key.scopes,
    environments: key.environments,
    logs: key.logs,
    created_by: key.createdBy,
    created_at: key.createdAt,
    revoked_at: key.revokedAt,
    expires_at: key.expiresAt,
  };
}

const createKey = createRoute({
  method: 'post',
  path: '/v1/keys',
  tags: ['keys'],
  summary: 'Issue an API key (admin)',
  description:
    "Returns the secret once; only its SHA-256 is stored. Issuing is recorded as an `api_key.created` event in the `system` log (without the secret or its hash: a commitment to the hash). An identity spelled differently from an existing key's identity but the same in canonical form (Unicode NFKC + case folding), or a look-alike of it, is refused with 409 `IDENTITY_COLLISION`. An admin who holds an enrolled signing key (or once `signatures.required` is recorded) signs the request (`Vouch-Signature`, action `api_key.create`, claims: this body), or is refused with 403 `SIGNATURE_REQUIRED` / `SIGNATURE_INVALID`; a key whose issuance lacks that signature authenticates nothing.",
  security: bearerSecurity,
  middleware: [requireRole('admin'), jsonBody({ required: true })] as const,
  request: { body: { required: true, content: { 'application/json': { schema: CreateKeyBodySchema } } } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Issued', content: { 'application/json': { schema: CreatedKeySchema } } },
    409: errorResponseSpec('Another spelling or a look-alike of an existing identity (`IDENTITY_COLLISION`)'),
  },
});

const listKeys = createRoute({
  method: 'get',
  path: '/v1/keys',
  tags: ['keys'],
  summary: 'List API keys (admin); never their secrets',
  security: bearerSecurity,
  middleware: [requireRole('admin')] as const,
  responses: {
    ...commonErrors,
    200: {
      description: 'Every key, oldest first',
      content: { 'application/json': { schema: ApiKeyListSchema } },
    },
  },
});

const revokeKey = createRoute({
  method: 'post',
  path: '/v1/keys/{id}/revoke',
  tags: ['keys'],
  summary: 'Revoke an API key (admin)',
  description:
    'Recorded as an `api_key.revoked` event in the `system` log. An admin who must sign (see `POST /v1/keys`) signs the request (`Vouch-Signature`, action `api_key.revoke`, claims `{"key_id": id}`), or is refused with 403 `SIGNATURE_REQUIRED` / `SIGNATURE_INVALID`.',
  security: bearerSecurity,
  middleware: [requireRole('admin')] as const,
  request: { params: KeyIdParamSchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'Revoked (idempotent)',
      content: { 'application/json': { schema: RevokedKeySchema } },
    },
    404: errorResponseSpec('No such key (`KEY_NOT_FOUND`)'),
  },
});

/** `/v1/keys`: issue, list and revoke API keys. */
export function registerKeyRoutes(app: VouchApp, deps: { keys: KeyStore; ledger: Ledger }): void {
  /** The admin's signature over the request as `action` (refused when it must sign and did not). */
  const signatureOf = (c: Context<AppEnv>, action: string, claims: unknown) =>
    signatureOfRequest(
      deps.ledger.database,
      recordContext(c, SYSTEM_LOG),
      action,
      claims,
      new Date().toISOString(),
    );
  app.openapi(createKey, async (c) => {
    const body = c.req.valid('json');
    const principal = c.get('principal');
    // A limited admin cannot mint a key with more reach than its own.
    if (principal.environments !== null) {
      if (!body.environments) assertEnvironment(principal, null);
      for (const env of body.environments ?? []) assertEnvironment(principal, env);
    }
    if (principal.logs !== null) {
      if (!body.logs)
        throw new ApiError('LOG_FORBIDDEN', 'this key may only issue keys limited to its own logs');
      for (const log of body.logs) assertLog(principal, log);
    }
    const signature = await signatureOf(c, KEY_CREATE_ACTION, rawBody(c));
    const { key, secret } = await deps.keys.create({
      identity: body.identity,
      roles: body.roles,
      scopes: body.scopes ?? [],
      environments: body.environments ?? null,
      logs: body.logs ?? null,
      createdBy: principal.identity,
      ...(signature ? { signature } : {}),
    });
    return c.json({ key: keyView(key), secret }, 201);
  });
  app.openapi(listKeys, async (c) => c.json({ keys: (await deps.keys.list()).map(keyView) }, 200));
  app.openapi(revokeKey, async (c) => {
    const { id } = c.req.valid('param');
    const signature = await signatureOf(c, KEY_REVOKE_ACTION, { key_id: id });
    const key = await deps.keys.revoke(id, c.get('principal').identity, signature);
    return c.json({ key: keyView(key) }, 200);
  });
}
