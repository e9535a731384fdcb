import { z } from 'zod';
import { auditEventSchema } from './audit';
import {
  keysOf,
  OUTCOME_VALUES_TEXT,
  PROPOSAL_OUTCOMES,
  PROPOSAL_STAGES,
  STAGE_VALUES_TEXT,
} from './proposal-life';
import {
  approvalRequestRecordSchema,
  approvalResolutionRecordSchema,
  approvalUseRecordSchema,
  decisionRecordSchema,
  executionClaimRecordSchema,
  hostCheckSchema,
  observationRecordSchema,
  proposalPayloadSchema,
  proposalRecordSchema,
  refusedExecutionRecordSchema,
  toolRecordSchema,
  verificationRecordSchema,
  verificationStatusSchema,
} from './records';
import { effectiveVerificationSchema, recordedVerificationSchema } from './verification-status';

/** What the ledger answers with: records put together, and what it derives from them (never stored). */

/** `POST /v1/tools`. */
export const registeredToolSchema = z.object({
  tool: toolRecordSchema,
  /** The same registration (or a discovery of a registered tool): the stored one, unchanged. */
  replayed: z.boolean(),
});
export type RegisteredTool = z.output<typeof registeredToolSchema>;

/** `GET /v1/tools`. */
export const toolListSchema = z.object({ tools: z.array(toolRecordSchema) });

/** `POST /v1/proposals/{id}/decision`. */
export const decisionResultSchema = z.object({
  decision: decisionRecordSchema,
  approval: approvalRequestRecordSchema.nullable(),
});
export type DecisionResult = z.output<typeof decisionResultSchema>;

/** Where an approval request stands, as the ledger derives it (`used`: a single-use approval was used). */
export const APPROVAL_STATUSES = ['pending', 'approved', 'denied', 'expired', 'used'] as const;
export const approvalStatusSchema = z.enum(APPROVAL_STATUSES);
export type ApprovalStatus = z.output<typeof approvalStatusSchema>;

/** An approval request with its answer, its uses and the proposal it was opened for. */
export const approvalViewSchema = z.object({
  request: approvalRequestRecordSchema,
  resolution: approvalResolutionRecordSchema.nullable(),
  uses: z.array(approvalUseRecordSchema),
  status: approvalStatusSchema,
  /** The proposal the request was opened for: what the approver is shown and the payload hash covers. */
  proposal: proposalRecordSchema,
});
export type ApprovalView = z.output<typeof approvalViewSchema>;

/** What an approver is shown: the view plus exactly what will run, and its canonical bytes. */
export const approvalDetailSchema = approvalViewSchema.extend({
  payload: proposalPayloadSchema.meta({
    description:
      'Exactly what will run: action, server and tool, target and environment, arguments, side-effect class, conditions and the impact estimate',
  }),
  /**
   * RFC 8785 canonical JSON of `payload`: SHA-256 of these bytes is `request.payload_hash`,
   * unless arguments were erased since (`proposal.redacted`): they are gone from both.
   */
  canonical_payload: z.string().meta({
    description:
      'The payload as RFC 8785 canonical JSON: SHA-256 of these bytes is `request.payload_hash`, unless `proposal.redacted` names arguments erased since (their values are gone, so the bytes approved can no longer be shown)',
  }),
});
export type ApprovalDetail = z.output<typeof approvalDetailSchema>;

/** `GET /v1/approvals`. */
export const approvalPageSchema = z.object({
  approvals: z.array(approvalDetailSchema),
  /** Pass as `after` for the next page; null at the end. */
  next: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'Pass as `after` for the next page; null at the end' }),
});
export type ApprovalPage = z.output<typeof approvalPageSchema>;

/** `POST /v1/proposals/{id}/authorize`: execute now. */
export const authorizationSchema = z.object({
  proposal: proposalRecordSchema,
  decision: decisionRecordSchema,
  /** The approval use claimed for this execution, for `require_approval`. */
  approval_use: approvalUseRecordSchema.nullable(),
  /** The execution claim: who executes, and until when an observation is expected before the outcome is recorded `unknown`. */
  claim: executionClaimRecordSchema,
  /** The precondition checks, when the proposal has preconditions. */
  preconditions: z
    .object({ status: verificationStatusSchema, checks: z.array(hostCheckSchema) })
    .nullable()
    .meta({ description: 'The pre-execution checks, when the proposal has preconditions' }),
});
export type Authorization = z.output<typeof authorizationSchema>;

/**
 * Why a step asked for in the same request (`?authorize=`, `?verify=true`) was not taken. The
 * record written before it stands; the code is the one the step's own route would answer with.
 */
export const stepRefusalSchema = z
  .object({
    /** The status the step's own route would have answered with. */
    status: z.number().int(),
    code: z.string(),
    message: z.string(),
    details: z.unknown().optional(),
  })
  .meta({ description: 'The refusal the step’s own route would have answered with' });
export type StepRefusal = z.output<typeof stepRefusalSchema>;

/** What `propose` returns; `replayed` when the idempotency key had already been used with this payload. */
export const proposalResultSchema = z.object({
  proposal: proposalRecordSchema,
  /** Null while an external engine decides. */
  decision: decisionRecordSchema.nullable(),
  /** The approval request the decision waits on, for `require_approval`. */
  approval: approvalRequestRecordSchema.nullable(),
  /** True when the idempotency key matched an earlier proposal: nothing new was written. */
  replayed: z.boolean(),
  /**
   * Asked for with `?authorize=<payload hash>`: the authorization, when the decision allows the
   * call now (`allow`, a new proposal); otherwise null, and `authorize` is called on its own.
   */
  authorization: authorizationSchema.nullable().optional(),
  /** Asked for with `?authorize=`: why authorizing was refused (e.g. `PRECONDITION_FAILED`). */
  authorization_refused: stepRefusalSchema.nullable().optional(),
});
export type ProposalResult = z.output<typeof proposalResultSchema>;

/** `POST /v1/observations`. */
export const observationResultSchema = z.object({
  observation: observationRecordSchema,
  /** True when an observation for this proposal already existed; it is returned unchanged. */
  replayed: z.boolean(),
  /** Asked for with `?verify=true`: the verification the server ran on a new observation. */
  verification: recordedVerificationSchema.nullable().optional(),
  /** Asked for with `?verify=true`: why the verification was not recorded. */
  verification_refused: stepRefusalSchema.nullable().optional(),
});
export type ObservationResult = z.output<typeof observationResultSchema>;

/** Everything recorded about one proposal, with its derived outcome and the events behind it. */
export const proposalStorySchema = z.object({
  proposal: proposalRecordSchema,
  decision: decisionRecordSchema.nullable(),
  approval: approvalViewSchema.nullable(),
  /** The execution claim `authorize` recorded, if any; a lapsed one is swept into an `unknown` observation. */
  claim: executionClaimRecordSchema.nullable(),
  observation: observationRecordSchema.nullable(),
  /** Executions the ledger refused; each attempt is kept as evidence. */
  refusals: z.array(refusedExecutionRecordSchema),
  /** Every verification record, superseded ones included, in chain order. */
  verifications: z.array(verificationRecordSchema),
  /** The latest verification record (not the status: see `verification_status`). */
  verification: verificationRecordSchema
    .nullable()
    .meta({ description: 'The latest record, not the status: see `verification_status`.' }),
  /** The status derived from all the verification records; the outcome follows it. */
  verification_status: effectiveVerificationSchema,
  outcome: z.enum(keysOf(PROPOSAL_OUTCOMES)).meta({
    description: `What is known about the action's result, derived from the observation and the verification status:\n\n${OUTCOME_VALUES_TEXT}`,
  }),
  stage: z.enum(keysOf(PROPOSAL_STAGES)).meta({
    description: `How far the proposal got on its way to execution:\n\n${STAGE_VALUES_TEXT}`,
  }),
  events: z.array(auditEventSchema),
  /**
   * True while a verification asked to run in the background has not finished (the server's
   * queue, not the chain: the records it produces are). Absent where the story is read from
   * the ledger alone.
   */
  verifying: z
    .boolean()
    .optional()
    .meta({ description: 'True while a background verification of this proposal has not finished.' }),
  /** The background verifications not finished yet. */
  verification_jobs: z
    .array(
      z.object({
        id: z.string(),
        observation_id: z.string(),
        requested_by: z.string(),
        requested_at: z.string(),
      }),
    )
    .optional(),
});
export type ProposalStory = z.output<typeof proposalStorySchema>;

/** The answer of `POST /v1/observations/{id}/verify` with `Prefer: respond-async`: the job that will record the verification. */
export const verificationJobAcceptedSchema = z.object({
  verification_job: z.object({
    id: z.string(),
    observation_id: z.string(),
    proposal_id: z.string(),
    requested_by: z.string(),
    requested_at: z.string(),
    status: z.literal('queued'),
  }),
});

/** The cursor of a keyset-paged list: the seq of the last item's event. */
const nextCursorSchema = z
  .number()
  .int()
  .nullable()
  .meta({ description: 'Pass as `after` for the next page; null at the end' });

/** A proposal in a list: the record, where it stands and what is known of its result. */
export const proposalSummarySchema = z.object({
  /** The seq of the proposal's event: the list's order. */
  seq: z.number().int(),
  proposal: proposalRecordSchema,
  stage: z.enum(keysOf(PROPOSAL_STAGES)),
  outcome: z.enum(keysOf(PROPOSAL_OUTCOMES)),
  verification_status: verificationStatusSchema,
});
export type ProposalSummary = z.output<typeof proposalSummarySchema>;

/**
 * A proposal in a list whose story the server refuses to tell: a record row that does not
 * match its event or is missing, or a record that breaks a rule the server writes under. Its
 * own story answers with the same refusal; the integrity alarm is raised.
 */
export const proposalListErrorSchema = z
  .object({
    /** The seq of the proposal's event: the list's order. */
    seq: z.number().int(),
    proposal_id: z.string(),
    /** The refusal its story answers with, e.g. `RECORD_INTEGRITY_VIOLATION`, `SUPERSESSION_INVALID`. */
    error: z.object({ code: z.string(), message: z.string() }),
  })
  .meta({
    description:
      'A proposal whose records the server refuses to derive a story from (a row that does not match the chain, or a record that breaks its rules): the code its story answers with. The integrity alarm is raised; run `vouch verify`.',
  });
export type ProposalListError = z.output<typeof proposalListErrorSchema>;

/** An item of `GET /v1/proposals`: the summary, or (with `error`) why the server refuses one. */
export const proposalListItemSchema = z.union([proposalSummarySchema, proposalListErrorSchema]);
export type ProposalListItem = z.output<typeof proposalListItemSchema>;

/** `GET /v1/proposals`. */
export const proposalPageSchema = z.object({
  proposals: z.array(proposalListItemSchema),
  next: nextCursorSchema,
});
export type ProposalPage = z.output<typeof proposalPageSchema>;

/** `GET /v1/verifications`. */
export const verificationPageSchema = z.object({
  verifications: z.array(z.object({ seq: z.number().int(), verification: verificationRecordSchema })),
  next: nextCursorSchema,
});
export type VerificationPage = z.output<typeof verificationPageSchema>;

/** `GET /v1/logs`: the logs this key may read. */
export const logListSchema = z.object({ logs: z.array(z.string()) });
export type LogList = z.output<typeof logListSchema>;

/** One server-sent event of `GET /v1/approvals/events`: a request opened or answered. */
export const approvalEventSchema = z.object({
  /** The seq of the event that recorded it: pass the last one seen as `Last-Event-ID` to resume. */
  seq: z.number().int(),
  kind: z.enum(['approval_request', 'approval_resolution']),
  request_id: z.string(),
  log: z.string(),
});
export type ApprovalEvent = z.output<typeof approvalEventSchema>;
