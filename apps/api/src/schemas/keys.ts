import { z } from '@hono/zod-openapi';
import { ROLES } from '../auth/roles';
import { IdentitySchema, LogIdSchema } from './common';

const EnvironmentSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/)
  .openapi({ example: 'staging' });

export const CreateKeyBodySchema = z
  .strictObject({
    identity: IdentitySchema,
    roles: z.array(z.enum(ROLES)).min(1).max(ROLES.length),
    scopes: z
      .array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:*-]{0,127}$/))
      .max(64)
      .optional()
      .openapi({
        description: 'Scopes a tool may require, e.g. `billing:write`',
        example: ['billing:write'],
      }),
    environments: z
      .array(EnvironmentSchema)
      .min(1)
      .max(32)
      .nullable()
      .optional()
      .openapi({ description: 'Limit the key to these environments; omit or null for any.' }),
    logs: z
      .array(LogIdSchema)
      .min(1)
      .max(32)
      .nullable()
      .optional()
      .openapi({ description: 'Limit the key to these logs; omit or null for any.' }),
  })
  .openapi('CreateKey');

export const ApiKeySchema = z
  .object({
    id: z.string().openapi({ example: 'key_3q2-7wVj0p8xW5aH' }),
    identity: z.string(),
    roles: z.array(z.enum(ROLES)),
    scopes: z.array(z.string()),
    environments: z.array(z.string()).nullable(),
    logs: z.array(z.string()).nullable(),
    created_by: z.string(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .openapi('ApiKey');

export const CreatedKeySchema = z
  .object({
    key: ApiKeySchema,
    secret: z.string().openapi({ description: 'The API key. Shown this once; only its SHA-256 is stored.' }),
  })
  .openapi('CreatedKey');

export const KeyIdParamSchema = z.object({
  id: z
    .string()
    .regex(/^key_[A-Za-z0-9_-]{1,64}$/)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'key_3q2-7wVj0p8xW5aH' }),
});
