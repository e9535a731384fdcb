import { API_ERROR_CODES } from '@vouch/records/error-codes';

/**
 * Every code the HTTP layer itself can answer with (declared in `@vouch/records`). Codes from
 * the packages underneath (`@vouch/ledger`, `@vouch/audit`, `@vouch/verifier-sdk`) pass
 * through unchanged; the table in `error-status.ts` gives each of them, and each of these,
 * exactly one status.
 */
export { API_ERROR_CODES };

/** A stable, machine-readable reason the HTTP layer refused a request. */
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** The one error class of `@vouch/api`; identify it with {@link isApiError}, not `instanceof`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ApiErrorCode;
  /** Plain JSON that helps the caller fix the request; never secrets, never stack traces. */
  readonly details: unknown;

  constructor(code: ApiErrorCode, message: string, options?: { details?: unknown; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }
}

/** True for an `ApiError` from any copy of this package. */
export function isApiError(error: unknown): error is ApiError {
  return (
    error instanceof Error &&
    error.name === 'ApiError' &&
    (API_ERROR_CODES as readonly string[]).includes((error as ApiError).code)
  );
}
