import { LEDGER_ERROR_CODES } from '@vouch/records/error-codes';

/**
 * Every code the ledger can refuse with (declared in `@vouch/records`, with every other code
 * the server answers with). Closed on purpose: the API maps each one to an HTTP status in a
 * table the compiler checks, so a new code cannot ship without a status.
 */
export { LEDGER_ERROR_CODES };

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
