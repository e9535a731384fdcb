import { z } from '@hono/zod-openapi';
import {
  APPROVAL_STATUSES,
  approvalDetailSchema,
  approvalEventSchema,
  approvalPageSchema,
  approvalRequestRecordSchema,
  approvalResolutionRecordSchema,
  approvalUseRecordSchema,
  approveInputSchema,
  authorizationSchema,
  authorizeInputSchema,
  decisionInputSchema,
  decisionRecordSchema,
  decisionResultSchema,
  denyInputSchema,
  effectiveVerificationSchema,
  executionClaimRecordSchema,
  hostCheckSchema,
  logListSchema,
  observationInputSchema,
  observationRecordSchema,
  observationResultSchema,
  PROPOSAL_OUTCOMES,
  PROPOSAL_STAGES,
  proposalInputSchema,
  proposalPageSchema,
  proposalRecordSchema,
  proposalResultSchema,
  proposalStorySchema,
  recordedVerificationSchema,
  registeredToolSchema,
  reverificationInputSchema,
  toolDefinitionApprovalInputSchema,
  toolInputSchema,
  toolListSchema,
  toolRecordSchema,
  verificationCheckSchema,
  verificationInputSchema,
  verificationJobAcceptedSchema,
  verificationPageSchema,
  verificationRecordSchema,
  verificationStatusSchema,
} from '@vouch/records';
import type { Check } from '@vouch/verifier-sdk';
import { LogIdSchema, pageLimitParam, seqCursorParam } from './common';
import { component } from './component';

/*
 * Every record, body and answer is declared once, in `@vouch/records`: the ledger parses
 * bodies with the same schemas and its answers type-check against them in the routes, so the
 * OpenAPI document cannot drift from what is accepted and returned. This file only names
 * them as components and adds what the URL carries (ids, `?log=`).
 */

// ---- requests ----------------------------------------------------------------------------

/**
 * A body schema without the id the URL carries (the route adds it back before the records
 * service parses the body again). Built from the schema's own `shape`, so every field and its
 * rules are the records'; object-level refinements are enforced by the ledger's parse.
 */
function withoutUrlId<Shape extends z.ZodRawShape, K extends keyof Shape & string>(
  schema: { shape: Shape },
  key: K,
): z.ZodObject<Omit<Shape, K>, z.core.$strict> {
  const { [key]: _inUrl, ...rest } = schema.shape;
  return z.strictObject(rest as Omit<Shape, K>);
}

export const ToolInputSchema = component(toolInputSchema, 'ToolInput');

export const ToolDefinitionApprovalInputSchema = component(
  toolDefinitionApprovalInputSchema,
  'ToolDefinitionApprovalInput',
);

export const ProposalInputSchema = component(proposalInputSchema, 'ProposalInput', {
  description: 'What the agent asks to do. The requester is the caller’s key, never a field here.',
});

export const DecisionInputSchema = withoutUrlId(decisionInputSchema, 'proposal_id').openapi('DecisionInput', {
  description: 'A repair verdict carries a `repair`, and only a repair verdict does.',
});

export const ApproveInputSchema = withoutUrlId(approveInputSchema, 'request_id').openapi('ApproveInput');

export const DenyInputSchema = withoutUrlId(denyInputSchema, 'request_id').openapi('DenyInput');

export const AuthorizeInputSchema = withoutUrlId(authorizeInputSchema, 'proposal_id').openapi(
  'AuthorizeInput',
);

export const ObservationInputSchema = component(observationInputSchema, 'ObservationInput', {
  description: 'What the tool really returned, posted by the gateway after the call.',
});

export const VerificationInputSchema = component(verificationInputSchema, 'VerificationInput', {
  description:
    'Checks from an external verifier. There is no status field: the status is derived from the checks against the proposal’s declared postconditions. A check answers the postcondition named by its `postcondition` field, or else by its `name`. A re-verification names the records it `supersedes` and its `reason` (both or neither); only a verifier that is not the audited party may supersede.',
});

export const ReverificationInputSchema = component(reverificationInputSchema, 'ReverificationInput', {
  description:
    'Optional: run the verifiers as a re-verification that supersedes the named records, with the reason (both or neither). The gateway may ask for verification but never supersede.',
});

/** `?log=` on every record route: which log (tenant) the call reads or writes. Default `default`. */
export const LogQuerySchema = z.strictObject({
  log: LogIdSchema.optional().openapi({
    param: { name: 'log', in: 'query' },
    description: 'The log (tenant) to use; default `default`',
  }),
});

export const ProposeQuerySchema = LogQuerySchema.extend({
  authorize: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be the payload hash the caller computed, lowercase hex SHA-256')
    .optional()
    .openapi({
      param: { name: 'authorize', in: 'query' },
      description:
        'The payload hash the caller computed. When the decision is `allow` (a new proposal), the server also authorizes the execution in this request, bound to this hash: the answer carries `authorization` (or `authorization_refused`), and the separate `authorize` call is not needed.',
    }),
  claim_seconds: z
    .string()
    .regex(/^[1-9][0-9]{0,4}$/, 'must be a whole number of seconds, 1 to 86400')
    .refine((value) => Number(value) <= 86_400, 'must be at most 86400')
    .optional()
    .openapi({
      param: { name: 'claim_seconds', in: 'query' },
      description:
        'With `authorize`: the deadline the execution claim asks for, as `claim_seconds` in the body of `POST /v1/proposals/{id}/authorize` (at most the server’s `VOUCH_EXECUTION_CLAIM_SECONDS`). A gateway asks for its tool’s time limit, so a call it could not report is recorded `unknown` soon after, not after the server’s default.',
    }),
});

export const ObserveQuerySchema = LogQuerySchema.extend({
  verify: z
    .enum(['true', 'false'])
    .optional()
    .openapi({
      param: { name: 'verify', in: 'query' },
      description:
        '`true`: run the server’s verifiers on the new observation in this request, as `POST /v1/observations/{id}/verify` would; the answer carries `verification` (or `verification_refused`).',
    }),
});

export const ApprovalListQuerySchema = LogQuerySchema.extend({
  status: z
    .enum(APPROVAL_STATUSES)
    .optional()
    .openapi({ param: { name: 'status', in: 'query' } }),
  after: seqCursorParam('The `next` of the previous page'),
  limit: pageLimitParam(500, 'Page size (default 50)'),
});

const afterParam = seqCursorParam('The `next` of the previous page');
const limitParam = pageLimitParam(500, 'Page size (default 50)');
const textFilter = (name: string, description: string) =>
  z
    .string()
    .min(1)
    .max(256)
    .optional()
    .openapi({ param: { name, in: 'query' }, description });
const timeFilter = (name: string, description: string) =>
  z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({ param: { name, in: 'query' }, description, example: '2026-12-01T00:00:00Z' });

export const ProposalListQuerySchema = LogQuerySchema.extend({
  outcome: z
    .enum(Object.keys(PROPOSAL_OUTCOMES) as [keyof typeof PROPOSAL_OUTCOMES])
    .optional()
    .openapi({ param: { name: 'outcome', in: 'query' }, description: 'Derived outcome (see the story)' }),
  stage: z
    .enum(Object.keys(PROPOSAL_STAGES) as [keyof typeof PROPOSAL_STAGES])
    .optional()
    .openapi({ param: { name: 'stage', in: 'query' }, description: 'Derived stage (see the story)' }),
  tool: textFilter('tool', 'Tool name'),
  server: textFilter('server', 'Tool server id'),
  requester: textFilter('requester', 'Identity that proposed, e.g. `agent:billing-bot`'),
  environment: textFilter('environment', 'Target environment'),
  since: timeFilter('since', 'Proposed at or after this time (ISO 8601)'),
  until: timeFilter('until', 'Proposed before this time (ISO 8601)'),
  after: afterParam,
  limit: limitParam,
});

export const VerificationListQuerySchema = LogQuerySchema.extend({
  status: verificationStatusSchema
    .optional()
    .openapi({ param: { name: 'status', in: 'query' }, description: 'The status the record was given' }),
  after: afterParam,
  limit: limitParam,
});

export const ApprovalEventsQuerySchema = LogQuerySchema.extend({
  after: seqCursorParam('Replay from after this seq (else `Last-Event-ID`, else from now)'),
});

function idParam(name: string, example: string) {
  return z.object({
    id: z
      .string()
      .min(1)
      .max(256)
      .openapi({ param: { name: 'id', in: 'path' }, example, description: `The ${name} id` }),
  });
}

export const ProposalIdParamSchema = idParam('proposal', 'prop_0d9c…');
export const ApprovalIdParamSchema = idParam('approval request', 'apr_5b1e…');
export const ObservationIdParamSchema = idParam('observation', 'obs_77a0…');

// ---- responses ---------------------------------------------------------------------------

export const ToolSchema = component(toolRecordSchema, 'Tool');
export const RegisteredToolSchema = registeredToolSchema;
export const ToolListSchema = toolListSchema;
export const ProposalSchema = component(proposalRecordSchema, 'Proposal');
export const DecisionSchema = component(decisionRecordSchema, 'Decision');
export const ApprovalRequestSchema = component(approvalRequestRecordSchema, 'ApprovalRequest');
component(approvalResolutionRecordSchema, 'ApprovalResolution');
component(approvalUseRecordSchema, 'ApprovalUse');
component(executionClaimRecordSchema, 'ExecutionClaim');
export const ApprovalSchema = component(approvalDetailSchema, 'Approval');
export const ApprovalPageSchema = approvalPageSchema;
export const ObservationSchema = component(observationRecordSchema, 'Observation');
export const ObservationResultSchema = observationResultSchema;
component(verificationCheckSchema, 'Check');
component(hostCheckSchema, 'HostCheck');
// The verifier host declares its check in @vouch/verifier-sdk (which depends on nothing of ours).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const hostCheckAgrees: Same<Check, z.output<typeof hostCheckSchema>> = true;
void hostCheckAgrees;
export const VerificationSchema = component(verificationRecordSchema, 'Verification');
export const VerificationStatusSchema = component(effectiveVerificationSchema, 'VerificationStatus');
export const RecordedVerificationSchema = component(recordedVerificationSchema, 'RecordedVerification');
export const ProposalResultSchema = component(proposalResultSchema, 'ProposalResult');
export const DecisionResultSchema = decisionResultSchema;
export const StorySchema = component(proposalStorySchema, 'Story');
export const VerificationJobAcceptedSchema = component(
  verificationJobAcceptedSchema,
  'VerificationJobAccepted',
);
export const ProposalPageSchema = component(proposalPageSchema, 'ProposalPage');
export const VerificationPageSchema = component(verificationPageSchema, 'VerificationPage');
export const LogListSchema = component(logListSchema, 'LogList');
export const ApprovalEventSchema = component(approvalEventSchema, 'ApprovalEvent');
export const AuthorizationSchema = component(authorizationSchema, 'Authorization');
