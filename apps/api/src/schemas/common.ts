import { z } from '@hono/zod-openapi';
import { identityInput, logIdInput } from '@vouch/records';

/** The error envelope, as documented in the OpenAPI document for every failure. */
export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z
        .string()
        .openapi({ example: 'ROLE_FORBIDDEN', description: 'Stable, machine-readable reason.' }),
      message: z.string().openapi({ description: 'What went wrong and what to change.' }),
      details: z.unknown().optional().openapi({ description: 'Plain JSON that helps fix the request.' }),
      request_id: z.string().openapi({ description: 'Quote it when reporting a problem.' }),
    }),
  })
  .openapi('Error');

const errorContent = { 'application/json': { schema: ErrorBodySchema } };

/** OpenAPI response entries for the failures every authenticated JSON route can answer with. */
export const commonErrors = {
  400: {
    description:
      'Bad input: malformed JSON, unknown or wrongly typed fields, too deep, values JSON cannot carry',
    content: errorContent,
  },
  401: {
    description: 'No API key, or a key that is unknown or revoked (`UNAUTHENTICATED`)',
    content: errorContent,
  },
  403: {
    description: 'The key may not do this: role, environment or log (`ROLE_FORBIDDEN`, …)',
    content: errorContent,
  },
  500: { description: 'Unexpected error; the body carries only a request id', content: errorContent },
} as const;

/** Extra error responses of routes that take a JSON body. */
export const bodyErrors = {
  413: { description: 'The body is larger than the limit (`BODY_TOO_LARGE`)', content: errorContent },
  415: {
    description: 'The body is not `application/json` (`UNSUPPORTED_MEDIA_TYPE`)',
    content: errorContent,
  },
} as const;

/** An error response with a description, for route-specific statuses. */
export function errorResponseSpec(description: string) {
  return { description, content: errorContent };
}

/** `Authorization: Bearer <key>`, required on every /v1 route. */
export const bearerSecurity = [{ bearerAuth: [] as string[] }];

/**
 * Said by every route that a hot standby may serve (`DATABASE_READ_URL`, docs/scaling.md):
 * what the answer is consistent with, wherever it was read.
 */
export const STANDBY_READ_NOTE =
  'May be served by a hot standby (`DATABASE_READ_URL`): the answer still reflects every write acknowledged before this request began (read-your-writes, and anyone else’s writes too); the `Vouch-Read-Source` header says which database answered (`standby` or `primary`).';

/** A JSON Pointer-free identity: `agent:…`, `service:…`, `user:…` (declared with the records). */
export const IdentitySchema = identityInput;

/** A log id, as the ledger accepts it (declared with the records). */
export const LogIdSchema = logIdInput;

/** A `?after=` query parameter: the seq (or list position) a page starts after. */
export const seqCursorParam = (description: string) =>
  z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ param: { name: 'after', in: 'query' }, description });

/** A `?limit=` query parameter: a page size from 1 to `max`. */
export const pageLimitParam = (max: number, description: string) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, description });
