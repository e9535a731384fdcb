import { createRoute, z } from '@hono/zod-openapi';
import type { ChainHead, ChainReport } from '@vouch/audit';
import type { Ledger } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { assertLog, requireRole } from '../auth/authorize';
import { describeError, summarizeError } from '../error-response';
import { jsonLinesStream } from '../http/json-lines';
import {
  ChainHeadSchema,
  ChainReportSchema,
  EventPageSchema,
  EventSchema,
  EventsQuerySchema,
  ExportQuerySchema,
  LogParamSchema,
  VerifyProgressLineSchema,
  VerifyQuerySchema,
} from '../schemas/audit';
import { bearerSecurity, commonErrors } from '../schemas/common';

const NDJSON = 'application/x-ndjson';
const JSONL = 'application/jsonl';

const listEvents = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/events',
  tags: ['audit'],
  summary: 'Audit events of a log, in pages (auditor)',
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: EventsQuerySchema },
  responses: {
    200: {
      description: 'One page, in seq order',
      content: { 'application/json': { schema: EventPageSchema } },
    },
    ...commonErrors,
  },
});

const logHead = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/head',
  tags: ['audit'],
  summary: 'The head of a log: last seq and its hash (auditor)',
  description: 'Keep it: passing it later as `expect_head` detects a log that was cut back.',
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema },
  responses: {
    200: {
      description: 'The head, or null for an empty log',
      content: {
        'application/json': { schema: z.object({ log: z.string(), head: ChainHeadSchema.nullable() }) },
      },
    },
    ...commonErrors,
  },
});

const verifyLog = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/verify',
  tags: ['audit'],
  summary: 'Verify the chain of a log (auditor)',
  description: `Recomputes every payload hash, event hash and link from the stored bytes and reports every break with its seq. With \`Accept: ${NDJSON}\` the answer streams: progress lines while it runs, then the report.`,
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
    ...commonErrors,
  },
});

const exportLog = createRoute({
  method: 'get',
  path: '/v1/logs/{log}/export',
  tags: ['audit'],
  summary: 'Export a log as JSON Lines (auditor)',
  description:
    'One event per line in seq order, streamed with constant memory. Each line is exactly what was hashed, so the export verifies offline with `verifyEvents` from @vouch/audit.',
  security: bearerSecurity,
  middleware: [requireRole('auditor')] as const,
  request: { params: LogParamSchema, query: ExportQuerySchema },
  responses: {
    200: {
      description: 'The events, one JSON object per line',
      content: { [JSONL]: { schema: EventSchema } },
    },
    ...commonErrors,
  },
});

/**
 * A 200 with a streamed body. Typed `never` because zod-openapi types a route's responses as
 * JSON built with `c.json`; these bodies are documented in the route and built by hand.
 */
function streamed(body: ReadableStream<Uint8Array>, headers: Record<string, string>): never {
  return new Response(body, { status: 200, headers: { ...headers, 'cache-control': 'no-store' } }) as never;
}

function parseHead(text: string | undefined): ChainHead | undefined {
  if (text === undefined) return undefined;
  const [seq, hash] = text.split(':');
  return { seq: Number(seq), hash: hash! };
}

/** `/v1/logs/{log}/…`: events, head, chain verification and export, for auditors. */
export function registerAuditRoutes(app: VouchApp, deps: { ledger: Ledger }): void {
  const { ledger } = deps;

  app.openapi(listEvents, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const { after = 0, limit = 100 } = c.req.valid('query');
    const pageSize = Math.min(limit, c.get('limits').pageSize);
    const events = await ledger.events(log, { after, limit: pageSize });
    const last = events[events.length - 1];
    return c.json({ log, events, next_after: events.length === pageSize && last ? last.seq : null }, 200);
  });

  app.openapi(logHead, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    return c.json({ log, head: await ledger.head(log) }, 200);
  });

  app.openapi(verifyLog, async (c) => {
    const { log } = c.req.valid('param');
    assertLog(c.get('principal'), log);
    const expectHead = parseHead(c.req.valid('query').expect_head);
    const signal = c.req.raw.signal;
    if (!(c.req.header('accept') ?? '').includes(NDJSON)) {
      const report: ChainReport = await ledger.verifyChain({
        log,
        signal,
        ...(expectHead ? { expectHead } : {}),
      });
      return c.json(report, 200);
    }
    const logger = c.get('logger');
    const requestId = c.get('requestId');
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (line: unknown) => controller.enqueue(encoder.encode(`${JSON.stringify(line)}\n`));
        try {
          const report = await ledger.verifyChain({
            log,
            signal,
            onProgress: (checked) => send({ type: 'progress', checked }),
            ...(expectHead ? { expectHead } : {}),
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
