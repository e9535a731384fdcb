import { createRoute } from '@hono/zod-openapi';
import type { Ledger, Records } from '@vouch/ledger';
import { streamSSE } from 'hono/streaming';
import type { VouchApp } from '../app';
import { mayActIn, requireRole } from '../auth/authorize';
import { ApiError } from '../errors';
import { bearerSecurity, commonErrors } from '../schemas/common';
import { ApprovalEventSchema, ApprovalEventsQuerySchema } from '../schemas/records';
import { ACCESS, rolesNote } from './access';
import { logOf } from './record-context';

// Typed `string` so @hono/zod-openapi types the answer as a plain `Response` (a stream).
const SSE: string = 'text/event-stream';
const KINDS = new Set(['approval_request', 'approval_resolution']);

/** How the event stream polls the log, and how long one connection lasts before the client reconnects. */
export interface ApprovalEventsOptions {
  /** Between reads of the log (default 1000 ms). */
  pollMs?: number;
  /** One connection's life (default 5 min); the browser's EventSource reconnects with `Last-Event-ID`. */
  maxStreamMs?: number;
}

const events = createRoute({
  method: 'get',
  path: '/v1/approvals/events',
  tags: ['approvals'],
  summary: 'Server-sent events: approval requests opened and answered',
  description: `A \`text/event-stream\` of \`approval\` events, one per \`approval_request\` or \`approval_resolution\` appended to the log, each with its seq as the event id; fetch the request itself for what it says. It reads the log's events (the table every server process appends to), so it sees requests opened through any instance. Resume with \`Last-Event-ID\` or \`?after=\`; without either it starts at the head. A connection ends after a few minutes and the client reconnects. ${rolesNote(ACCESS.approvalEvents)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.approvalEvents)] as const,
  request: { query: ApprovalEventsQuerySchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'The stream; each `data` is one ApprovalEvent',
      content: { [SSE]: { schema: ApprovalEventSchema } },
    },
  },
});

function parseLastEventId(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  if (!/^\d{1,15}$/.test(header)) {
    throw new ApiError('INVALID_REQUEST', 'Last-Event-ID must be the seq of an event', {
      details: { last_event_id: header },
    });
  }
  return Number(header);
}

/** `GET /v1/approvals/events`: new pending approvals and resolutions as they are appended. */
export function registerApprovalEventRoutes(
  app: VouchApp,
  deps: { ledger: Ledger; records: Records; options?: ApprovalEventsOptions },
): void {
  const pollMs = deps.options?.pollMs ?? 1000;
  const maxStreamMs = deps.options?.maxStreamMs ?? 5 * 60_000;

  app.openapi(events, async (c) => {
    const log = logOf(c);
    const principal = c.get('principal');
    const resume = c.req.valid('query').after ?? parseLastEventId(c.req.header('last-event-id'));
    let cursor = resume ?? (await deps.ledger.head(log))?.seq ?? 0;
    const visible = async (kind: string, payload: Record<string, unknown>): Promise<boolean> => {
      if (principal.environments === null) return true;
      if (kind === 'approval_request')
        return mayActIn(principal, (payload.environment as string | null) ?? null);
      const view = await deps.records.getApproval(log, String(payload.request_id));
      return mayActIn(principal, view.request.environment);
    };
    return streamSSE(c, async (stream) => {
      const signal = c.req.raw.signal;
      const endAt = Date.now() + maxStreamMs;
      await stream.writeSSE({ event: 'ready', data: JSON.stringify({ log, after: cursor }), retry: pollMs });
      while (!signal.aborted && !stream.aborted && Date.now() < endAt) {
        const page = await deps.ledger.events(log, { after: cursor, limit: 500 });
        for (const event of page) {
          cursor = event.seq;
          if (!KINDS.has(event.kind)) continue;
          const payload = JSON.parse(event.payload) as Record<string, unknown>;
          if (!(await visible(event.kind, payload))) continue;
          const requestId = event.kind === 'approval_request' ? event.entity : String(payload.request_id);
          await stream.writeSSE({
            event: 'approval',
            id: String(event.seq),
            data: JSON.stringify({ seq: event.seq, kind: event.kind, request_id: requestId, log }),
          });
        }
        if (page.length < 500) await stream.sleep(pollMs);
      }
    });
  });
}
