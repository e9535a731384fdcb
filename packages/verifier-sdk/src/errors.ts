/**
 * Every code `@vouch/verifier-sdk` can raise or record. Closed on purpose: the API maps each
 * one to an HTTP status, and a check's `reason` is drawn from here when the host wrote it.
 */
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

/** A stable, machine-readable reason the SDK refused or could not do something. */
export type VerifierErrorCode = (typeof VERIFIER_ERROR_CODES)[number];

/** Where an error points: which verifier, which field (a JSON Pointer), which file. */
export interface VerifierErrorOptions {
  /** The verifier id (or registration name) the error is about. */
  verifier?: string;
  /** JSON Pointer (RFC 6901) to the offending field, e.g. `/options/url`. */
  field?: string;
  /** The configuration file the error comes from. */
  file?: string;
  /** Plain JSON a verifier wants kept with the check, e.g. the driver's error code. Never secrets. */
  evidence?: Record<string, unknown>;
  cause?: unknown;
}

/** The one error class of `@vouch/verifier-sdk`; identify it with {@link isVerifierError}, not `instanceof`. */
export class VerifierError extends Error {
  override readonly name = 'VerifierError';
  readonly code: VerifierErrorCode;
  readonly verifier: string | undefined;
  readonly field: string | undefined;
  readonly file: string | undefined;
  readonly evidence: Record<string, unknown> | undefined;

  constructor(code: VerifierErrorCode, message: string, options?: VerifierErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.verifier = options?.verifier;
    this.field = options?.field;
    this.file = options?.file;
    this.evidence = options?.evidence;
  }
}

/** True for a `VerifierError` from any copy of this package. */
export function isVerifierError(error: unknown): error is VerifierError {
  if (!(error instanceof Error) || error.name !== 'VerifierError') return false;
  const code: unknown = (error as { code?: unknown }).code;
  return typeof code === 'string' && (VERIFIER_ERROR_CODES as readonly string[]).includes(code);
}

/**
 * Throw this from `check()` when the source could not be read (connection refused, 5xx,
 * statement timeout). The host records an `error` check with code `SOURCE_UNAVAILABLE`, which
 * counts as inconclusive: "could not read the source" is never "postcondition false".
 */
export function sourceUnavailable(
  message: string,
  options?: { evidence?: Record<string, unknown>; cause?: unknown },
): VerifierError {
  return new VerifierError('SOURCE_UNAVAILABLE', message, options);
}

/**
 * Throw this from `check()` when policy forbids reading the source (an address the SSRF guard
 * refuses, a path outside the allowed roots, a write statement). Recorded as an `error` check
 * with code `SOURCE_FORBIDDEN`: a refusal to look is never a verdict on the postcondition.
 */
export function sourceForbidden(
  message: string,
  options?: { evidence?: Record<string, unknown>; cause?: unknown },
): VerifierError {
  return new VerifierError('SOURCE_FORBIDDEN', message, options);
}
