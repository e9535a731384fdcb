import { createRoute, type z } from '@hono/zod-openapi';
import { canonicalJson } from '@vouch/audit';
import { type ApprovalView, proposalPayloadOf, type Records } from '@vouch/ledger';
import type { VouchApp } from '../app';
import { assertEnvironment, mayActIn, requireRole } from '../auth/authorize';
import { jsonBody } from '../http/json-body';
import {
  bearerSecurity,
  bodyErrors,
  commonErrors,
  errorResponseSpec,
  STANDBY_READ_NOTE,
} from '../schemas/common';
import {
  ApprovalIdParamSchema,
  ApprovalListQuerySchema,
  ApprovalPageSchema,
  ApprovalSchema,
  ApproveInputSchema,
  DenyInputSchema,
  LogQuerySchema,
} from '../schemas/records';
import { ACCESS, rolesNote } from './access';
import { logOf, rawBody, recordContext } from './record-context';

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

const listApprovals = createRoute({
  method: 'get',
  path: '/v1/approvals',
  tags: ['approvals'],
  summary: 'Approval requests, oldest first (e.g. `?status=pending`)',
  description: `A key limited to environments sees only requests in them. ${rolesNote(ACCESS.listApprovals)}\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listApprovals)] as const,
  request: { query: ApprovalListQuerySchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'One page; pass `next` as `after` for the next',
      content: json(ApprovalPageSchema),
    },
  },
});

const getApproval = createRoute({
  method: 'get',
  path: '/v1/approvals/{id}',
  tags: ['approvals'],
  summary: 'Exactly what will run if this is approved',
  description: `The canonical payload (its SHA-256 is the approval's \`payload_hash\`), tool, target, environment, side-effect class, impact estimate, requester and expiry. ${rolesNote(ACCESS.getApproval)}\n\n${STANDBY_READ_NOTE}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.getApproval)] as const,
  request: { params: ApprovalIdParamSchema, query: LogQuerySchema },
  responses: {
    ...commonErrors,
    200: { description: 'The request and where it stands', content: json(ApprovalSchema) },
    404: errorResponseSpec('No such request in this log (`NOT_FOUND`)'),
  },
});

function resolveRoute(kind: 'approve' | 'deny') {
  return createRoute({
    method: 'post',
    path: `/v1/approvals/{id}/${kind}`,
    tags: ['approvals'],
    summary: kind === 'approve' ? 'Approve (once, or for a window)' : 'Deny, with an optional reason',
    description:
      kind === 'approve'
        ? `Approves exactly the payload shown (its hash). Nobody approves their own request (\`SELF_APPROVAL\`); a request is answered once (\`APPROVAL_RESOLVED\`). ${rolesNote(ACCESS.resolveApproval)}`
        : `A denial answers only this request. ${rolesNote(ACCESS.resolveApproval)}`,
    security: bearerSecurity,
    middleware: [requireRole(...ACCESS.resolveApproval), jsonBody({ required: false })] as const,
    request: {
      params: ApprovalIdParamSchema,
      query: LogQuerySchema,
      body: { required: false, content: json(kind === 'approve' ? ApproveInputSchema : DenyInputSchema) },
    },
    responses: {
      ...commonErrors,
      ...bodyErrors,
      200: { description: 'Answered', content: json(ApprovalSchema) },
      403: errorResponseSpec('Your own request (`SELF_APPROVAL`), or not your role or environment'),
      404: errorResponseSpec('No such request (`NOT_FOUND`)'),
      409: errorResponseSpec('Already answered (`APPROVAL_RESOLVED`) or expired (`APPROVAL_EXPIRED`)'),
    },
  });
}

/**
 * An approval as an approver must see it: the records, plus the exact payload and its
 * canonical bytes, so "what I approved" can be checked against `payload_hash` by anyone.
 */
export function approvalView(view: ApprovalView) {
  const payload = proposalPayloadOf(view.proposal);
  return { ...view, payload, canonical_payload: canonicalJson(payload) };
}

/** `/v1/approvals`: humans approve or deny the exact payload that will run. */
export function registerApprovalRoutes(app: VouchApp, deps: { records: Records }): void {
  const { records } = deps;

  app.openapi(listApprovals, async (c) => {
    const log = logOf(c);
    const { status, after, limit } = c.req.valid('query');
    const { records: reads } = await c.get('readSide')();
    const page = await reads.listApprovals(log, {
      ...(status ? { status } : {}),
      ...(after !== undefined ? { after } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    const principal = c.get('principal');
    const approvals = page.approvals
      .filter((v) => mayActIn(principal, v.request.environment))
      .map(approvalView);
    return c.json({ approvals, next: page.next }, 200);
  });

  app.openapi(getApproval, async (c) => {
    const log = logOf(c);
    const { records: reads } = await c.get('readSide')();
    const view = await reads.getApproval(log, c.req.valid('param').id);
    assertEnvironment(c.get('principal'), view.request.environment);
    return c.json(approvalView(view), 200);
  });

  for (const kind of ['approve', 'deny'] as const) {
    app.openapi(resolveRoute(kind), async (c) => {
      const log = logOf(c);
      const { id } = c.req.valid('param');
      // The environment of a request never changes, so checking it before the write is safe.
      const current = await records.getApproval(log, id);
      assertEnvironment(c.get('principal'), current.request.environment);
      const body = { ...rawBody(c), request_id: id };
      const view =
        kind === 'approve'
          ? await records.approve(recordContext(c, log), body)
          : await records.deny(recordContext(c, log), body);
      return c.json(approvalView(view), 200);
    });
  }
}
