import { z } from 'zod';
import { hashSchema, jsonObjectSchema, jsonValueSchema, nameInput, textInput } from './fields';
import {
  approvalValiditySchema,
  checkStatusSchema,
  observationOutcomeSchema,
  reasonEffectSchema,
  repairKindSchema,
  sideEffectClassSchema,
  toolSourceSchema,
  verdictSchema,
} from './records';

/**
 * Request bodies for the record writes. The ledger turns every body into canonical JSON and
 * back before it parses it with these, so what is validated is exactly what will be stored
 * and hashed. Objects are strict: an unknown key is an error, not silently left out of the
 * payload hash.
 */

const condition = z.strictObject({ name: nameInput, params: jsonObjectSchema.optional() });

/** The body of `propose`; the requester comes from the caller's key, never from here. */
export const proposalInputSchema = z.strictObject({
  idempotency_key: nameInput,
  action: nameInput,
  server_id: nameInput,
  tool_name: nameInput,
  target: z.strictObject({
    kind: nameInput,
    id: nameInput.nullable().default(null),
    env: nameInput.nullable().default(null),
  }),
  arguments: jsonObjectSchema,
  side_effect: sideEffectClassSchema,
  preconditions: z.array(condition).max(64).default([]),
  postconditions: z.array(condition).max(64).default([]),
  impact: jsonValueSchema.default(null),
});
/** What a gateway posts to propose an action. */
export type ProposalInput = z.input<typeof proposalInputSchema>;

/** The body of `registerTool`. A side-effect class left out means `irreversible`. */
export const toolInputSchema = z.strictObject({
  server_id: nameInput,
  tool_name: nameInput,
  side_effect: sideEffectClassSchema.default('irreversible'),
  required_scopes: z.array(nameInput).max(64).default([]),
  allowed_environments: z.array(nameInput).max(64).nullable().default(null),
  dry_run_tool: nameInput.nullable().default(null),
  compensation_tool: nameInput.nullable().default(null),
  approval_required: z.boolean().default(false),
  requires_target_id: z.boolean().default(true),
  max_approval_window_seconds: z.number().int().positive().nullable().default(null),
  source: toolSourceSchema.default('manual'),
  /**
   * The named systems this tool writes to (`payments-db`, `stripe`). A check that reads one of
   * them is allowed (that is where the truth lives) and marked `readsWrittenSystem`.
   */
  writes: z.array(nameInput).max(64).optional(),
  /** To change a manual registration, name the version being replaced (`TOOL_EXISTS` otherwise). */
  replaces_version: z.number().int().positive().optional(),
});
/** What an operator (or discovery) posts to register a tool. */
export type ToolInput = z.input<typeof toolInputSchema>;

const repairInput = z.strictObject({
  kind: repairKindSchema,
  action: nameInput,
  server_id: nameInput,
  tool_name: nameInput,
  target: z.strictObject({ kind: nameInput, id: nameInput.nullable(), env: nameInput.nullable() }),
  arguments: jsonObjectSchema,
  message: textInput,
});

/** The body of `decide`: an external policy engine's verdict, recorded with its source. */
export const decisionInputSchema = z
  .strictObject({
    proposal_id: nameInput,
    verdict: verdictSchema,
    reasons: z
      .array(
        z.strictObject({
          code: nameInput,
          effect: reasonEffectSchema,
          message: textInput,
          details: jsonObjectSchema.optional(),
        }),
      )
      .min(1)
      .max(64),
    // `built_in` names the ledger's own policy; an external engine may not claim it.
    source: nameInput.refine((s) => s !== 'built_in', 'built_in is the ledger policy'),
    repair: repairInput.nullable().default(null),
    authorized_identity: nameInput.nullable().optional(),
  })
  // A repair verdict without the corrected action would leave the gateway nothing to propose.
  .refine((d) => (d.verdict === 'repair') === (d.repair !== null), {
    message: 'a repair verdict carries a repair, and only a repair verdict does',
    path: ['repair'],
  });
/** What an external policy engine posts. */
export type DecisionInput = z.input<typeof decisionInputSchema>;

/** The body of `approve`: one use, or a window; the shortest of all window rules applies. */
export const approveInputSchema = z.strictObject({
  request_id: nameInput,
  validity: approvalValiditySchema.default('once'),
  window_seconds: z.number().int().positive().nullable().default(null),
  comment: textInput.nullable().default(null),
});
/** What an approver posts to approve. */
export type ApproveInput = z.input<typeof approveInputSchema>;

/** The body of `deny`. */
export const denyInputSchema = z.strictObject({
  request_id: nameInput,
  comment: textInput.nullable().default(null),
});
/** What an approver posts to deny. */
export type DenyInput = z.input<typeof denyInputSchema>;

const isoTime = z.iso.datetime({ offset: true });

/** The body of `observe`: what the tool really returned. */
export const observationInputSchema = z.strictObject({
  proposal_id: nameInput,
  outcome: observationOutcomeSchema,
  result: jsonValueSchema.default(null),
  transport_status: z.number().int().min(0).max(999).nullable().default(null),
  tool_error: z.boolean().nullable().default(null),
  started_at: isoTime.nullable().default(null),
  finished_at: isoTime.nullable().default(null),
  /** The payload hash of what the gateway executed; must be the proposal's. */
  payload_hash: hashSchema.optional(),
  /** The approval request the gateway executes under, when it names one. */
  approval_request_id: nameInput.optional(),
  /**
   * Where `result` came from, when not from the tool's own answer (the default): the named
   * system or channel the gateway read it from. The gateway's claim: recorded and shown, never
   * used to judge which check is independent (the operator's configuration decides that).
   */
  result_source: nameInput.optional(),
});
/** What a gateway posts after the tool call. */
export type ObservationInput = z.input<typeof observationInputSchema>;

/** One check as a verifier (or the verification host) reports it; extra JSON fields are kept. */
export const checkInputSchema = z.looseObject({
  name: nameInput,
  status: checkStatusSchema,
  source: nameInput.nullable().default(null),
  reason: nameInput.nullable().optional(),
});
/** The checks of `recordVerification`; the status is derived from them, never taken from the caller. */
export const checksInputSchema = z.array(checkInputSchema).max(256);
/** One check as posted. */
export type CheckInput = z.input<typeof checkInputSchema>;

const supersession = {
  /** The verification records a re-verification replaces (they stay in the chain). */
  supersedes: z
    .array(nameInput)
    .min(1)
    .max(64)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat an id')
    .optional(),
  /** Why it replaces them. */
  reason: textInput.refine((s) => s.trim() !== '', 'must say why').optional(),
};
// A supersession without its reason (or a reason superseding nothing) is not a re-verification.
const bothOrNeither: [
  (v: { supersedes?: unknown; reason?: unknown }) => boolean,
  { message: string; path: PropertyKey[] },
] = [
  (v) => (v.supersedes === undefined) === (v.reason === undefined),
  { message: 'supersedes and reason come together', path: ['reason'] },
];

/**
 * The body of `recordVerification`: the checks on one observation, and no status. A
 * re-verification names the records it supersedes (`supersedes`) and says why (`reason`).
 */
export const verificationInputSchema = z
  .strictObject({ observation_id: nameInput, checks: checksInputSchema, ...supersession })
  .refine(...bothOrNeither);
/** What the verification engine posts. */
export type VerificationInput = z.input<typeof verificationInputSchema>;

/** The optional body of running the configured verifiers: a re-verification's `supersedes` and `reason`. */
export const reverificationInputSchema = z.strictObject(supersession).refine(...bothOrNeither);
/** What a verifier posts to re-run the verifiers as a re-verification. */
export type ReverificationInput = z.input<typeof reverificationInputSchema>;

/** The body of `authorize`: claim the right to execute a proposal before calling the tool. */
export const authorizeInputSchema = z.strictObject({
  proposal_id: nameInput,
  approval_request_id: nameInput.optional(),
  payload_hash: hashSchema.optional(),
  /**
   * How long the gateway expects the call to take, in seconds: after that, with no
   * observation, the outcome is recorded `unknown`. At most the server's limit (default: it).
   */
  claim_seconds: z.number().int().min(1).max(86_400).optional(),
});
/** What a gateway posts before it executes. */
export type AuthorizeInput = z.input<typeof authorizeInputSchema>;
