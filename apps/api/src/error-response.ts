import { isDatabaseUnavailable } from '@vouch/ledger';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { type ErrorCode, isKnownErrorCode, statusOf } from './error-status';
import type { AppEnv } from './http/app-env';
import { summarizeError } from './logger';

export { summarizeError } from './logger';

/** The one shape of every failure the API answers with. */
export interface ErrorBody {
  error: {
    code: string;
    message: string;
    details?: unknown;
    /** Quote it when reporting a problem: the server's log line for the request carries it too. */
    request_id: string;
  };
}

/** What the caller may be told about an error. */
export interface DescribedError {
  status: ContentfulStatusCode;
  code: ErrorCode;
  message: string;
  details?: unknown;
}

// The packages whose errors carry a code and a message meant for the caller. Anything else
// (a driver error, a TypeError) is a bug or an outage, and its text is not for the caller:
// it may name tables, values or internals.
const CALLER_FACING_ERRORS = new Set(['ApiError', 'LedgerError', 'AuditError', 'VerifierError']);

const CODE_BY_HTTP_STATUS: Partial<Record<number, ErrorCode>> = {
  400: 'MALFORMED_JSON',
  401: 'UNAUTHENTICATED',
  404: 'ROUTE_NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'BODY_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/**
 * Turn anything thrown into a status, a stable code and a message safe to show. Errors are
 * recognized by `name` + `code` (not `instanceof`), so a second copy of a package still maps.
 */
export function describeError(error: unknown): DescribedError {
  if (
    error instanceof Error &&
    CALLER_FACING_ERRORS.has(error.name) &&
    isKnownErrorCode((error as { code?: unknown }).code)
  ) {
    const code = (error as Error & { code: ErrorCode }).code;
    const details = detailsOf(error);
    return {
      status: statusOf(code),
      code,
      message: error.message,
      ...(details === undefined ? {} : { details }),
    };
  }
  // The driver's own errors (a refused or broken connection, a statement past its deadline,
  // a closed PGlite) mean "retry later", not "the server is broken": 503, as the ledger's are.
  if (isDatabaseUnavailable(error)) {
    return {
      status: statusOf('DATABASE_UNAVAILABLE'),
      code: 'DATABASE_UNAVAILABLE',
      message: 'the database is unavailable; retry later',
    };
  }
  if (error instanceof HTTPException) {
    const code = CODE_BY_HTTP_STATUS[error.status];
    if (code) return { status: statusOf(code), code, message: error.message || code };
  }
  return {
    status: 500,
    code: 'INTERNAL',
    message: 'internal error: the server log has the details under this request id',
  };
}

function detailsOf(error: Error): unknown {
  const own = (error as { details?: unknown }).details;
  if (own !== undefined) return own;
  const path = (error as { path?: unknown }).path;
  return typeof path === 'string' ? { path } : undefined;
}

/** The JSON error response for `error`, with the request id. */
export function errorResponse(c: Context<AppEnv>, described: DescribedError): Response {
  const body: ErrorBody = {
    error: {
      code: described.code,
      message: described.message,
      ...(described.details === undefined ? {} : { details: described.details }),
      request_id: c.get('requestId'),
    },
  };
  c.set('errorCode', described.code);
  if (described.code === 'UNAUTHENTICATED') c.header('WWW-Authenticate', 'Bearer realm="vouch"');
  return c.json(body, described.status);
}

/** The hono `onError` handler: one envelope for every failure; 5xx are logged, never leaked. */
export function handleError(error: unknown, c: Context<AppEnv>): Response {
  const described = describeError(error);
  c.set('errorCode', described.code);
  if (described.status >= 500) {
    c.get('logger')?.error('request failed', {
      request_id: c.get('requestId'),
      code: described.code,
      error: summarizeError(error),
    });
  }
  return errorResponse(c, described);
}

/**
 * The refusal of a step taken in the same request as another (`?authorize=`, `?verify=true`):
 * what the step's own route would answer, as a value beside the record already written, which
 * stands whatever the step did. A 5xx (an outage, a bug) is logged as `handleError` logs it.
 */
export function asStepRefusal(
  error: unknown,
  c: Context<AppEnv>,
): { status: number; code: string; message: string; details?: unknown } {
  const described = describeError(error);
  if (described.status >= 500) {
    c.get('logger')?.error('step failed after its record was written', {
      request_id: c.get('requestId'),
      code: described.code,
      error: summarizeError(error),
    });
  }
  return {
    status: described.status,
    code: described.code,
    message: described.message,
    ...(described.details === undefined ? {} : { details: described.details }),
  };
}
