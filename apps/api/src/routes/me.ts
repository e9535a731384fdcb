import { createRoute, z } from '@hono/zod-openapi';
import { ROLES } from '@vouch/records';
import type { VouchApp } from '../app';
import { bearerSecurity, commonErrors } from '../schemas/common';

const PrincipalSchema = z
  .object({
    key_id: z.string(),
    identity: z.string(),
    roles: z.array(z.enum(ROLES)),
    scopes: z.array(z.string()),
    environments: z.array(z.string()).nullable(),
    logs: z.array(z.string()).nullable(),
  })
  .openapi('Principal');

const me = createRoute({
  method: 'get',
  path: '/v1/me',
  tags: ['keys'],
  summary: 'Who this key is and what it may do',
  description:
    'The identity, roles, scopes, environments and logs of the calling key (never its secret). Any role.',
  security: bearerSecurity,
  responses: {
    ...commonErrors,
    200: { description: 'The caller', content: { 'application/json': { schema: PrincipalSchema } } },
  },
});

/** `GET /v1/me`: what the console shows after sign-in. */
export function registerMeRoutes(app: VouchApp): void {
  app.openapi(me, (c) => {
    const p = c.get('principal');
    return c.json(
      {
        key_id: p.keyId,
        identity: p.identity,
        roles: [...p.roles],
        scopes: [...p.scopes],
        environments: p.environments === null ? null : [...p.environments],
        logs: p.logs === null ? null : [...p.logs],
      },
      200,
    );
  });
}
