import { z } from '@hono/zod-openapi';
import {
  approveInputSchema,
  authorizeInputSchema,
  decisionInputSchema,
  denyInputSchema,
  observationInputSchema,
  PROPOSAL_OUTCOMES,
  PROPOSAL_STAGES,
  proposalInputSchema,
  reverificationInputSchema,
  toolInputSchema,
  verificationInputSchema,
} from '@vouch/ledger';
import { OUTCOME_VALUES_TEXT, STAGE_VALUES_TEXT } from '../openapi/proposal-life';
import { EventSchema } from './audit';
import { LogIdSchema } from './common';

/*
 * Request bodies are the ledger's own input schemas (the records service parses the same
 * body with them again), so the OpenAPI document cannot drift from what is accepted. Only
 * what the URL carries (ids) is added here. Response schemas document the records as the
 * ledger stores and hashes them (snake_case, plain JSON).
 *
 * `.extend({})` (and `withoutUrlId`) make a copy that is constructed now, after @hono/zod-openapi has added
 * `.openapi()` to zod: zod 4 copies methods onto each schema when it is built, so a schema the
 * ledger built before that import would not have it. The copy validates exactly the same.
 */

// ---- requests ----------------------------------------------------------------------------

/**
 * The ledger's body schema without the id the URL carries (the route adds it back before the
 * records service parses the body again). Built from the schema's own `shape`, so every field
 * and its rules are the ledger's; object-level refinements are enforced by the ledger's parse.
 */
function withoutUrlId<Shape extends z.ZodRawShape, K extends keyof Shape & string>(
  schema: { shape: Shape },
  key: K,
): z.ZodObject<Omit<Shape, K>, z.core.$strict> {
  const { [key]: _inUrl, ...rest } = schema.shape;
  return z.strictObject(rest as Omit<Shape, K>);
}

export const ToolInputSchema = toolInputSchema.extend({}).openapi('ToolInput');

// Annotated in terms of the ledger's schemas: the inferred types would name record types the
// ledger does not export (TS2742), and these are the same types anyway.
type SameAs<S extends z.ZodType> = z.ZodType<z.output<S>, z.input<S>>;

export const ProposalInputSchema: SameAs<typeof proposalInputSchema> = proposalInputSchema
  .extend({})
  .openapi('ProposalInput', {
    description: 'What the agent asks to do. The requester is the caller’s key, never a field here.',
  });

export const DecisionInputSchema: z.ZodType<
  Omit<z.output<typeof decisionInputSchema>, 'proposal_id'>,
  Omit<z.input<typeof decisionInputSchema>, 'proposal_id'>
> = withoutUrlId(decisionInputSchema, 'proposal_id').openapi('DecisionInput', {
  description: 'A repair verdict carries a `repair`, and only a repair verdict does.',
});

export const ApproveInputSchema = withoutUrlId(approveInputSchema, 'request_id').openapi('ApproveInput');

export const DenyInputSchema = withoutUrlId(denyInputSchema, 'request_id').openapi('DenyInput');

export const AuthorizeInputSchema = withoutUrlId(authorizeInputSchema, 'proposal_id').openapi(
  'AuthorizeInput',
);

export const ObservationInputSchema: SameAs<typeof observationInputSchema> = observationInputSchema
  .extend({})
  .openapi('ObservationInput', {
    description: 'What the tool really returned, posted by the gateway after the call.',
  });

export const VerificationInputSchema = verificationInputSchema.extend({}).openapi('VerificationInput', {
  description:
    'Checks from an external verifier. There is no status field: the status is derived from the checks against the proposal’s declared postconditions. A check answers the postcondition named by its `postcondition` field, or else by its `name`. A re-verification names the records it `supersedes` and its `reason` (both or neither); only a verifier that is not the audited party may supersede.',
});

export const ReverificationInputSchema = reverificationInputSchema.extend({}).openapi('ReverificationInput', {
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

export const ApprovalListQuerySchema = LogQuerySchema.extend({
  status: z
    .enum(['pending', 'approved', 'denied', 'expired', 'used'])
    .optional()
    .openapi({ param: { name: 'status', in: 'query' } }),
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ param: { name: 'after', in: 'query' }, description: 'The `next` of the previous page' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' } }),
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

const Json = z.unknown().openapi({ description: 'Any JSON value' });
const JsonObject = z.record(z.string(), z.unknown());
const Time = z.string().openapi({ description: 'ISO 8601 time' });
const Hash = z.string().regex(/^[0-9a-f]{64}$/);
const SideEffect = z.enum(['read_only', 'idempotent', 'compensatable', 'irreversible']);
const Condition = z.object({ name: z.string(), params: JsonObject.optional() });
const Target = z.object({ kind: z.string(), id: z.string().nullable(), env: z.string().nullable() });

export const ToolSchema = z
  .object({
    id: z.string(),
    server_id: z.string(),
    tool_name: z.string(),
    version: z.number().int(),
    side_effect: SideEffect,
    required_scopes: z.array(z.string()),
    allowed_environments: z.array(z.string()).nullable(),
    dry_run_tool: z.string().nullable(),
    compensation_tool: z.string().nullable(),
    approval_required: z.boolean(),
    requires_target_id: z.boolean(),
    max_approval_window_seconds: z.number().int().nullable(),
    source: z.enum(['manual', 'discovery']),
    registered_by: z.string(),
    registered_at: Time,
  })
  .openapi('Tool');

export const ProposalSchema = z
  .object({
    id: z.string(),
    idempotency_key: z.string(),
    requester: z.string(),
    requester_scopes: z.array(z.string()),
    requester_environments: z.array(z.string()).nullable(),
    action: z.string(),
    server_id: z.string(),
    tool_name: z.string(),
    target: Target,
    arguments: JsonObject,
    side_effect: SideEffect,
    preconditions: z.array(Condition),
    postconditions: z.array(Condition),
    impact: Json,
    payload_hash: Hash,
    proposed_at: Time,
  })
  .openapi('Proposal');

export const DecisionSchema = z
  .object({
    id: z.string(),
    proposal_id: z.string(),
    verdict: z.enum(['allow', 'deny', 'repair', 'require_approval']),
    reasons: z.array(
      z.object({
        code: z.string(),
        effect: z.enum(['deny', 'repair', 'require_approval', 'allow', 'note']),
        message: z.string(),
        details: JsonObject.optional(),
      }),
    ),
    repair: JsonObject.nullable(),
    authorized_identity: z.string().nullable(),
    source: z.string(),
    tool_id: z.string().nullable(),
    approval_request_id: z.string().nullable(),
    decided_by: z.string(),
    decided_at: Time,
  })
  .openapi('Decision');

export const ApprovalRequestSchema = z
  .object({
    id: z.string(),
    proposal_id: z.string(),
    payload_hash: Hash,
    requester: z.string(),
    server_id: z.string(),
    tool_name: z.string(),
    environment: z.string().nullable(),
    expires_at: Time,
    max_window_seconds: z.number().int(),
    requested_at: Time,
  })
  .openapi('ApprovalRequest');

const ResolutionSchema = z
  .object({
    id: z.string(),
    request_id: z.string(),
    resolution: z.enum(['approved', 'denied']),
    resolver: z.string(),
    validity: z.enum(['once', 'window']).nullable(),
    window_seconds: z.number().int().nullable(),
    window_source: z.string().nullable(),
    valid_until: Time.nullable(),
    comment: z.string().nullable(),
    resolved_at: Time,
  })
  .openapi('ApprovalResolution');

const UseSchema = z
  .object({
    id: z.string(),
    request_id: z.string(),
    resolution_id: z.string(),
    proposal_id: z.string(),
    validity: z.enum(['once', 'window']),
    used_by: z.string(),
    used_at: Time,
  })
  .openapi('ApprovalUse');

export const ApprovalSchema = z
  .object({
    request: ApprovalRequestSchema,
    resolution: ResolutionSchema.nullable(),
    uses: z.array(UseSchema),
    status: z.enum(['pending', 'approved', 'denied', 'expired', 'used']),
    proposal: ProposalSchema,
    payload: JsonObject.openapi({
      description:
        'Exactly what will run: action, server and tool, target and environment, arguments, side-effect class, conditions and the impact estimate',
    }),
    canonical_payload: z.string().openapi({
      description: 'The payload as RFC 8785 canonical JSON: SHA-256 of these bytes is `request.payload_hash`',
    }),
  })
  .openapi('Approval');

export const ObservationSchema = z
  .object({
    id: z.string(),
    proposal_id: z.string(),
    decision_id: z.string(),
    approval_use_id: z.string().nullable(),
    server_id: z.string(),
    tool_name: z.string(),
    executed_by: z.string(),
    outcome: z.enum(['succeeded', 'failed', 'unknown']),
    result: Json,
    transport_status: z.number().int().nullable(),
    tool_error: z.boolean().nullable(),
    started_at: Time.nullable(),
    finished_at: Time.nullable(),
    observed_at: Time,
  })
  .openapi('Observation');

const CheckSchema = z
  .looseObject({
    name: z.string(),
    status: z.string(),
    source: z.string().nullable(),
    reason: z.string().nullable().optional(),
  })
  .openapi('Check');

export const VerificationSchema = z
  .object({
    id: z.string(),
    observation_id: z.string(),
    proposal_id: z.string(),
    checks: z.array(CheckSchema),
    status: z.enum(['passed', 'failed', 'inconclusive']).openapi({
      description:
        'What this record’s checks prove about the declared postconditions, derived, never supplied. The proposal’s status is `verification_status`.',
    }),
    verifier: z.string(),
    verified_at: Time,
    undeclared: z.array(z.string()).optional().openapi({
      description: 'Names of checks that answer no declared postcondition: kept, never counted.',
    }),
    held: z.enum(['OUTCOME_UNKNOWN']).optional().openapi({
      description:
        'The status is held at inconclusive whatever the checks say: the tool’s outcome was unknown (a timeout) and had not settled.',
    }),
    supersedes: z.array(z.string()).optional().openapi({
      description: 'The records this re-verification replaces; they stay in the chain and the story.',
    }),
    reason: z.string().optional().openapi({ description: 'Why it supersedes them.' }),
  })
  .openapi('Verification');

export const VerificationStatusSchema = z
  .object({
    status: z.enum(['passed', 'failed', 'inconclusive']),
    reason: z.enum(['NOT_VERIFIED', 'NO_POSTCONDITIONS', 'OUTCOME_UNKNOWN', 'UNPROVEN']).nullable().openapi({
      description: 'Why the status is inconclusive; null when it is definitive.',
    }),
    postconditions: z.array(
      z.object({
        name: z.string(),
        status: z.enum(['passed', 'failed', 'inconclusive']),
        decided_by: z.array(z.string()),
      }),
    ),
    superseded: z.array(z.object({ id: z.string(), by: z.string() })),
    settles_at: Time.nullable().openapi({
      description: 'For an unknown outcome: from when a verification can be definitive.',
    }),
  })
  .openapi('VerificationStatus', {
    description:
      'The proposal’s status, derived from every verification record not superseded, one declared postcondition at a time: any failed → `failed`; every one passed → `passed`; otherwise `inconclusive`. A later inconclusive record never replaces a definitive result.',
  });

export const RecordedVerificationSchema = VerificationSchema.extend({
  verification_status: VerificationStatusSchema,
}).openapi('RecordedVerification', {
  description: 'The new record, and (not part of it) the proposal’s status with it counted.',
});

export const ProposalResultSchema = z
  .object({
    proposal: ProposalSchema,
    decision: DecisionSchema.nullable(),
    approval: ApprovalRequestSchema.nullable(),
    replayed: z.boolean(),
  })
  .openapi('ProposalResult');

/** The keys of a meanings table, as the tuple `z.enum` takes. */
const keysOf = <K extends string>(meanings: Record<K, string>) => Object.keys(meanings) as [K, ...K[]];

export const StorySchema = z
  .object({
    proposal: ProposalSchema,
    decision: DecisionSchema.nullable(),
    approval: ApprovalSchema.omit({ payload: true, canonical_payload: true }).nullable(),
    observation: ObservationSchema.nullable(),
    refusals: z.array(JsonObject),
    verifications: z.array(VerificationSchema),
    verification: VerificationSchema.nullable().openapi({
      description: 'The latest record, not the status: see `verification_status`.',
    }),
    verification_status: VerificationStatusSchema,
    outcome: z.enum(keysOf(PROPOSAL_OUTCOMES)).openapi({
      description: `What is known about the action's result, derived from the observation and the verification status:\n\n${OUTCOME_VALUES_TEXT}`,
    }),
    stage: z.enum(keysOf(PROPOSAL_STAGES)).openapi({
      description: `How far the proposal got on its way to execution:\n\n${STAGE_VALUES_TEXT}`,
    }),
    events: z.array(EventSchema),
  })
  .openapi('Story');

export const AuthorizationSchema = z
  .object({
    proposal: ProposalSchema,
    decision: DecisionSchema,
    approval_use: UseSchema.nullable(),
    preconditions: z
      .object({ status: z.enum(['passed', 'failed', 'inconclusive']), checks: z.array(CheckSchema) })
      .nullable()
      .openapi({ description: 'The pre-execution checks, when the proposal has preconditions' }),
  })
  .openapi('Authorization');
