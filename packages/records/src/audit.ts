import { z } from 'zod';
import { hashSchema } from './fields';

/** One audit event as stored and exported; `payload` is the canonical JSON text that was hashed. */
export const auditEventSchema = z.object({
  log: z.string(),
  seq: z.number().int(),
  kind: z.string(),
  entity: z.string(),
  actor: z.string(),
  at: z.string().meta({ description: 'ISO 8601 time, exactly as hashed' }),
  payload: z.string().meta({ description: 'The canonical JSON text (RFC 8785) exactly as hashed' }),
  payload_hash: hashSchema,
  prev_hash: hashSchema,
  hash: hashSchema,
  commitment: z.string().nullish().meta({
    description:
      'Present when the payload commits to its fields one by one (docs/chain.md): `payload` is then the object of field hashes, and the content is in `fields`',
  }),
  fields: z
    .record(z.string(), z.object({ salt: z.string(), value: z.unknown() }))
    .optional()
    .meta({
      description:
        "A `fields/1` event's content: the value and salt of each field not erased (an erased field has none)",
    }),
});
export type AuditEvent = z.output<typeof auditEventSchema>;

/** A log's head: its last seq and hash. */
export const chainHeadSchema = z.object({ seq: z.number().int(), hash: hashSchema });
export type ChainHead = z.output<typeof chainHeadSchema>;

/** Every code a chain report can carry (`@vouch/audit`'s `ChainFailureCode`; the API checks none is missing). */
export const CHAIN_FAILURE_CODES = [
  'PAYLOAD_HASH_MISMATCH',
  'HASH_MISMATCH',
  'PREV_HASH_MISMATCH',
  'TIME_REGRESSION',
  'SEQ_GAP',
  'TRUNCATED',
  'REWRITTEN',
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
  'FIELD_MISMATCH',
  'COMMITMENT_INVALID',
  'REDACTION_UNAUTHORIZED',
  'REDACTION_NOT_APPLIED',
] as const;

/** One break the chain verification found. */
export const chainFailureSchema = z.looseObject({
  seq: z
    .number()
    .int()
    .meta({ description: 'The event the failure is at (for a checkpoint: its tree size)' }),
  code: z.enum(CHAIN_FAILURE_CODES).meta({ example: 'PAYLOAD_HASH_MISMATCH' }),
  message: z.string(),
  table: z
    .string()
    .optional()
    .meta({ description: 'The table holding the failing row, when it is not `audit_events`' }),
  rule: z.string().optional().meta({
    description:
      'RECORD_RULE_VIOLATION: the rule the record breaks, named by the code the server refuses such a write with (e.g. SELF_APPROVAL)',
  }),
  level: z.number().int().optional().meta({ description: "Merkle failures: the node's level" }),
  idx: z.number().int().optional().meta({ description: "Merkle failures: the node's index in its level" }),
  through: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Merkle failures: the last seq of a run of events that fail alike' }),
  nodes: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Merkle failures: how many nodes the failure covers' }),
  tree_size: z
    .number()
    .int()
    .optional()
    .meta({ description: "Checkpoint failures: the checkpoint's tree size" }),
  reason: z.string().optional().meta({
    description: 'CHECKPOINT_SIGNATURE_INVALID: SIGNATURE_INVALID, NO_TRUSTED_SIGNATURE or ORIGIN_MISMATCH',
  }),
  fields: z.array(z.string()).optional().meta({
    description: 'FIELD_MISMATCH, REDACTION_UNAUTHORIZED, REDACTION_NOT_APPLIED: the fields concerned',
  }),
});
export type ChainFailure = z.output<typeof chainFailureSchema>;

/** Fields of an event erased under a redaction event. */
export const redactionReportSchema = z.object({
  seq: z.number().int().meta({ description: 'The event whose fields were erased' }),
  fields: z.array(z.string()),
  by: z.number().int().meta({ description: 'The seq of the `event.redacted` event that authorized it' }),
  reason: z.string(),
});
export type RedactionReport = z.output<typeof redactionReportSchema>;

/** `POST /v1/logs/{log}/events/{seq}/redactions`. */
export const redactionRequestSchema = z.strictObject({
  fields: z
    .array(z.string().min(1).max(256))
    .min(1)
    .max(256)
    .meta({ description: 'Top-level field names of the event to erase', example: ['email'] }),
  reason: z.string().min(1).max(500).meta({
    description: 'Why; kept in the chain for good, so name the request (a ticket), not the person',
    example: 'GDPR erasure request 2026-117',
  }),
});
export type RedactionRequest = z.output<typeof redactionRequestSchema>;

/** A redaction as written. */
export const redactionResultSchema = z.object({
  log: z.string(),
  target: chainHeadSchema.meta({ description: 'The event whose fields were erased (seq and hash)' }),
  fields: z.array(z.string()),
  event: auditEventSchema.meta({ description: 'The `event.redacted` event appended to the log' }),
});
export type RedactionResult = z.output<typeof redactionResultSchema>;

/** The chain verification report of one log. */
export const chainReportSchema = z.object({
  ok: z.boolean(),
  log: z.string(),
  checked: z.number().int(),
  head: chainHeadSchema.nullable(),
  failures: z.array(chainFailureSchema),
  failuresOmitted: z.number().int().optional(),
  redactions: z.array(redactionReportSchema).optional().meta({
    description: 'Fields erased under an `event.redacted` event of the log; absent when none were',
  }),
  /** Merkle nodes the server recomputed from the event hashes, each compared with its stored row. */
  merkle: z.object({ nodes: z.number().int() }).meta({
    description: 'Merkle nodes recomputed from the event hashes, each compared with its stored row',
  }),
  /** Stored checkpoints compared with the recomputed roots, and whether their signatures were checked. */
  checkpoints: z
    .object({
      checked: z.number().int(),
      signatures: z.enum(['verified', 'not_checked']),
    })
    .meta({
      description:
        'Stored checkpoints compared with the roots recomputed from the events; `signatures` says whether their signatures were checked against the log key',
    }),
});
export type ChainReport = z.output<typeof chainReportSchema>;

/** `GET /v1/logs/{log}/events`. */
export const eventPageSchema = z.object({
  log: z.string(),
  events: z.array(auditEventSchema),
  next_after: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'Pass as `after` for the next page; null at the end' }),
});
export type EventPage = z.output<typeof eventPageSchema>;

/** `GET /v1/logs/{log}/head`. */
export const logHeadSchema = z.object({ log: z.string(), head: chainHeadSchema.nullable() });
export type LogHead = z.output<typeof logHeadSchema>;
