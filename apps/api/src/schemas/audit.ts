import { z } from '@hono/zod-openapi';
import type { ChainFailureCode } from '@vouch/audit';
import {
  auditEventSchema,
  CHAIN_FAILURE_CODES,
  chainFailureSchema,
  chainHeadSchema,
  chainReportSchema,
  eventPageSchema,
  logHeadSchema,
  redactionReportSchema,
  redactionRequestSchema,
  redactionResultSchema,
} from '@vouch/records';
import { errorResponseSpec, LogIdSchema, pageLimitParam, seqCursorParam } from './common';
import { component } from './component';

export const EventSchema = component(auditEventSchema, 'AuditEvent');
export const ChainHeadSchema = component(chainHeadSchema, 'ChainHead');

// The records list every code a chain report can carry; the compiler checks none is missing.
type UnlistedCode = Exclude<ChainFailureCode, (typeof CHAIN_FAILURE_CODES)[number]>;
const everyCodeListed: [UnlistedCode] extends [never] ? true : UnlistedCode = true;
const noUnknownCode: readonly ChainFailureCode[] = CHAIN_FAILURE_CODES;
void everyCodeListed;
void noUnknownCode;

export const ChainFailureSchema = component(chainFailureSchema, 'ChainFailure');
export const ChainReportSchema = component(chainReportSchema, 'ChainReport');
export const EventPageSchema = component(eventPageSchema, 'EventPage');
export const LogHeadSchema = logHeadSchema;
export const RedactionReportSchema = component(redactionReportSchema, 'RedactionReport');
export const RedactionRequestSchema = component(redactionRequestSchema, 'RedactionRequest');
export const RedactionResultSchema = component(redactionResultSchema, 'RedactionResult');

/** 404 for a log id nothing was ever stored under: a typo must not look like an empty log. */
export const LogNotFoundResponse = errorResponseSpec(
  'No event, Merkle node or checkpoint was ever stored under this log id (`LOG_NOT_FOUND`): a log comes into being with its first event',
);

export const LogParamSchema = z.object({
  log: LogIdSchema.clone().openapi({ param: { name: 'log', in: 'path' }, example: 'default' }),
});

export const EventsQuerySchema = z.strictObject({
  after: seqCursorParam('Return events with seq greater than this'),
  limit: pageLimitParam(10_000, 'Page size (default 100)'),
});

export const VerifyQuerySchema = z.strictObject({
  expect_head: z
    .string()
    .regex(/^[1-9][0-9]{0,15}:[0-9a-f]{64}$/)
    .optional()
    .openapi({
      param: { name: 'expect_head', in: 'query' },
      description:
        'SEQ:HASH of a head you trust from earlier; a log that ends before it is reported TRUNCATED, one with another event at its seq REWRITTEN',
    }),
});

export const ExportQuerySchema = z.strictObject({
  after: seqCursorParam('Export events with seq greater than this'),
});

export const VerifyProgressLineSchema = z
  .union([
    z.object({ type: z.literal('progress'), checked: z.number().int() }),
    z
      .object({ type: z.literal('restart') })
      .describe('The log was found not intact in parts: progress counts again from the first event'),
    z.object({ type: z.literal('report'), report: ChainReportSchema }),
    z.object({ type: z.literal('error'), error: z.object({ code: z.string(), message: z.string() }) }),
  ])
  .openapi('ChainVerificationLine');

export const EventParamSchema = z.object({
  log: LogIdSchema.clone().openapi({ param: { name: 'log', in: 'path' }, example: 'default' }),
  // A path segment is a string: a positive decimal without leading zeros, at most 16 digits.
  seq: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .transform(Number)
    .openapi({ param: { name: 'seq', in: 'path' }, example: '42' }),
});
