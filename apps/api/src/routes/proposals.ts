import { createRoute, type z } from '@hono/zod-openapi';
import type { ProposalRecord, RecordContext, Records } from '@vouch/ledger';
import type { Authorization, ProposalListItem, StepRefusal } from '@vouch/records';
import type { Context } from 'hono';
import type { VouchApp } from '../app';
import { authorizeWithPreconditions } from '../application/authorize-with-preconditions';
import { unsigned } from '../application/unsigned-context';
import { assertEnvironment, assertRole, mayActIn, requireRole } from '../auth/authorize';
import { asStepRefusal } from '../error-response';
import type { AppEnv } from '../http/app-env';
import { jsonBody } from '../http/json-body';
import { OUTCOME_VALUES_TEXT, PROPOSAL_LIFE_DIAGRAM, STAGE_VALUES_TEXT } from '../openapi/proposal-life';
import type { ExternalDecider } from '../policy/external-decider';
import {
  bearerSecurity,
  bodyErrors,
  commonErrors,
  errorResponseSpec,
  STANDBY_READ_NOTE,
} from '../schemas/common';
import {
  AuthorizationSchema,
  AuthorizeInputSchema,
  DecisionInputSchema,
  DecisionResultSchema,
  LogQuerySchema,
  ProposalIdParamSchema,
  ProposalInputSchema,
  ProposalListQuerySchema,
  ProposalPageSchema,
  ProposalResultSchema,
  ProposeQuerySchema,
  StorySchema,
} from '../schemas/records';
import type { VerificationHost } from '../verification';
import type { VerificationQueue } from '../verification-queue';
import { ACCESS, rolesNote } from './access';
import { definedOnly, logOf, rawBody, recordContext } from './record-context';

const json = <T extends z.ZodType>(schema: T) => ({ 'application/json': { schema } });

const propose = createRoute({
  method: 'post',
  path: '/v1/proposals',
  tags: ['proposals'],
  summary: 'Propose an action',
  description: `A proposal is not a decision. With the built-in policy the answer carries the decision (201). With an external policy engine the server asks (\`server.policy.decisionUrl\`), the answer carries the engine's decision (201); when the engine is down, slow or answers nonsense, or when no URL is configured and the engine posts its decisions, the proposal waits (202: never an allow by default) and the server asks again in the background. The postconditions the tool's registration requires are added to the payload whatever the proposal declares (\`origin: registry\`; an identical one the proposal declared is merged into it); one whose params cannot be bound to this payload refuses the proposal (422 \`POSTCONDITION_BINDING_FAILED\`, nothing written). A condition may not carry \`origin\` or \`verifiers\`; names (action, server, tool, target kind, conditions) are plain identifiers (400 \`IDENTIFIER_INVALID\`). An idempotency key is its requester's own: the same key with the same payload replays the stored result (200, \`replayed: true\`) and never re-executes; with another payload it is \`IDEMPOTENCY_CONFLICT\`; another requester's use of the same key is another proposal. A key limited to environments cannot propose outside them. The fast path: with \`?authorize=<payload hash>\` (and optionally \`&claim_seconds=\`, the claim's deadline) an allowed new proposal is also authorized in the same request (\`authorization\`), exactly as \`POST /v1/proposals/{id}/authorize\` would; a refusal comes back as \`authorization_refused\` beside the recorded proposal, and any other decision leaves \`authorization\` null. The key then needs the roles of both routes. ${rolesNote(ACCESS.propose)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.propose), jsonBody({ required: true })] as const,
  request: { query: ProposeQuerySchema, body: { required: true, content: json(ProposalInputSchema) } },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: { description: 'Recorded and decided', content: json(ProposalResultSchema) },
    202: { description: 'Recorded; awaiting an external decision', content: json(ProposalResultSchema) },
    200: {
      description: 'Replayed: this idempotency key was used with this payload',
      content: json(ProposalResultSchema),
    },
    409: errorResponseSpec(
      'The requester used the idempotency key for another payload (`IDEMPOTENCY_CONFLICT`)',
    ),
    422: errorResponseSpec(
      "A postcondition the tool's registration requires cannot be bound to this payload (`POSTCONDITION_BINDING_FAILED`: `details.postcondition`, `param`, `reason`)",
    ),
  },
});

const listProposals = createRoute({
  method: 'get',
  path: '/v1/proposals',
  tags: ['proposals'],
  summary: 'Proposals in chain order, filtered (e.g. `?outcome=verification_failed`)',
  description: `Filters combine: \`outcome\` and \`stage\` (derived, as in the story), \`tool\`, \`server\`, \`requester\`, \`environment\`, and \`since\`/\`until\` on the proposal time. Pages are keyset-paged by event seq, so a page never shifts. With \`outcome\` or \`stage\` one page reads at most \`limit × 10\` proposals, so it can hold fewer than \`limit\` and still have a \`next\`. A key limited to environments sees only proposals in them. A proposal whose story the server refuses (a record that does not match the chain, or breaks a rule the server writes under) is an item \`{ seq, proposal_id, error: { code, message } }\` whatever the filters derive, never a failed list; its story answers with that refusal, and the integrity alarm is raised. ${rolesNote(ACCESS.listProposals)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.listProposals)] as const,
  request: { query: ProposalListQuerySchema },
  responses: {
    ...commonErrors,
    200: {
      description: 'One page; pass `next` as `after` for the next',
      content: json(ProposalPageSchema),
    },
  },
});

const getProposal = createRoute({
  method: 'get',
  path: '/v1/proposals/{id}',
  tags: ['proposals'],
  summary: 'The whole story of a proposal',
  description: `Proposal, decision, approval, observation, refused executions, verifications, the derived \`stage\` and \`outcome\`, and the audit events that record them. ${rolesNote(ACCESS.getProposal)}\n\n${STANDBY_READ_NOTE}\n\nThe outer states are the \`outcome\`; inside \`not_executed\`, the \`stage\`. These names replace \`completed\`, \`failed\`, \`aborted\`, \`pending\` and the stages \`refused\`, \`verified\` of version 0.1.0 (a breaking rename before 1.0; docs/records.md maps old to new).\n\n\`outcome\`:\n\n${OUTCOME_VALUES_TEXT}\n\n\`stage\`:\n\n${STAGE_VALUES_TEXT}\n\n\`\`\`mermaid\n${PROPOSAL_LIFE_DIAGRAM}\n\`\`\``,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.getProposal)] as const,
  request: { params: ProposalIdParamSchema, query: LogQuerySchema },
  responses: {
    ...commonErrors,
    200: { description: 'The story', content: json(StorySchema) },
    404: errorResponseSpec('No such proposal in this log (`NOT_FOUND`)'),
  },
});

const decide = createRoute({
  method: 'post',
  path: '/v1/proposals/{id}/decision',
  tags: ['proposals'],
  summary: 'Record the decision of an external policy engine',
  description: `One proposal, one decision (\`DECISION_EXISTS\`). No decision can make an unregistered tool executable (\`TOOL_NOT_REGISTERED\`). ${rolesNote(ACCESS.decide)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.decide), jsonBody({ required: true })] as const,
  request: {
    params: ProposalIdParamSchema,
    query: LogQuerySchema,
    body: { required: true, content: json(DecisionInputSchema) },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    201: {
      description: 'Recorded',
      content: json(DecisionResultSchema),
    },
    404: errorResponseSpec('No such proposal (`NOT_FOUND`)'),
    409: errorResponseSpec('Already decided (`DECISION_EXISTS`)'),
    422: errorResponseSpec('The tool is not registered (`TOOL_NOT_REGISTERED`)'),
  },
});

const authorize = createRoute({
  method: 'post',
  path: '/v1/proposals/{id}/authorize',
  tags: ['proposals'],
  summary: 'Before executing: check the decision, run the preconditions, claim the approval',
  description: `Call right before the tool call; every observation needs the claim this records (\`EXECUTION_NOT_CLAIMED\` otherwise). The server's verifiers check the proposal's preconditions, and the checks with the status derived from them are recorded in the claim (\`claim.preconditions\`). A failed precondition is \`PRECONDITION_FAILED\`; one no check proved is \`PRECONDITION_UNPROVEN\` unless the tool's registration says \`unproven_preconditions: warn\`; either way the attempt is recorded as a refused execution carrying the checks, and no approval is used. The decision and approval are checked (an approval given while a key of its approver was live that has since been revoked no longer authorizes: \`APPROVER_KEY_REVOKED\`) and a single-use approval is claimed, so a second executor is refused up front, and an execution claim is recorded with a deadline (\`claim_seconds\`, at most the server’s \`VOUCH_EXECUTION_CLAIM_SECONDS\`, default 600): if no observation arrives by then, the server records the outcome as \`unknown\` and the proposal never runs again. Authorizing again before the deadline answers the same claim; after it, \`EXECUTION_CLAIM_LAPSED\`. ${rolesNote(ACCESS.authorize)}`,
  security: bearerSecurity,
  middleware: [requireRole(...ACCESS.authorize), jsonBody({ required: false })] as const,
  request: {
    params: ProposalIdParamSchema,
    query: LogQuerySchema,
    body: { required: false, content: json(AuthorizeInputSchema) },
  },
  responses: {
    ...commonErrors,
    ...bodyErrors,
    200: { description: 'Authorized: execute now', content: json(AuthorizationSchema) },
    403: errorResponseSpec(
      'Not authorized: `EXECUTION_NOT_AUTHORIZED`, `IDENTITY_MISMATCH`, `APPROVAL_SCOPE_MISMATCH`, or the key’s role',
    ),
    409: errorResponseSpec(
      '`APPROVAL_EXPIRED`, `APPROVAL_CONSUMED`, `APPROVAL_PAYLOAD_MISMATCH`, `APPROVER_KEY_REVOKED`, `OBSERVATION_EXISTS`, `EXECUTION_CLAIM_LAPSED`',
    ),
    412: errorResponseSpec(
      'A precondition failed (`PRECONDITION_FAILED`) or no check proved it where the tool blocks unproven ones (`PRECONDITION_UNPROVEN`); the attempt is recorded, and details carry `refusal_id`, `status` and `checks`',
    ),
  },
});

/** `/v1/proposals`: propose, read the story, decide (external policy), authorize execution. */
export function registerProposalRoutes(
  app: VouchApp,
  deps: {
    records: Records;
    verification: VerificationHost;
    queue: VerificationQueue;
    /** The external engine the server asks about each new proposal, when one is configured. */
    policyEngine?: ExternalDecider;
  },
): void {
  const { records } = deps;

  /** The `authorize` route, and the second half of `propose?authorize=`. */
  const authorizeExecution = (
    ctx: RecordContext,
    c: Context<AppEnv>,
    proposal: ProposalRecord,
    body: Record<string, unknown>,
  ): Promise<Authorization> =>
    authorizeWithPreconditions({
      records,
      verification: deps.verification,
      ctx,
      proposal,
      body,
      signal: c.req.raw.signal,
    });

  app.openapi(propose, async (c) => {
    const log = logOf(c);
    const principal = c.get('principal');
    const { authorize: authorizeHash, claim_seconds: claimSeconds } = c.req.valid('query');
    // Refused before anything is written: a staging gateway key proposing a production
    // action, and a key asking for the authorization it could not ask for on its own.
    assertEnvironment(principal, c.req.valid('json').target.env);
    if (authorizeHash !== undefined) assertRole(principal, ACCESS.authorize);
    let result = await records.propose(recordContext(c, log), rawBody(c));
    if (!result.replayed && result.decision === null && deps.policyEngine) {
      const asked = await deps.policyEngine.decide(log, result.proposal);
      if (asked.status === 'decided')
        result = { ...result, decision: asked.decision, approval: asked.approval };
      else if (asked.status === 'already_decided') {
        const told = await records.story(log, result.proposal.id);
        result = { ...result, decision: told.decision, approval: told.approval?.request ?? null };
      }
    }
    const status = result.replayed ? 200 : result.decision === null ? 202 : 201;
    if (authorizeHash === undefined) return c.json(result, status);
    let authorization: Authorization | null = null;
    let refused: StepRefusal | null = null;
    // A replayed proposal may have been authorized, or executed, before: the caller reads its story.
    if (!result.replayed && result.decision?.verdict === 'allow') {
      try {
        // The request's signature is the proposal's; the claim is written unsigned.
        const ctx = unsigned(recordContext(c, log));
        authorization = await authorizeExecution(ctx, c, result.proposal, {
          payload_hash: authorizeHash,
          ...(claimSeconds === undefined ? {} : { claim_seconds: Number(claimSeconds) }),
        });
      } catch (error) {
        refused = asStepRefusal(error, c);
      }
    }
    return c.json({ ...result, authorization, authorization_refused: refused }, status);
  });

  app.openapi(listProposals, async (c) => {
    const log = logOf(c);
    const query = c.req.valid('query');
    const page = await records.listProposals(log, {
      ...definedOnly({
        outcome: query.outcome,
        stage: query.stage,
        tool_name: query.tool,
        server_id: query.server,
        requester: query.requester,
        environment: query.environment,
        after: query.after,
        limit: query.limit,
      }),
      // Stored times are ISO 8601 UTC with milliseconds: compare like with like.
      ...(query.since !== undefined ? { since: new Date(query.since).toISOString() } : {}),
      ...(query.until !== undefined ? { until: new Date(query.until).toISOString() } : {}),
    });
    const principal = c.get('principal');
    // A proposal whose story the server refuses is an error item (its own story answers with
    // the refusal), placed in an environment by its stored row: the only one there is.
    const proposals: ProposalListItem[] = [];
    for (const item of page.items) {
      if ('error' in item) {
        const { stored_environment: environment, ...listed } = item;
        if (mayActIn(principal, environment)) proposals.push(listed);
      } else if (mayActIn(principal, item.proposal.target.env)) proposals.push(item);
    }
    return c.json({ proposals, next: page.next }, 200);
  });

  app.openapi(getProposal, async (c) => {
    const log = logOf(c);
    const { records: reads } = await c.get('readSide')();
    const story = await reads.story(log, c.req.valid('param').id);
    const jobs = await deps.queue.pendingOf(log, story.proposal.id);
    return c.json(
      {
        ...story,
        verifying: jobs.length > 0,
        verification_jobs: jobs.map((j) => ({
          id: j.id,
          observation_id: j.observationId,
          requested_by: j.requestedBy,
          requested_at: j.requestedAt,
        })),
      },
      200,
    );
  });

  app.openapi(decide, async (c) => {
    const log = logOf(c);
    const { id } = c.req.valid('param');
    const proposal = await records.getProposal(log, id);
    assertEnvironment(c.get('principal'), proposal.target.env);
    const result = await records.decide(recordContext(c, log), { ...rawBody(c), proposal_id: id });
    return c.json(result, 201);
  });

  app.openapi(authorize, async (c) => {
    const log = logOf(c);
    const { id } = c.req.valid('param');
    const proposal = await records.getProposal(log, id);
    assertEnvironment(c.get('principal'), proposal.target.env);
    return c.json(await authorizeExecution(recordContext(c, log), c, proposal, rawBody(c)), 200);
  });
}
