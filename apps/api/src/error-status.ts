import type { AuditErrorCode } from '@vouch/audit';
import type { LedgerErrorCode } from '@vouch/ledger';
import type { AUDIT_ERROR_CODES, VERIFIER_ERROR_CODES } from '@vouch/records/error-codes';
import type { VerifierErrorCode } from '@vouch/verifier-sdk';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ApiErrorCode } from './errors';

/** Every code a Vouch HTTP response can carry in `error.code`. */
export type ErrorCode = ApiErrorCode | LedgerErrorCode | AuditErrorCode | VerifierErrorCode;

// `@vouch/records` lists every code the server answers with (the client learns them there);
// the audit and verifier packages keep their own lists, which must be the same.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const auditCodesDeclared: Same<(typeof AUDIT_ERROR_CODES)[number] | 'LOG_NOT_FOUND', AuditErrorCode> = true;
const verifierCodesDeclared: Same<(typeof VERIFIER_ERROR_CODES)[number], VerifierErrorCode> = true;
void auditCodesDeclared;
void verifierCodesDeclared;

/**
 * The one table from error code to HTTP status. `satisfies Record<ErrorCode, …>` makes the
 * compiler refuse a code without a status (and a status for a code that does not exist),
 * so a package cannot add a refusal the API silently answers with 500.
 */
export const STATUS_BY_CODE = {
  // @vouch/api: authentication and authorization
  UNAUTHENTICATED: 401,
  KEY_EXPIRED: 401,
  RATE_LIMITED: 429,
  ROLE_FORBIDDEN: 403,
  ROLE_COMBINATION_FORBIDDEN: 400,
  ENVIRONMENT_FORBIDDEN: 403,
  LOG_FORBIDDEN: 403,
  // @vouch/api: request shape
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  UNSUPPORTED_MEDIA_TYPE: 415,
  MALFORMED_JSON: 400,
  BODY_TOO_LARGE: 413,
  NESTING_TOO_DEEP: 400,
  DUPLICATE_KEY: 400,
  NUL_CHARACTER: 400,
  NUMBER_NOT_EXACT: 400,
  INVALID_REQUEST: 400,
  KEY_NOT_FOUND: 404,
  PRECONDITION_FAILED: 412,
  NOT_READY: 503,
  NOT_CONFIGURED: 501,
  INTERNAL: 500,

  // @vouch/audit: values JSON cannot carry, malformed proofs
  NOT_JSON_VALUE: 400,
  LONE_SURROGATE: 400,
  CYCLE: 400,
  NOT_PLAIN_OBJECT: 400,
  NON_FINITE_NUMBER: 400,
  MALFORMED_CHECKPOINT: 400,
  MALFORMED_PROOF: 400,
  MALFORMED_BUNDLE: 400,
  // the witness client (vouch verify --since): never raised by this server
  SERVER_UNREACHABLE: 502,
  SERVER_REFUSED: 502,
  TRUSTED_CHECKPOINT_INVALID: 500,
  NO_CHECKPOINT_YET: 404,

  // @vouch/ledger: input
  INVALID_EVENT: 400,
  PAYLOAD_NOT_JSON: 400,
  PAYLOAD_TOO_LARGE: 413,
  // @vouch/ledger: lifecycle and storage (503: retry later, another instance may answer)
  LEDGER_CLOSED: 503,
  DATABASE_UNAVAILABLE: 503,
  MIGRATIONS_PENDING: 503,
  DATABASE_PERMISSION_DENIED: 503,
  CHAIN_CONFLICT: 503,
  INTEGRITY_ALARM: 503,
  // @vouch/ledger: records and invariants
  VALIDATION_FAILED: 400,
  IDENTIFIER_INVALID: 400,
  // The proposal is well-formed but does not fit what its tool's registration requires of it.
  POSTCONDITION_BINDING_FAILED: 422,
  NOT_FOUND: 404,
  LOG_NOT_FOUND: 404,
  TOOL_NOT_REGISTERED: 422,
  TOOL_EXISTS: 409,
  // An identity spelled differently from an existing key's but the same, or a look-alike.
  IDENTITY_COLLISION: 409,
  IDEMPOTENCY_CONFLICT: 409,
  DECISION_EXISTS: 409,
  DECISION_PENDING: 409,
  // Refusals of an action the caller is authenticated for but not authorized to take now.
  EXECUTION_NOT_AUTHORIZED: 403,
  IDENTITY_MISMATCH: 403,
  SELF_APPROVAL: 403,
  APPROVAL_SCOPE_MISMATCH: 403,
  // The approval exists but its state no longer allows the request.
  APPROVAL_EXPIRED: 409,
  APPROVAL_CONSUMED: 409,
  APPROVAL_RESOLVED: 409,
  APPROVAL_PAYLOAD_MISMATCH: 409,
  // A stored proposal, approval answer or built-in decision the server never wrote (its payload
  // hash names another payload, its window is stretched, the policy gives another verdict):
  // refused, and the integrity alarm raised.
  PROPOSAL_PAYLOAD_MISMATCH: 409,
  DECISION_NOT_DERIVED: 409,
  DECISION_SOURCE_NOT_PINNED: 409,
  INDEPENDENCE_NOT_ASSESSED: 409,
  EVIDENCE_REUSED: 409,
  APPROVAL_BOUNDS_VIOLATED: 409,
  OBSERVATION_EXISTS: 409,
  OBSERVATION_CONFLICT: 409,
  EXECUTION_CLAIM_LAPSED: 409,
  // An observation with no execution claim from `authorize` (the attempt is recorded).
  EXECUTION_NOT_CLAIMED: 409,
  // A precondition no check proved, where the tool's registration blocks unproven ones.
  PRECONDITION_UNPROVEN: 412,
  // The approval was given while a key of its approver was live that has since been revoked.
  APPROVER_KEY_REVOKED: 409,
  VERIFICATION_INVALID: 422,
  // A record the server would act on no longer matches the chain (edited in the database):
  // this server cannot be trusted to answer until an operator looks; nothing was written.
  RECORD_INTEGRITY_VIOLATION: 503,
  // The audited party may ask for verification, never replace a result.
  SUPERSESSION_FORBIDDEN: 403,
  SUPERSESSION_INVALID: 409,
  // @vouch/ledger: redaction
  EVENT_NOT_FOUND: 404,
  REDACTION_INVALID: 400,
  // The event commits to its whole payload (a record the server acts on, or written before fields/1).
  EVENT_NOT_REDACTABLE: 409,
  FIELD_NOT_FOUND: 422,
  FIELD_ALREADY_REDACTED: 409,
  // The caller caused the event it asks to erase: the audited party never erases its own evidence.
  SELF_REDACTION: 403,
  // The caller holds an enrolled signing key (or every author must sign) and sent no signature.
  SIGNATURE_REQUIRED: 403,
  // The Vouch-Signature header does not verify for this request with a live key of the caller.
  SIGNATURE_INVALID: 403,
  PUBLIC_KEY_INVALID: 400,
  // A stored record in an enrolled author's name without their signature: the server never wrote it.
  RECORD_SIGNATURE_INVALID: 409,
  // No live code for the caller's identity hashes to this code (or the code is for someone else).
  ENROLMENT_CODE_INVALID: 403,
  ENROLMENT_CODE_EXPIRED: 403,
  // A code enrols one key: it was revealed when it was used.
  ENROLMENT_CODE_USED: 409,
  // A key for the server's own identity: the operator's alone to enrol.
  SIGNING_KEY_ENROLLER_FORBIDDEN: 403,
  // The proof is not the new key's signature over {identity, public_key, code_commitment}.
  ENROLMENT_PROOF_INVALID: 403,
  SIGNING_KEY_ENROLLED: 409,
  // One signed request issues one enrolment code.
  SIGNATURE_REPLAYED: 409,

  // @vouch/verifier-sdk: configuration problems are the server's (they fail at startup)…
  VERIFIER_INVALID: 500,
  VERIFIER_API_UNSUPPORTED: 500,
  VERIFIER_DUPLICATE: 500,
  OPTIONS_INVALID: 500,
  CONDITION_INVALID: 500,
  CONFIG_NOT_FOUND: 500,
  CONFIG_INVALID: 500,
  GRANT_MISSING: 500,
  // …a record the caller sent that the host cannot check is the caller's…
  INPUT_INVALID: 422,
  RESULT_INVALID: 422,
  // …and a source or verifier that did not answer is an upstream failure. (The host records
  // these as inconclusive checks; they reach HTTP only if a run as a whole cannot start.)
  SOURCE_UNAVAILABLE: 502,
  SOURCE_FORBIDDEN: 502,
  VERIFIER_TIMEOUT: 504,
  VERIFIER_ABORTED: 503,
  VERIFIER_CRASHED: 502,
  // the plugin author's test harness: never raised by a server
  CASE_FAILED: 500,
  CONFORMANCE_FAILED: 500,
} as const satisfies Record<ErrorCode, ContentfulStatusCode>;

/** The HTTP status for a code; unknown strings (a newer package copy) are a server error. */
export function statusOf(code: string): ContentfulStatusCode {
  return Object.hasOwn(STATUS_BY_CODE, code) ? STATUS_BY_CODE[code as ErrorCode] : 500;
}

/** True when `code` is one the table knows. */
export function isKnownErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(STATUS_BY_CODE, code);
}
