/**
 * Every code a Vouch server can answer with in `error.code`, by the layer that raises it,
 * declared once. The ledger and the API take their lists from here; the client knows every
 * code from here (this module imports nothing, so the client ships no zod for it).
 * `@vouch/audit` and `@vouch/verifier-sdk` depend on no package of ours, so they keep their
 * own lists and `apps/api/src/error-status.ts` checks at compile time that the ones here are
 * the same, and that every code has exactly one HTTP status.
 */

/** What the HTTP layer itself refuses with. */
export const API_ERROR_CODES = [
  // authentication and authorization
  'UNAUTHENTICATED',
  'KEY_EXPIRED',
  'RATE_LIMITED',
  'ROLE_FORBIDDEN',
  'ROLE_COMBINATION_FORBIDDEN',
  'ENVIRONMENT_FORBIDDEN',
  'LOG_FORBIDDEN',
  // request shape
  'ROUTE_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'UNSUPPORTED_MEDIA_TYPE',
  'MALFORMED_JSON',
  'BODY_TOO_LARGE',
  'NESTING_TOO_DEEP',
  'DUPLICATE_KEY',
  'NUL_CHARACTER',
  'NUMBER_NOT_EXACT',
  'INVALID_REQUEST',
  // resources
  'NOT_FOUND',
  'KEY_NOT_FOUND',
  // execution
  'PRECONDITION_FAILED',
  // service state
  'NOT_READY',
  'NOT_CONFIGURED',
  'INTERNAL',
] as const;

/** What the ledger refuses with. */
export const LEDGER_ERROR_CODES = [
  // input
  'INVALID_EVENT',
  'PAYLOAD_NOT_JSON',
  'PAYLOAD_TOO_LARGE',
  // lifecycle and storage
  'LEDGER_CLOSED',
  'DATABASE_UNAVAILABLE',
  'MIGRATIONS_PENDING',
  'DATABASE_PERMISSION_DENIED',
  'CHAIN_CONFLICT',
  'INTEGRITY_ALARM',
  // records and invariants
  'VALIDATION_FAILED',
  // a name an approver reads is not a plain identifier (details.path)
  'IDENTIFIER_INVALID',
  // a tool's required postcondition cannot be bound to the proposal's payload (details.postcondition, param)
  'POSTCONDITION_BINDING_FAILED',
  'NOT_FOUND',
  'LOG_NOT_FOUND',
  'TOOL_NOT_REGISTERED',
  'TOOL_EXISTS',
  'IDEMPOTENCY_CONFLICT',
  'DECISION_EXISTS',
  'DECISION_PENDING',
  'EXECUTION_NOT_AUTHORIZED',
  'IDENTITY_MISMATCH',
  'SELF_APPROVAL',
  'IDENTITY_COLLISION',
  'APPROVAL_EXPIRED',
  'APPROVAL_CONSUMED',
  'APPROVAL_RESOLVED',
  'APPROVAL_PAYLOAD_MISMATCH',
  'APPROVAL_SCOPE_MISMATCH',
  // a stored record breaks a rule the server writes under (appended by someone else): refused, alarm raised
  'APPROVAL_BOUNDS_VIOLATED',
  'PROPOSAL_PAYLOAD_MISMATCH',
  'DECISION_NOT_DERIVED',
  'DECISION_SOURCE_NOT_PINNED',
  'INDEPENDENCE_NOT_ASSESSED',
  'EVIDENCE_REUSED',
  'OBSERVATION_EXISTS',
  'OBSERVATION_CONFLICT',
  'EXECUTION_CLAIM_LAPSED',
  // every execution is claimed (docs/verification.md, "Every execution is claimed")
  'EXECUTION_NOT_CLAIMED',
  'PRECONDITION_FAILED',
  'PRECONDITION_UNPROVEN',
  'APPROVER_KEY_REVOKED',
  'VERIFICATION_INVALID',
  // integrity: a record row the server was about to act on disagrees with its event
  'RECORD_INTEGRITY_VIOLATION',
  'SUPERSESSION_FORBIDDEN',
  'SUPERSESSION_INVALID',
  // redaction (erasing fields of a fields/1 event)
  'EVENT_NOT_FOUND',
  'REDACTION_INVALID',
  'EVENT_NOT_REDACTABLE',
  'FIELD_NOT_FOUND',
  'FIELD_ALREADY_REDACTED',
  'SELF_REDACTION',
  // author signatures (docs/chain.md, "Records signed by their authors")
  'SIGNATURE_REQUIRED',
  'SIGNATURE_INVALID',
  'PUBLIC_KEY_INVALID',
  'RECORD_SIGNATURE_INVALID',
  // enrolment of a signing key by a one-time code (docs/console.md, "Signing key")
  'ENROLMENT_CODE_INVALID',
  'ENROLMENT_CODE_EXPIRED',
  'ENROLMENT_CODE_USED',
  'ENROLMENT_PROOF_INVALID',
  'SIGNING_KEY_ENROLLED',
  'SIGNING_KEY_ENROLLER_FORBIDDEN',
  'SIGNATURE_REPLAYED',
] as const;

/** What `@vouch/audit` refuses with, as the server passes it on (mirrors its `AuditErrorCode`; its `LOG_NOT_FOUND` is listed with the ledger's). */
export const AUDIT_ERROR_CODES = [
  'NOT_JSON_VALUE',
  'LONE_SURROGATE',
  'CYCLE',
  'NOT_PLAIN_OBJECT',
  'NON_FINITE_NUMBER',
  'MALFORMED_CHECKPOINT',
  'MALFORMED_PROOF',
  'MALFORMED_BUNDLE',
  'SERVER_UNREACHABLE',
  'SERVER_REFUSED',
  'TRUSTED_CHECKPOINT_INVALID',
  'NO_CHECKPOINT_YET',
] as const;

/** What `@vouch/verifier-sdk` refuses with (mirrors its `VERIFIER_ERROR_CODES`). */
export const VERIFIER_ERROR_CODES = [
  // definition and registration
  'VERIFIER_INVALID',
  'VERIFIER_API_UNSUPPORTED',
  'VERIFIER_DUPLICATE',
  'OPTIONS_INVALID',
  'CONDITION_INVALID',
  // configuration files
  'CONFIG_NOT_FOUND',
  'CONFIG_INVALID',
  // running a check: a caller mistake, then what the host records instead of a verdict
  'INPUT_INVALID',
  'GRANT_MISSING',
  'SOURCE_UNAVAILABLE',
  'SOURCE_FORBIDDEN',
  'VERIFIER_TIMEOUT',
  'VERIFIER_ABORTED',
  'VERIFIER_CRASHED',
  'RESULT_INVALID',
  // the test harness
  'CASE_FAILED',
  'CONFORMANCE_FAILED',
] as const;

export type ApiErrorCode = (typeof API_ERROR_CODES)[number];
export type LedgerErrorCode = (typeof LEDGER_ERROR_CODES)[number];
/** A code the server put in its error envelope. */
export type ServerErrorCode =
  | ApiErrorCode
  | (typeof AUDIT_ERROR_CODES)[number]
  | LedgerErrorCode
  | (typeof VERIFIER_ERROR_CODES)[number];

/** Every code the server can put in its error envelope, once each (`NOT_FOUND` is the API's and the ledger's). */
export const SERVER_ERROR_CODES: readonly ServerErrorCode[] = [
  ...new Set<ServerErrorCode>([
    ...API_ERROR_CODES,
    ...AUDIT_ERROR_CODES,
    ...LEDGER_ERROR_CODES,
    ...VERIFIER_ERROR_CODES,
  ]),
];
