import { z } from '@hono/zod-openapi';
import type { ChainFailureCode } from '@vouch/audit';
import { errorResponseSpec, LogIdSchema } from './common';

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

/** Every code a chain report can carry (the compiler checks that none is missing). */
const CHAIN_FAILURE_CODES = [
  'PAYLOAD_HASH_MISMATCH',
  'HASH_MISMATCH',
  'PREV_HASH_MISMATCH',
  'SEQ_GAP',
  'TRUNCATED',
  'LOG_MISMATCH',
  'RECORD_WITHOUT_EVENT',
  'RECORD_MISMATCH',
  'RECORD_RULE_VIOLATION',
  'MERKLE_MISMATCH',
  'MERKLE_MISSING',
  'MERKLE_BEYOND_CHAIN',
  'CHECKPOINT_MISMATCH',
  'CHECKPOINT_SIGNATURE_INVALID',
  'KEY_WITHOUT_EVENT',
  'KEY_MISMATCH',
  'KEY_UNPROVEN',
  'REVOCATION_WITHOUT_EVENT',
  'REVOCATION_MISMATCH',
] as const satisfies readonly ChainFailureCode[];
type UnlistedCode = Exclude<ChainFailureCode, (typeof CHAIN_FAILURE_CODES)[number]>;
const everyCodeListed: [UnlistedCode] extends [never] ? true : UnlistedCode = true;
void everyCodeListed;

export const ChainFailureSchema = z
  .looseObject({
    seq: z
      .number()
      .int()
      .openapi({ description: 'The event the failure is at (for a checkpoint: its tree size)' }),
    code: z.enum(CHAIN_FAILURE_CODES).openapi({ example: 'PAYLOAD_HASH_MISMATCH' }),
    message: z.string(),
    table: z
      .string()
      .optional()
      .openapi({ description: 'The table holding the failing row, when it is not `audit_events`' }),
    rule: z.string().optional().openapi({
      description:
        'RECORD_RULE_VIOLATION: the rule the record breaks, named by the code the server refuses it with',
      example: 'SELF_APPROVAL',
    }),
    level: z.number().int().optional().openapi({ description: "Merkle failures: the node's level" }),
    idx: z
      .number()
      .int()
      .optional()
      .openapi({ description: "Merkle failures: the node's index in its level" }),
    through: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'Merkle failures: the last seq of a run of events that fail alike' }),
    nodes: z
      .number()
      .int()
      .optional()
      .openapi({ description: 'Merkle failures: how many nodes the failure covers' }),
    tree_size: z
      .number()
      .int()
      .optional()
      .openapi({ description: "Checkpoint failures: the checkpoint's tree size" }),
    reason: z.string().optional().openapi({
      description: 'CHECKPOINT_SIGNATURE_INVALID: SIGNATURE_INVALID, NO_TRUSTED_SIGNATURE or ORIGIN_MISMATCH',
    }),
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
    merkle: z.object({ nodes: z.number().int() }).openapi({
      description: 'Merkle nodes recomputed from the event hashes, each compared with its stored row',
    }),
    checkpoints: z
      .object({
        checked: z.number().int(),
        signatures: z.enum(['verified', 'not_checked']),
      })
      .openapi({
        description:
          'Stored checkpoints compared with the roots recomputed from the events; `signatures` says whether their signatures were checked against the log key',
      }),
  })
  .openapi('ChainReport');

/** 404 for a log id nothing was ever stored under: a typo must not look like an empty log. */
export const LogNotFoundResponse = errorResponseSpec(
  'No event, Merkle node or checkpoint was ever stored under this log id (`LOG_NOT_FOUND`): a log comes into being with its first event',
);

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
