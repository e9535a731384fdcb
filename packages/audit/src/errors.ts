/** Stable codes for everything `@vouch/audit` can refuse. */
export type AuditErrorCode =
  | 'NOT_JSON_VALUE'
  | 'LONE_SURROGATE'
  | 'CYCLE'
  | 'NOT_PLAIN_OBJECT'
  | 'NON_FINITE_NUMBER'
  | 'MALFORMED_CHECKPOINT'
  | 'MALFORMED_PROOF'
  | 'MALFORMED_BUNDLE'
  /** A witness could not get an answer (no connection, a 5xx): nothing was concluded. */
  | 'SERVER_UNREACHABLE'
  /** The server refused a witness's request (bad key, other log): nothing was concluded. */
  | 'SERVER_REFUSED'
  /** The checkpoint a witness was given to trust does not verify under the keys it was given. */
  | 'TRUSTED_CHECKPOINT_INVALID'
  /** At a witness's first use: the server has no log by that name (a typo?): nothing was concluded. */
  | 'LOG_NOT_FOUND'
  /** At a witness's first use: the log has no signed checkpoint yet to trust: try again after the server signs. */
  | 'NO_CHECKPOINT_YET';

/** The one error class of `@vouch/audit`: identify it by `name` and `code`, not `instanceof`. */
export class AuditError extends Error {
  override readonly name = 'AuditError';
  readonly code: AuditErrorCode;
  /** JSON Pointer (RFC 6901) to the offending value, where there is one. */
  readonly path: string | undefined;

  constructor(code: AuditErrorCode, message: string, options?: { path?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options?.path;
  }
}

/** True for an `AuditError` from any copy of this package. */
export function isAuditError(error: unknown): error is AuditError {
  return (
    error instanceof Error && error.name === 'AuditError' && typeof (error as AuditError).code === 'string'
  );
}
