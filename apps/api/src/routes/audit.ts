import { createRoute, type z } from '@hono/zod-openapi';
import type { ChainHead } from '@vouch/audit';
import { type CheckpointKeys, type Ledger, type LogVerificationReport, requireLog } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { assertLog, requireRole } from '../auth/authorize';
import { describeError, summarizeError } from '../error-response';
import { jsonLinesStream } from '../http/json-lines';
import {
  ChainReportSchema,
  EventPageSchema,
  EventSchema,
  EventsQuerySchema,
  ExportQuerySchema,
  LogHeadSchema,
  LogNotFoundResponse,
  LogParamSchema,
  VerifyProgressLineSchema,
  VerifyQuerySchema,
} from '../schemas/audit';
import { bearerSecurity, commonErrors, STANDBY_READ_NOTE } from '../schemas/common';

// Typed `string`, not as literals: @hono/zod-openapi types the answer of a media type it cannot
// name as a plain `Response`, which is what a stream is. Its JSON answers are checked apart.
const NDJSON: string = 'application/x-ndjson';
const JSONL: string = 'application/jsonl';

const listEvents = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/events',
  tags: ['audit'],
  summary: 'Audit events of a log, in pages (auditor)',
  description: STANDBY_READ_NOTE,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: EventsQuerySchema },
  responses: {
    200: {
      description: 'One page, in seq order',
      content: { 'application/json': { schema: EventPageSchema } },
    },
    404: LogNotFoundResponse,
    ...commonErrors,
  },
});

const logHead = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/head',
  tags: ['audit'],
  summary: 'The head of a log: last seq and its hash (auditor)',
  description: `Keep it: passing it later as \`expect_head\` detects a log that was cut back.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema },
  responses: {
    200: {
      description: 'The head, or null for an empty log',
      content: {
        'application/json': { schema: LogHeadSchema },
      },
    },
    404: LogNotFoundResponse,
    ...commonErrors,
  },
});

const verifyLog = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/verify',
  tags: ['audit'],
  summary: 'Verify the chain of a log (auditor)',
  description: `Recomputes every payload hash, event hash and link from the stored bytes; recomputes the Merkle tree from the event hashes and compares every stored node with it; compares every stored checkpoint with the root recomputed at its size, with its own note, and with its signature under this server's log key; cross-checks the record tables. Reports every break with its seq (and table). With \`Accept: ${NDJSON}\` the answer streams: progress lines while it runs, then the report.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: VerifyQuerySchema },
  responses: {
    200: {
      description: 'The report; `ok: false` lists every failure',
      content: {
        'application/json': { schema: ChainReportSchema },
        [NDJSON]: { schema: VerifyProgressLineSchema },
      },
    },
    404: LogNotFoundResponse,
    ...commonErrors,
  },
});

const exportLog = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/export',
  tags: ['audit'],
  summary: 'Export a log as JSON Lines (auditor)',
  description: `One event per line in seq order, streamed with constant memory. Each line is exactly what was hashed, so the export verifies offline with \`verifyEvents\` from @vouch/audit.\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: ExportQuerySchema },
  responses: {
    200: {
      description: 'The events, one JSON object per line',
      content: { [JSONL]: { schema: EventSchema } },
    },
    404: LogNotFoundResponse,
    ...commonErrors,
  },
});

/** A 200 with a streamed body, never stored by a cache. */
function streamed(body: ReadableStream<Uint8Array>, headers: Record<string, string>): Response {
  return new Response(body, { status: 200, headers: { ...headers, 'cache-control': 'no-store' } });
}

function parseHead(text: string | undefined): ChainHead | undefined {
  if (text === undefined) return undefined;
  const [seq, hash] = text.split(':');
  return { seq: Number(seq), hash: hash! };
}

/** `/v1/logs/{log}/…`: events, head, chain verification and export, for auditors. */
export function registerAuditRoutes(
  app: VouchApp,
  deps: {
    /** This server's own log key, so verification checks checkpoint signatures too. */
    checkpointKeys?: (log: string) => CheckpointKeys | undefined;
  },
): void {
  /** An empty answer is checked once more: for a log id nothing is stored under it is a typo. */
  const unlessUnknown = async (ledger: Ledger, log: string, empty: boolean) => {
    if (empty) await requireLog(ledger.database, log);
  };

  app.openapi(listEvents, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { after = 0, limit = 100 } = c.req.valid('query');
    const pageSize = Math.min(limit, c.get('limits').pageSize);
    const { ledger } = await c.get('readSide')();
    const events = await ledger.events(log, { after, limit: pageSize });
    await unlessUnknown(ledger, log, events.length === 0);
    const last = events[events.length - 1];
    return c.json({ log, events, next_after: events.length === pageSize && last ? last.seq : null }, 200);
  });

  app.openapi(logHead, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { ledger } = await c.get('readSide')();
    const head = await ledger.head(log);
    await unlessUnknown(ledger, log, head === null);
    return c.json({ log, head }, 200);
  });

  app.openapi(verifyLog, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const expectHead = parseHead(c.req.valid('query').expect_head);
    const signal = c.req.raw.signal;
    const checkpointKeys = deps.checkpointKeys?.(log);
    const { ledger } = await c.get('readSide')();
    // Before the answer starts: once a stream is under way its status is 200.
    await requireLog(ledger.database, log);
    const options = {
      log,
      signal,
      ...(expectHead ? { expectHead } : {}),
      ...(checkpointKeys ? { checkpointKeys } : {}),
    };
    if (!(c.req.header('accept') ?? '').includes(NDJSON)) {
      const report: LogVerificationReport = await ledger.verifyChain(options);
      // The route may also answer with a stream, so the compiler checks this body here.
      return c.json(report satisfies z.output<typeof ChainReportSchema>, 200);
    }
    const logger = c.get('logger');
    const requestId = c.get('requestId');
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (line: unknown) => controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
        try {
          const report = await ledger.verifyChain({
            ...options,
            onProgress: (checked) => send({ type: 'progress', checked }),
            onRestart: () => send({ type: 'restart' }),
          });
          send({ type: 'report', report });
        } catch (error) {
          if (signal.aborted) return controller.close();
          const described = describeError(error);
          if (described.status >= 500) {
            logger.error('chain verification failed', {
              request_id: requestId,
              error: summarizeError(error),
            });
          }
          send({
            type: 'error',
            error: { code: described.code, message: described.message, request_id: requestId },
          });
        }
        controller.close();
      },
    });
    return streamed(body, { 'content-type': `${NDJSON}; charset=utf-8` });
  });

  app.openapi(exportLog, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { after } = c.req.valid('query');
    const { ledger } = await c.get('readSide')();
    await requireLog(ledger.database, log);
    const logger = c.get('logger');
    const requestId = c.get('requestId');
    const body = jsonLinesStream(ledger.streamEvents(log, after === undefined ? {} : { after }), {
      onError: (error) =>
        logger.error('export aborted', { request_id: requestId, log, error: summarizeError(error) }),
    });
    return streamed(body, {
      'content-type': `${JSONL}; charset=utf-8`,
      'content-disposition': `attachment; filename="${log.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl"`,
    });
  });
}
