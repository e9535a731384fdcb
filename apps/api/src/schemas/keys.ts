import { z } from '@hono/zod-openapi';
import {
  apiKeyListSchema,
  apiKeySchema,
  createdKeySchema,
  createKeyInputSchema,
  revokedKeySchema,
} from '@vouch/records';
import { component } from './component';

export const CreateKeyBodySchema = component(createKeyInputSchema, 'CreateKey');
export const ApiKeySchema = component(apiKeySchema, 'ApiKey');
export const CreatedKeySchema = component(createdKeySchema, 'CreatedKey');
export const ApiKeyListSchema = apiKeyListSchema;
export const RevokedKeySchema = revokedKeySchema;

export const KeyIdParamSchema = z.object({
  id: z
    .string()
    .regex(/^key_[A-Za-z0-9_-]{1,64}$/)
    .openapi({ param: { name: 'id', in: 'path' }, example: 'key_3q2-7wVj0p8xW5aH' }),
});
