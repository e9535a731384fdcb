import { SERVER_ERROR_CODES } from '@vouch/records/error-codes';

/**
 * Every code the Vouch server can answer with in `error.code`, from `@vouch/records` (the
 * list the server's own packages take theirs from; a module with no zod in it).
 */
export { SERVER_ERROR_CODES };

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

/**
 * The error a step taken in the same request as another (`authorization_refused`,
 * `verification_refused`) would have been, had it been its own call.
 */
export function stepRefusalError(refusal: {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}): VouchClientError {
  const code = isServerErrorCode(refusal.code) ? refusal.code : 'UNRECOGNIZED_SERVER_ERROR';
  return new VouchClientError(code, refusal.message, {
    status: refusal.status,
    details: refusal.details,
    serverCode: refusal.code,
  });
}
