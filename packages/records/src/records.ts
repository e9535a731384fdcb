import { z } from 'zod';
import { hashSchema, jsonObjectSchema, jsonValueSchema, timeSchema } from './fields';

/**
 * The records, as stored and as hashed into their audit events: plain JSON, snake_case, the
 * same shapes `@vouch/verifier-sdk` reads. A record never carries its own `log` or event
 * seq: those belong to the event, and the event's payload is the record exactly.
 */

/**
 * The author's own signature over what they asked for (docs/chain.md, "Records signed by their
 * authors"): a DSSE envelope whose payload is an author statement. Absent on unsigned records.
 */
export const authorSignatureSchema = z
  .object({
    payloadType: z.string(),
    payload: z.string(),
    signatures: z.array(z.object({ keyid: z.string(), sig: z.string() })),
  })
  .meta({ id: 'AuthorSignature', description: 'DSSE envelope over the author statement (Ed25519).' });

/**
 * How much harm a tool call can do, least to most. The order matters: when a proposal and
 * the registry disagree, the stricter class applies.
 */
export const SIDE_EFFECT_CLASSES = ['read_only', 'idempotent', 'compensatable', 'irreversible'] as const;
export const sideEffectClassSchema = z.enum(SIDE_EFFECT_CLASSES);
/** One of {@link SIDE_EFFECT_CLASSES}. */
export type SideEffectClass = z.output<typeof sideEffectClassSchema>;

/** What the policy concluded. Only `allow` and an approved `require_approval` can lead to execution. */
export const verdictSchema = z.enum(['allow', 'deny', 'repair', 'require_approval']);
export type Verdict = z.output<typeof verdictSchema>;

/** What a reason of a decision does to the verdict; `note` changes nothing. */
export const reasonEffectSchema = z.enum(['deny', 'repair', 'require_approval', 'allow', 'note']);

/** What a repair asks the gateway to do instead. */
export const repairKindSchema = z.enum(['dry_run_first', 'pin_environment']);

/** What the tool call did, as far as the gateway knows; `unknown` (timeout) is never retried automatically. */
export const observationOutcomeSchema = z.enum(['succeeded', 'failed', 'unknown']);
export type ObservationOutcome = z.output<typeof observationOutcomeSchema>;

/** Derived from the verification checks, never supplied. */
export const verificationStatusSchema = z.enum(['passed', 'failed', 'inconclusive']);
export type VerificationStatus = z.output<typeof verificationStatusSchema>;

/** How long an approval lasts: one execution, or any number of the same payload within a window. */
export const approvalValiditySchema = z.enum(['once', 'window']);
export type ApprovalValidity = z.output<typeof approvalValiditySchema>;

/** Where a registration came from; `discovery` (from a tool list) is not authorization. */
export const toolSourceSchema = z.enum(['manual', 'discovery']);

/** What an action touches. `id` and `env` may be missing; the policy denies such a target as ambiguous. */
export const targetSchema = z.object({
  kind: z.string(),
  id: z.string().nullable(),
  env: z.string().nullable(),
});
export type Target = z.output<typeof targetSchema>;

/**
 * Who required a condition: `registry`, the tool's registration (the operator); absent, the
 * agent that proposed. Only the server sets it, so an approver can tell the two apart.
 */
export const conditionOriginSchema = z.enum(['registry']);

/** A named condition on the world with parameters, checked by a verifier. */
export const conditionSchema = z.object({
  name: z.string(),
  params: jsonObjectSchema.optional(),
  /** `registry`: required by the tool's registration; absent: declared by the agent. */
  origin: conditionOriginSchema.optional(),
  /** The verifiers the operator lets prove it (configured names or identities); absent: any. */
  verifiers: z.array(z.string()).optional(),
});
export type Condition = z.output<typeof conditionSchema>;

/**
 * How a required postcondition's param gets its value from the proposal's payload (its action,
 * server, tool, target, arguments, side effect and impact): `pointer`, an RFC 6901 JSON pointer
 * (`/arguments/order_id`); `cel`, a CEL expression over those fields (`arguments.amount * 100.0`);
 * `value`, a literal.
 */
export const paramBindingSchema = z.union([
  z.object({ pointer: z.string() }),
  z.object({ cel: z.string() }),
  z.object({ value: jsonValueSchema }),
]);
export type ParamBinding = z.output<typeof paramBindingSchema>;

/** A postcondition the operator requires of every call of a tool, bound to each proposal's payload. */
export const requiredPostconditionSchema = z.object({
  name: z.string(),
  /** Each param's binding; the proposal carries the values they give. */
  params: z.record(z.string(), paramBindingSchema).optional(),
  /** The verifiers the operator lets prove it (configured names or identities); absent: any. */
  verifiers: z.array(z.string()).optional(),
});
export type RequiredPostcondition = z.output<typeof requiredPostconditionSchema>;

/** A tool in the registry of one log. A new registration of the same tool is a new version. */
export const toolRecordSchema = z.object({
  id: z.string(),
  server_id: z.string(),
  tool_name: z.string(),
  version: z.number().int(),
  side_effect: sideEffectClassSchema,
  required_scopes: z.array(z.string()),
  /** `null`: the tool itself does not restrict environments (the caller's key still may). */
  allowed_environments: z.array(z.string()).nullable(),
  dry_run_tool: z.string().nullable(),
  compensation_tool: z.string().nullable(),
  approval_required: z.boolean(),
  /** Whether a proposal must name the target's id; a missing one is an ambiguous target. */
  requires_target_id: z.boolean(),
  /** Longest approval window this tool allows, in seconds; the shortest of all such rules wins. */
  max_approval_window_seconds: z.number().int().nullable(),
  /** `discovery`: registered automatically from a tool list; discovery is not authorization. */
  source: toolSourceSchema,
  /** The named systems the tool writes to; absent when the registration declared none (and before migration 0011). */
  writes: z.array(z.string()).optional(),
  /** What every call must prove, added to each proposal at propose; absent when none (and before migration 0020). */
  postconditions: z.array(requiredPostconditionSchema).optional(),
  /** At authorize, what a precondition no check proved does: `block` (absent) refuses, `warn` lets it through, recorded. */
  unproven_preconditions: z.enum(['block', 'warn']).optional(),
  /**
   * SHA-256 of the approved definition (canonical JSON of the upstream's name, description,
   * input schema and annotations): pinned by the gateway that first saw it, or by an
   * operator's approval. Absent when no gateway reported one (and before migration 0029).
   */
  definition_sha256: hashSchema.optional(),
  /** A definition a gateway saw since that differs from the pinned one, awaiting an operator's approval. */
  changed_definition_sha256: hashSchema.optional(),
  registered_by: z.string(),
  registered_at: timeSchema,
  /** The registrar's signature (`tool.register`, over the registration body); absent when unsigned. */
  signature: authorSignatureSchema.optional(),
});
export type ToolRecord = z.output<typeof toolRecordSchema>;

/** The part of a proposal an approver is shown; `payload_hash` is SHA-256 of its canonical JSON. */
export const proposalPayloadSchema = z.object({
  action: z.string(),
  server_id: z.string(),
  tool_name: z.string(),
  target: targetSchema,
  arguments: jsonObjectSchema,
  side_effect: sideEffectClassSchema,
  preconditions: z.array(conditionSchema),
  postconditions: z.array(conditionSchema),
  /** Supplied by the gateway, e.g. a dry run's rows affected; null when none. */
  impact: jsonValueSchema,
});
export type ProposalPayload = z.output<typeof proposalPayloadSchema>;

/** What an agent asked to do. A proposal is not a decision. */
export const proposalRecordSchema = z.object({
  id: z.string(),
  idempotency_key: z.string(),
  /** From the caller's API key, never from the request body. */
  requester: z.string(),
  /** The scopes and environments of the requester's key when it proposed: the policy's inputs. */
  requester_scopes: z.array(z.string()),
  requester_environments: z.array(z.string()).nullable(),
  ...proposalPayloadSchema.shape,
  payload_hash: hashSchema,
  proposed_at: timeSchema,
  /**
   * Only on a proposal read back after a redaction: the keys of `arguments` that were erased
   * (they are gone from `arguments`; `payload_hash` still binds the exact payload approved).
   */
  redacted: z.object({ arguments: z.array(z.string()) }).optional(),
  /** The gateway's signature (`proposal.propose`, over the body with `arguments` hashed); absent when unsigned. */
  signature: authorSignatureSchema.optional(),
});
export type ProposalRecord = z.output<typeof proposalRecordSchema>;

/** One reason of a decision, with a stable code. */
export const policyReasonSchema = z.object({
  code: z.string(),
  /** What the reason does to the verdict; `note` changes nothing. */
  effect: reasonEffectSchema,
  message: z.string(),
  details: jsonObjectSchema.optional(),
});
export type PolicyReason = z.output<typeof policyReasonSchema>;

/** A corrected action the gateway may propose instead; the original never becomes executable. */
export const repairSchema = z.object({
  kind: repairKindSchema,
  action: z.string(),
  server_id: z.string(),
  tool_name: z.string(),
  target: targetSchema,
  arguments: jsonObjectSchema,
  message: z.string(),
});
export type Repair = z.output<typeof repairSchema>;

/** The verdict on one proposal, by the built-in policy or an external engine (`source`). */
export const decisionRecordSchema = z.object({
  id: z.string(),
  proposal_id: z.string(),
  verdict: verdictSchema,
  reasons: z.array(policyReasonSchema),
  repair: repairSchema.nullable(),
  /** Who may execute: the requester for allow / require_approval, nobody otherwise. */
  authorized_identity: z.string().nullable(),
  /** `built_in`, or the external engine's name as it posted the decision. */
  source: z.string(),
  /** The tool registration the decision read, when there was one. */
  tool_id: z.string().nullable(),
  /** The approval request this decision waits on (created or reused), for require_approval. */
  approval_request_id: z.string().nullable(),
  decided_by: z.string(),
  decided_at: timeSchema,
  /** Only on a decision read back after a redaction: the keys of `repair` that were erased (gone from `repair`). */
  redacted: z.object({ repair: z.array(z.string()) }).optional(),
  signature: authorSignatureSchema.optional(),
});
export type DecisionRecord = z.output<typeof decisionRecordSchema>;

/** A request for a human to approve one payload of one requester on one server + tool. */
export const approvalRequestRecordSchema = z.object({
  id: z.string(),
  proposal_id: z.string(),
  payload_hash: hashSchema,
  requester: z.string(),
  server_id: z.string(),
  tool_name: z.string(),
  environment: z.string().nullable(),
  /** The request must be answered before this time. */
  expires_at: timeSchema,
  /** Longest window any rule allows for this request (tool or service), in seconds. */
  max_window_seconds: z.number().int(),
  requested_at: timeSchema,
});
export type ApprovalRequestRecord = z.output<typeof approvalRequestRecordSchema>;

/** The answer to one approval request. A denial answers only that request. */
export const approvalResolutionRecordSchema = z.object({
  id: z.string(),
  request_id: z.string(),
  resolution: z.enum(['approved', 'denied']),
  resolver: z.string(),
  validity: approvalValiditySchema.nullable(),
  window_seconds: z.number().int().nullable(),
  /** Which rule set the window: the shortest wins (`approver`, `tool`, `service`). */
  window_source: z.string().nullable(),
  valid_until: timeSchema.nullable(),
  comment: z.string().nullable(),
  resolved_at: timeSchema,
  signature: authorSignatureSchema.optional(),
});
export type ApprovalResolutionRecord = z.output<typeof approvalResolutionRecordSchema>;

/** One execution under an approval, claimed by `authorize`; a `once` approval has at most one. */
export const approvalUseRecordSchema = z.object({
  id: z.string(),
  request_id: z.string(),
  resolution_id: z.string(),
  proposal_id: z.string(),
  /** Copied from the resolution so the database can allow one use of a `once` approval. */
  validity: approvalValiditySchema,
  used_by: z.string(),
  used_at: timeSchema,
});
export type ApprovalUseRecord = z.output<typeof approvalUseRecordSchema>;

/**
 * The identity the server records a lapsed execution claim's `unknown` observation under
 * (`executed_by`): it did not execute anything, it says nobody reported what happened. No API
 * key can act as it: key identities are `agent:…`, `service:…` or `user:…` (`identityInput`, keys.ts).
 */
export const CLAIM_SWEEPER_IDENTITY = 'vouch:claim-sweeper';

/**
 * The identity the server records its own verification of an `unknown` outcome under once the
 * outcome has settled and nobody verified it since (`verifier`): nobody asked, the server
 * ran its configured verifiers. Like {@link CLAIM_SWEEPER_IDENTITY}, no API key can act as it.
 */
export const SETTLE_VERIFIER_IDENTITY = 'vouch:settle-verifier';

/**
 * Written by `authorize`: who is about to execute the proposal, under which decision and
 * approval use, and until when an observation is expected. A claim with no observation after
 * its deadline is swept into an observation with outcome `unknown` by
 * {@link CLAIM_SWEEPER_IDENTITY}: the gateway may have crashed before or after the tool acted.
 */
export const executionClaimRecordSchema = z.object({
  id: z.string(),
  proposal_id: z.string(),
  decision_id: z.string(),
  approval_use_id: z.string().nullable(),
  claimed_by: z.string(),
  claimed_at: timeSchema,
  /** After this time, with no observation, the outcome is recorded as `unknown` and never retried. */
  deadline: timeSchema,
  /**
   * The precondition checks the server ran at authorize and the status the ledger derived
   * from them; absent when the proposal declared none (and on claims written before it ran them).
   */
  // A getter: the check schema is declared below, with the verification records.
  get preconditions() {
    return preconditionResultSchema.optional();
  },
  /** The gateway's signature (`execution.authorize`, over the authorize body); absent when unsigned. */
  signature: authorSignatureSchema.optional(),
});
export type ExecutionClaimRecord = z.output<typeof executionClaimRecordSchema>;

/** What the tool really returned. A tool's output is not verified truth. */
export const observationRecordSchema = z.object({
  id: z.string(),
  proposal_id: z.string(),
  decision_id: z.string(),
  approval_use_id: z.string().nullable(),
  server_id: z.string(),
  tool_name: z.string(),
  executed_by: z.string(),
  outcome: observationOutcomeSchema,
  result: jsonValueSchema,
  /** The transport's status (e.g. HTTP 200), kept apart from the tool's own error flag. */
  transport_status: z.number().int().nullable(),
  tool_error: z.boolean().nullable(),
  started_at: timeSchema.nullable(),
  finished_at: timeSchema.nullable(),
  observed_at: timeSchema,
  /** Where `result` came from when the gateway says it was not the tool's own answer (its claim: it decides no check's independence); absent otherwise. */
  result_source: z.string().optional(),
  /** Only on an observation read back after a redaction: the keys of `result` that were erased (gone from `result`). */
  redacted: z.object({ result: z.array(z.string()) }).optional(),
  /** The gateway's signature (`execution.observe`, over the body with `result` hashed); absent when unsigned. */
  signature: authorSignatureSchema.optional(),
});
export type ObservationRecord = z.output<typeof observationRecordSchema>;

/** An execution the ledger refused to record as authorized; the attempt itself is evidence. */
export const refusedExecutionRecordSchema = z.object({
  id: z.string(),
  proposal_id: z.string(),
  code: z.string(),
  message: z.string(),
  attempted_by: z.string(),
  /** What the gateway posted, as it posted it. */
  attempted: jsonValueSchema,
  refused_at: timeSchema,
  /** Only on a refused execution read back after a redaction: the keys of `attempted` that were erased (gone from it). */
  redacted: z.object({ attempted: z.array(z.string()) }).optional(),
});
export type RefusedExecutionRecord = z.output<typeof refusedExecutionRecordSchema>;

/** One check of a verification, as counted (a check by the writer itself is `inconclusive`). */
export const verificationCheckSchema = z
  .object({
    name: z.string(),
    status: z.string(),
    source: z.string().nullable(),
    reason: z.string().nullable().optional(),
    /** What the check found, by name (`refund:rf_123`); see docs/verification.md, "Evidence is bound". */
    evidence_ref: z.string().optional(),
    /** With reason `EVIDENCE_REUSED`: the proposal (and its verification) the reference proved first. */
    evidence_reused: z.object({ proposal_id: z.string(), verification_id: z.string() }).optional(),
  })
  // A verifier's own fields (evidence, the postcondition it answers, …) are kept as posted.
  .catchall(jsonValueSchema);
export type VerificationCheck = z.output<typeof verificationCheckSchema>;

/** The precondition checks run at authorize, and the status the ledger derived from them. */
export const preconditionResultSchema = z.object({
  status: verificationStatusSchema,
  checks: z.array(verificationCheckSchema),
});
export type PreconditionResult = z.output<typeof preconditionResultSchema>;

/** What a verifier may conclude; `error` is recorded by the host when it could not get a verdict. */
export const checkStatusSchema = z.enum(['pass', 'fail', 'inconclusive', 'error']);

/**
 * A check as the server's verifier host records it (`@vouch/verifier-sdk`'s `Check`): every
 * field present. The checks the server runs itself (preconditions, `verify`) have this shape;
 * an external verifier's checks need only what {@link verificationCheckSchema} asks.
 */
export const hostCheckSchema = z.object({
  name: z.string(),
  /** The postcondition (or precondition) this check answers. */
  postcondition: z.string(),
  /** The params of the postcondition it answers (absent on checks recorded before #32). */
  params: jsonObjectSchema.optional(),
  status: checkStatusSchema,
  source: z.string().nullable(),
  observed: jsonValueSchema,
  expected: jsonValueSchema,
  evidence: jsonObjectSchema,
  message: z.string(),
  reason: z.string().nullable(),
  /** Present when the verifier named what it found (`refund:rf_123`): one reference proves one proposal. */
  evidence_ref: z.string().optional(),
  /** Present when the host overrode the verifier's verdict (e.g. `NOT_INDEPENDENT`): what it said. */
  reported: z.enum(['pass', 'fail', 'inconclusive']).optional(),
  /** Present when the source was named from configuration and the verifier reported another: what it said. */
  reportedSource: z.string().optional(),
  /** True when the source is a system the tool's registration says it writes to: allowed, and said so. */
  readsWrittenSystem: z.boolean().optional(),
  verifier: z
    .object({
      id: z.string(),
      version: z.string(),
      apiVersion: z.number().int(),
      /** The registration name (defaults to the id; differs when one verifier is registered twice). */
      name: z.string(),
    })
    .nullable(),
  /** Wall time the verifier took, in milliseconds; null when none ran. */
  durationMs: z.number().nullable(),
  /** Present when the verifier's registration has a measurement policy: every reading, and what decided. */
  measurement: z
    .object({
      policy: z.object({
        initialDelayMs: z.number(),
        intervalMs: z.number(),
        count: z.number().int(),
        timeoutMs: z.number().nullable(),
        failureLimit: z.number().int(),
        inconclusiveLimit: z.number().int(),
        consecutiveSuccessLimit: z.number().int(),
      }),
      status: z.enum(['pass', 'fail', 'inconclusive']),
      decidedBy: z.enum([
        'FAILURE_LIMIT',
        'INCONCLUSIVE_LIMIT',
        'CONSECUTIVE_SUCCESS_LIMIT',
        'COUNT_REACHED',
      ]),
      attempts: z.array(
        z.object({
          attempt: z.number().int(),
          at: z.string(),
          status: z.enum(['pass', 'fail', 'inconclusive']),
          durationMs: z.number(),
          checks: z.array(
            z.object({
              name: z.string(),
              status: checkStatusSchema,
              reason: z.string().nullable(),
              observed: jsonValueSchema,
              message: z.string(),
            }),
          ),
        }),
      ),
    })
    .optional(),
});
export type HostCheck = z.output<typeof hostCheckSchema>;

/**
 * Why a verification record is `inconclusive` whatever its checks say: `OUTCOME_UNKNOWN`, the
 * tool's outcome was unknown (a timeout: it may still act) and had not settled yet.
 */
export const verificationHoldSchema = z.enum(['OUTCOME_UNKNOWN']);
export type VerificationHold = z.output<typeof verificationHoldSchema>;

/**
 * The checks on one observation and the status derived from them against the proposal's
 * declared postconditions. Records written before migration 0006 have none of the optional
 * fields; a field that does not apply is left out, never `null`, so a row rebuilds its
 * event's payload exactly.
 */
export const verificationRecordSchema = z.object({
  id: z.string(),
  observation_id: z.string(),
  proposal_id: z.string(),
  checks: z.array(verificationCheckSchema),
  /** What these checks alone prove about the declared postconditions (see `verification_status` for the proposal's). */
  status: verificationStatusSchema.meta({
    description:
      'What this record’s checks prove about the declared postconditions, derived, never supplied. The proposal’s status is `verification_status`.',
  }),
  verifier: z.string(),
  verified_at: timeSchema,
  /** Names of checks that answer no declared postcondition: kept, never counted. */
  undeclared: z.array(z.string()).optional().meta({
    description: 'Names of checks that answer no declared postcondition: kept, never counted.',
  }),
  /** Present when the status is held at `inconclusive` whatever the checks say. */
  held: verificationHoldSchema.optional().meta({
    description:
      'The status is held at inconclusive whatever the checks say: the tool’s outcome was unknown (a timeout) and had not settled.',
  }),
  /** The verification records this re-verification replaces; they stay in the chain. */
  supersedes: z.array(z.string()).optional().meta({
    description: 'The records this re-verification replaces; they stay in the chain and the story.',
  }),
  /** Why it supersedes them; present exactly when `supersedes` is. */
  reason: z.string().optional().meta({ description: 'Why it supersedes them.' }),
  signature: authorSignatureSchema.optional(),
});
export type VerificationRecord = z.output<typeof verificationRecordSchema>;

/** The record kinds; each is also the `kind` of its audit event. */
export const RECORD_KINDS = [
  'tool',
  'proposal',
  'decision',
  'approval_request',
  'approval_resolution',
  'approval_use',
  'execution_claim',
  'observation',
  'execution_refused',
  'verification',
] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];
