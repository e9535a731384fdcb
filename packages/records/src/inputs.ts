import { z } from 'zod';
import {
  hashSchema,
  identifierInput,
  jsonObjectSchema,
  jsonValueSchema,
  nameInput,
  textInput,
} from './fields';
import {
  approvalValiditySchema,
  checkStatusSchema,
  observationOutcomeSchema,
  type ParamBinding,
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

// `origin` and `verifiers` are the server's to set (from the tool registration): a condition
// that sends them is refused as an unknown key, so an agent cannot pass its own off as required.
const condition = z.strictObject({ name: identifierInput, params: jsonObjectSchema.optional() });

/** The body of `propose`; the requester comes from the caller's key, never from here. */
export const proposalInputSchema = z.strictObject({
  // The key and the target's id and environment are matched, never shown as labels: any
  // text without control characters (a target id may be a URI or a file path).
  idempotency_key: nameInput,
  action: identifierInput,
  server_id: identifierInput,
  tool_name: identifierInput,
  target: z.strictObject({
    kind: identifierInput,
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

/** An RFC 6901 JSON pointer: empty, or `/`-separated tokens where `~` is only `~0` or `~1`. */
const jsonPointer = z
  .string()
  .max(1024)
  .regex(/^(\/([^~/]|~[01])*)*$/, 'must be a JSON pointer (RFC 6901), e.g. /arguments/order_id');

const paramBindingInput = z.union([
  z.strictObject({ pointer: jsonPointer }),
  z.strictObject({ cel: z.string().min(1).max(4096) }),
  z.strictObject({ value: jsonValueSchema }),
]);

// Checked value by value over the object as parsed (not `z.record`, which would rebuild it and
// lose an own `__proto__` key: see `jsonObjectSchema`).
const paramBindingsInput = jsonObjectSchema.superRefine((params, ctx) => {
  const entries = Object.entries(params);
  if (entries.length > 64) ctx.addIssue({ code: 'custom', message: 'at most 64 params' });
  for (const [key, binding] of entries) {
    if (!paramBindingInput.safeParse(binding).success) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: 'must be {"pointer": "/…"}, {"cel": "…"} or {"value": …}',
      });
    }
  }
}) as unknown as z.ZodType<Record<string, ParamBinding>, Record<string, ParamBinding>>;

/** One postcondition a tool registration requires: its name, its params' bindings, who may prove it. */
const requiredPostconditionInput = z.strictObject({
  name: identifierInput,
  params: paramBindingsInput.optional(),
  verifiers: z.array(nameInput).min(1).max(16).optional(),
});

/** The body of `registerTool`. A side-effect class left out means `irreversible`. */
export const toolInputSchema = z.strictObject({
  server_id: identifierInput,
  tool_name: identifierInput,
  side_effect: sideEffectClassSchema.default('irreversible'),
  required_scopes: z.array(nameInput).max(64).default([]),
  allowed_environments: z.array(nameInput).max(64).nullable().default(null),
  dry_run_tool: identifierInput.nullable().default(null),
  compensation_tool: identifierInput.nullable().default(null),
  approval_required: z.boolean().default(false),
  requires_target_id: z.boolean().default(true),
  max_approval_window_seconds: z.number().int().positive().nullable().default(null),
  source: toolSourceSchema.default('manual'),
  /**
   * The named systems this tool writes to (`payments-db`, `stripe`). A check that reads one of
   * them is allowed (that is where the truth lives) and marked `readsWrittenSystem`.
   */
  writes: z.array(nameInput).max(64).optional(),
  /**
   * What every call of the tool must prove: each is added to the proposal's postconditions at
   * propose, with its params bound to the proposal's payload, whatever the proposal declares.
   */
  postconditions: z.array(requiredPostconditionInput).max(64).optional(),
  /**
   * At authorize, what a precondition no check proved (inconclusive) does: `block` (the
   * default) refuses the execution, `warn` lets it run with the unproven checks in its claim.
   * A failed precondition always blocks.
   */
  unproven_preconditions: z.enum(['block', 'warn']).optional(),
  /**
   * SHA-256 of the tool's definition as the upstream serves it (canonical JSON of `name`,
   * `description`, `inputSchema`, `annotations`). The first one reported is pinned; a later,
   * different one is recorded as `changed_definition_sha256` until an operator approves it.
   */
  definition_sha256: hashSchema.optional(),
  /** To change a manual registration, name the version being replaced (`TOOL_EXISTS` otherwise). */
  replaces_version: z.number().int().positive().optional(),
});
/** What an operator (or discovery) posts to register a tool. */
export type ToolInput = z.input<typeof toolInputSchema>;

/** The body of `approveToolDefinition`: pin a definition, in place of the one pinned at `replaces_version`. */
export const toolDefinitionApprovalInputSchema = z.strictObject({
  server_id: identifierInput,
  tool_name: identifierInput,
  definition_sha256: hashSchema,
  /** The version the approver looked at (`TOOL_EXISTS` when the tool changed since). */
  replaces_version: z.number().int().positive(),
});
export type ToolDefinitionApprovalInput = z.input<typeof toolDefinitionApprovalInputSchema>;

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
  /** What the check found, by name (`refund:rf_123`): the ledger lets one reference prove one proposal. */
  evidence_ref: z
    .string()
    .min(1)
    .max(256)
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
    .regex(/^[^\u0000-\u001f\u007f]*$/u, 'no control characters')
    .refine((ref) => ref.trim() === ref, 'no surrounding spaces')
    .optional(),
  // The ledger's to set (`EVIDENCE_REUSED`), never a caller's. Not `z.never()`, which the
  // OpenAPI generator cannot describe.
  evidence_reused: z
    .unknown()
    .refine(() => false, 'evidence_reused is set by the ledger, never posted')
    .optional()
    .meta({ description: 'Set by the ledger (EVIDENCE_REUSED); a posted value is refused' }),
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
