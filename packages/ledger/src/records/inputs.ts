import { canonicalJson, isAuditError } from '@vouch/audit';
import { z } from 'zod';
import { LedgerError } from '../errors';
import { type JsonObject, type JsonValue, SIDE_EFFECT_CLASSES } from './types';

/**
 * Request bodies for the record writes. Every body is first turned into canonical JSON and
 * back, so what is validated is exactly what will be stored and hashed: a value JSON cannot
 * carry (undefined, NaN, a Date, a lone surrogate) is refused, never dropped. Objects are
 * strict: an unknown key is an error, not silently left out of the payload hash.
 */

/** Largest canonical body, in bytes, a record write accepts by default (the event limit is larger). */
export const DEFAULT_MAX_INPUT_BYTES = 256 * 1024;

// Identifiers land in plain text columns and in messages: no control characters (Postgres
// text refuses NUL), bounded length.
const name = z
  .string()
  .min(1)
  .max(256)
  .refine((s) => !/\p{Cc}/u.test(s), 'must not contain control characters');

// Free text may span lines but not hold NUL, which a Postgres text column refuses.
const text = z
  .string()
  .max(4000)
  .refine((s) => !s.includes('\0'), 'must not contain NUL');
const jsonObject = z.record(z.string(), z.unknown()) as unknown as z.ZodType<JsonObject>;
const jsonValue = z.unknown() as z.ZodType<JsonValue>;

const condition = z.strictObject({ name, params: jsonObject.optional() });

/** The body of `propose`; the requester comes from the caller's key, never from here. */
export const proposalInputSchema = z.strictObject({
  idempotency_key: name,
  action: name,
  server_id: name,
  tool_name: name,
  target: z.strictObject({
    kind: name,
    id: name.nullable().default(null),
    env: name.nullable().default(null),
  }),
  arguments: jsonObject,
  side_effect: z.enum(SIDE_EFFECT_CLASSES),
  preconditions: z.array(condition).max(64).default([]),
  postconditions: z.array(condition).max(64).default([]),
  impact: jsonValue.default(null),
});
/** What a gateway posts to propose an action. */
export type ProposalInput = z.input<typeof proposalInputSchema>;

/** The body of `registerTool`. A side-effect class left out means `irreversible`. */
export const toolInputSchema = z.strictObject({
  server_id: name,
  tool_name: name,
  side_effect: z.enum(SIDE_EFFECT_CLASSES).default('irreversible'),
  required_scopes: z.array(name).max(64).default([]),
  allowed_environments: z.array(name).max(64).nullable().default(null),
  dry_run_tool: name.nullable().default(null),
  compensation_tool: name.nullable().default(null),
  approval_required: z.boolean().default(false),
  requires_target_id: z.boolean().default(true),
  max_approval_window_seconds: z.number().int().positive().nullable().default(null),
  source: z.enum(['manual', 'discovery']).default('manual'),
  /** To change a manual registration, name the version being replaced (`TOOL_EXISTS` otherwise). */
  replaces_version: z.number().int().positive().optional(),
});
/** What an operator (or discovery) posts to register a tool. */
export type ToolInput = z.input<typeof toolInputSchema>;

const repairSchema = z.strictObject({
  kind: z.enum(['dry_run_first', 'pin_environment']),
  action: name,
  server_id: name,
  tool_name: name,
  target: z.strictObject({ kind: name, id: name.nullable(), env: name.nullable() }),
  arguments: jsonObject,
  message: text,
});

/** The body of `decide`: an external policy engine's verdict, recorded with its source. */
export const decisionInputSchema = z
  .strictObject({
    proposal_id: name,
    verdict: z.enum(['allow', 'deny', 'repair', 'require_approval']),
    reasons: z
      .array(
        z.strictObject({
          code: name,
          effect: z.enum(['deny', 'repair', 'require_approval', 'allow', 'note']),
          message: text,
          details: jsonObject.optional(),
        }),
      )
      .min(1)
      .max(64),
    // `built_in` names the ledger's own policy; an external engine may not claim it.
    source: name.refine((s) => s !== 'built_in', 'built_in is the ledger policy'),
    repair: repairSchema.nullable().default(null),
    authorized_identity: name.nullable().optional(),
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
  request_id: name,
  validity: z.enum(['once', 'window']).default('once'),
  window_seconds: z.number().int().positive().nullable().default(null),
  comment: text.nullable().default(null),
});
/** What an approver posts to approve. */
export type ApproveInput = z.input<typeof approveInputSchema>;

/** The body of `deny`. */
export const denyInputSchema = z.strictObject({ request_id: name, comment: text.nullable().default(null) });
/** What an approver posts to deny. */
export type DenyInput = z.input<typeof denyInputSchema>;

const isoTime = z.iso.datetime({ offset: true });

/** The body of `observe`: what the tool really returned. */
export const observationInputSchema = z.strictObject({
  proposal_id: name,
  outcome: z.enum(['succeeded', 'failed', 'unknown']),
  result: jsonValue.default(null),
  transport_status: z.number().int().min(0).max(999).nullable().default(null),
  tool_error: z.boolean().nullable().default(null),
  started_at: isoTime.nullable().default(null),
  finished_at: isoTime.nullable().default(null),
  /** The payload hash of what the gateway executed; must be the proposal's. */
  payload_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex SHA-256')
    .optional(),
  /** The approval request the gateway executes under, when it names one. */
  approval_request_id: name.optional(),
});
/** What a gateway posts after the tool call. */
export type ObservationInput = z.input<typeof observationInputSchema>;

/** One check as a verifier (or the verification host) reports it; extra JSON fields are kept. */
export const checkInputSchema = z.looseObject({
  name,
  status: z.enum(['pass', 'fail', 'inconclusive', 'error']),
  source: name.nullable().default(null),
  reason: name.nullable().optional(),
});
/** The checks of `recordVerification`; the status is derived from them, never taken from the caller. */
export const checksInputSchema = z.array(checkInputSchema).max(256);
/** One check as posted. */
export type CheckInput = z.input<typeof checkInputSchema>;

const supersession = {
  /** The verification records a re-verification replaces (they stay in the chain). */
  supersedes: z
    .array(name)
    .min(1)
    .max(64)
    .refine((ids) => new Set(ids).size === ids.length, 'must not repeat an id')
    .optional(),
  /** Why it replaces them. */
  reason: text.refine((s) => s.trim() !== '', 'must say why').optional(),
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
  .strictObject({ observation_id: name, checks: checksInputSchema, ...supersession })
  .refine(...bothOrNeither);

/** The optional body of running the configured verifiers: a re-verification's `supersedes` and `reason`. */
export const reverificationInputSchema = z.strictObject(supersession).refine(...bothOrNeither);
/** What a verifier posts to re-run the verifiers as a re-verification. */
export type ReverificationInput = z.input<typeof reverificationInputSchema>;
/** What the verification engine posts. */
export type VerificationInput = z.input<typeof verificationInputSchema>;

const payloadHash = z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex SHA-256');

/** The body of `authorize`: claim the right to execute a proposal before calling the tool. */
export const authorizeInputSchema = z.strictObject({
  proposal_id: name,
  approval_request_id: name.optional(),
  payload_hash: payloadHash.optional(),
});
/** What a gateway posts before it executes. */
export type AuthorizeInput = z.input<typeof authorizeInputSchema>;

/**
 * Canonicalize, bound and validate a body. Throws `PAYLOAD_NOT_JSON`, `PAYLOAD_TOO_LARGE` or
 * `VALIDATION_FAILED` (with the issues in `details`), before anything is written.
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  body: unknown,
  options: { what: string; maxBytes: number },
): z.output<S> {
  let canonical: string;
  try {
    canonical = canonicalJson(body);
  } catch (cause) {
    if (!isAuditError(cause)) throw cause;
    throw new LedgerError('PAYLOAD_NOT_JSON', `${options.what} cannot be stored: ${cause.message}`, {
      cause,
      details: { reason: cause.code, path: cause.path ?? '' },
    });
  }
  const bytes = Buffer.byteLength(canonical, 'utf8');
  if (bytes > options.maxBytes) {
    throw new LedgerError(
      'PAYLOAD_TOO_LARGE',
      `${options.what} is ${bytes} bytes as canonical JSON; the limit is ${options.maxBytes}`,
      { details: { bytes, limit: options.maxBytes } },
    );
  }
  const parsed = schema.safeParse(JSON.parse(canonical));
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: issue.path.map((key) => `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`).join(''),
      code: issue.code,
      message: issue.message,
    }));
    throw new LedgerError(
      'VALIDATION_FAILED',
      `${options.what} is invalid at ${issues[0]!.path || 'the root'}: ${issues[0]!.message}`,
      {
        details: { issues },
      },
    );
  }
  return parsed.data;
}
