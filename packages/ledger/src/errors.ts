/**
 * Every code the ledger can refuse with. Closed on purpose: the API maps each one to an
 * HTTP status in a table the compiler checks, so a new code cannot ship without a status.
 */
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
  'OBSERVATION_EXISTS',
  'OBSERVATION_CONFLICT',
  'VERIFICATION_INVALID',
  // integrity: a record row the server was about to act on disagrees with its event
  'RECORD_INTEGRITY_VIOLATION',
  'SUPERSESSION_FORBIDDEN',
  'SUPERSESSION_INVALID',
] as const;

/** A stable, machine-readable reason the ledger refused something. */
export type LedgerErrorCode = (typeof LEDGER_ERROR_CODES)[number];

/** The one error class of `@vouch/ledger`; identify it with {@link isLedgerError}, not `instanceof`. */
export class LedgerError extends Error {
  override readonly name = 'LedgerError';
  readonly code: LedgerErrorCode;
  /** Plain JSON that helps a caller fix the request; never secrets. */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: LedgerErrorCode,
    message: string,
    options?: { details?: Record<string, unknown>; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }
}

/** True for a `LedgerError` from any copy of this package. */
export function isLedgerError(error: unknown): error is LedgerError {
  return (
    error instanceof Error &&
    error.name === 'LedgerError' &&
    (LEDGER_ERROR_CODES as readonly string[]).includes((error as LedgerError).code)
  );
}
