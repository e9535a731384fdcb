import { z } from '@hono/zod-openapi';
import { LogIdSchema } from './common';

const Hash = z.string().regex(/^[0-9a-f]{64}$/);

export const EventSchema = z
  .object({
    log: z.string(),
    seq: z.number().int(),
    kind: z.string(),
    entity: z.string(),
    actor: z.string(),
    at: z.string().openapi({ description: 'ISO 8601 time, exactly as hashed' }),
    payload: z.string().openapi({ description: 'The canonical JSON text (RFC 8785) exactly as hashed' }),
    payload_hash: Hash,
    prev_hash: Hash,
    hash: Hash,
  })
  .openapi('AuditEvent');

export const ChainHeadSchema = z.object({ seq: z.number().int(), hash: Hash }).openapi('ChainHead');

export const ChainFailureSchema = z
  .looseObject({
    seq: z.number().int(),
    code: z.string().openapi({ example: 'PAYLOAD_HASH_MISMATCH' }),
    message: z.string(),
  })
  .openapi('ChainFailure');

export const ChainReportSchema = z
  .object({
    ok: z.boolean(),
    log: z.string(),
    checked: z.number().int(),
    head: ChainHeadSchema.nullable(),
    failures: z.array(ChainFailureSchema),
    failuresOmitted: z.number().int().optional(),
  })
  .openapi('ChainReport');

export const LogParamSchema = z.object({
  log: LogIdSchema.openapi({ param: { name: 'log', in: 'path' }, example: 'default' }),
});

export const EventsQuerySchema = z.strictObject({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({
      param: { name: 'after', in: 'query' },
      description: 'Return events with seq greater than this',
    }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, description: 'Page size (default 100)' }),
});

export const EventPageSchema = z
  .object({
    log: z.string(),
    events: z.array(EventSchema),
    next_after: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'Pass as `after` for the next page; null at the end' }),
  })
  .openapi('EventPage');

export const VerifyQuerySchema = z.strictObject({
  expect_head: z
    .string()
    .regex(/^[1-9][0-9]{0,15}:[0-9a-f]{64}$/)
    .optional()
    .openapi({
      param: { name: 'expect_head', in: 'query' },
      description:
        'SEQ:HASH of a head you trust from earlier; a log that no longer contains it is reported TRUNCATED',
    }),
});

export const ExportQuerySchema = z.strictObject({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({
      param: { name: 'after', in: 'query' },
      description: 'Export events with seq greater than this',
    }),
});

export const VerifyProgressLineSchema = z
  .union([
    z.object({ type: z.literal('progress'), checked: z.number().int() }),
    z.object({ type: z.literal('report'), report: ChainReportSchema }),
    z.object({ type: z.literal('error'), error: z.object({ code: z.string(), message: z.string() }) }),
  ])
  .openapi('ChainVerificationLine');
