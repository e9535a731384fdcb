/**
 * Every code the Vouch server can answer with in `error.code`. Kept by hand (the client does
 * not import the server) and compared with the server's status table in
 * `test/client-conformance.test.ts`, so a code added on one side is seen on the other.
 */
export const SERVER_ERROR_CODES = [
  // @vouch/api: authentication and authorization
  'UNAUTHENTICATED',
  'ROLE_FORBIDDEN',
  'ENVIRONMENT_FORBIDDEN',
  'LOG_FORBIDDEN',
  // @vouch/api: request shape
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
  'KEY_NOT_FOUND',
  'PRECONDITION_FAILED',
  'NOT_READY',
  'NOT_CONFIGURED',
  'INTERNAL',
  // @vouch/audit
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
  // @vouch/ledger
  'INVALID_EVENT',
  'PAYLOAD_NOT_JSON',
  'PAYLOAD_TOO_LARGE',
  'LEDGER_CLOSED',
  'DATABASE_UNAVAILABLE',
  'MIGRATIONS_PENDING',
  'DATABASE_PERMISSION_DENIED',
  'CHAIN_CONFLICT',
  'INTEGRITY_ALARM',
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
  'APPROVAL_SCOPE_MISMATCH',
  'APPROVAL_EXPIRED',
  'APPROVAL_CONSUMED',
  'APPROVAL_RESOLVED',
  'APPROVAL_PAYLOAD_MISMATCH',
  'OBSERVATION_EXISTS',
  'OBSERVATION_CONFLICT',
  'VERIFICATION_INVALID',
  'RECORD_INTEGRITY_VIOLATION',
  'SUPERSESSION_FORBIDDEN',
  'SUPERSESSION_INVALID',
  // @vouch/verifier-sdk
  'VERIFIER_INVALID',
  'VERIFIER_API_UNSUPPORTED',
  'VERIFIER_DUPLICATE',
  'OPTIONS_INVALID',
  'CONFIG_NOT_FOUND',
  'CONFIG_INVALID',
  'GRANT_MISSING',
  'INPUT_INVALID',
  'RESULT_INVALID',
  'SOURCE_UNAVAILABLE',
  'SOURCE_FORBIDDEN',
  'VERIFIER_TIMEOUT',
  'VERIFIER_ABORTED',
  'VERIFIER_CRASHED',
  'CASE_FAILED',
  'CONFORMANCE_FAILED',
] as const;

/** A code the server put in its error envelope. */
export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number];

/** Codes the client itself raises, when there is no server answer to pass through. */
export const CLIENT_ERROR_CODES = [
  /** `fetch` failed: DNS, refused connection, reset, CORS. The request may or may not have arrived. */
  'NETWORK_ERROR',
  /** The request took longer than the client's timeout. */
  'TIMEOUT',
  /** The caller's AbortSignal fired. */
  'ABORTED',
  /** The server answered with a body the client cannot read (not JSON, or not the expected shape). */
  'UNEXPECTED_RESPONSE',
  /** The server answered with an error envelope whose code this client does not know (a newer server). */
  'UNRECOGNIZED_SERVER_ERROR',
  /** The server's record of the proposal does not hash to the payload this client sent. */
  'PAYLOAD_HASH_MISMATCH',
  /** The client was used wrongly: bad options, an action JSON cannot carry. */
  'INVALID_ARGUMENT',
  /** The tool ran but its observation could not be recorded; the ledger does not know it ran. */
  'OBSERVATION_NOT_RECORDED',
] as const;

/** A code the client raised itself. */
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/** Every code a {@link VouchClientError} can carry. */
export type VouchClientErrorCode = ServerErrorCode | ClientErrorCode;

/** Where an error came from and what the server said about it. */
export interface VouchClientErrorOptions {
  /** HTTP status, when the server answered. */
  status?: number | null;
  /** The server's request id: quote it when reporting a problem. */
  requestId?: string | null;
  /** The server's `error.details`, or the client's own, as plain JSON. */
  details?: unknown;
  /** The code exactly as the server sent it, also when this client does not know it. */
  serverCode?: string | null;
  cause?: unknown;
}

/**
 * The one error class of `@vouch/client`. Server refusals keep the server's `code`
 * (`EXECUTION_NOT_AUTHORIZED`, `IDEMPOTENCY_CONFLICT`, ...); identify errors with
 * {@link isVouchClientError} and the code, not `instanceof`.
 */
export class VouchClientError extends Error {
  override readonly name = 'VouchClientError';
  readonly code: VouchClientErrorCode;
  readonly status: number | null;
  readonly requestId: string | null;
  readonly details: unknown;
  readonly serverCode: string | null;

  constructor(code: VouchClientErrorCode, message: string, options?: VouchClientErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options?.status ?? null;
    this.requestId = options?.requestId ?? null;
    this.details = options?.details;
    this.serverCode = options?.serverCode ?? null;
  }
}

const ALL_CODES: ReadonlySet<string> = new Set<string>([...SERVER_ERROR_CODES, ...CLIENT_ERROR_CODES]);

/** True for a `VouchClientError` from any copy of this package; with `code`, only for that code. */
export function isVouchClientError(error: unknown, code?: VouchClientErrorCode): error is VouchClientError {
  return (
    error instanceof Error &&
    error.name === 'VouchClientError' &&
    ALL_CODES.has((error as VouchClientError).code) &&
    (code === undefined || (error as VouchClientError).code === code)
  );
}

/** True when `code` is one the server is known to send. */
export function isServerErrorCode(code: unknown): code is ServerErrorCode {
  return typeof code === 'string' && (SERVER_ERROR_CODES as readonly string[]).includes(code);
}
