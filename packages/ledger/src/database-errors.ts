import { isLedgerError } from './errors';

/** The table a database error names (a constraint's table), looking through wrappers; either driver. */
export function constraintTableOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    // postgres.js names it `table_name`; PGlite (pg-protocol) `table`.
    const table =
      (e as { table_name?: unknown; table?: unknown }).table_name ?? (e as { table?: unknown }).table;
    if (typeof table === 'string' && table !== '') return table;
  }
  return undefined;
}

/** Error codes of a connection that failed or broke (Node's socket errors and postgres.js's own). */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);

/**
 * SQLSTATEs that say the server cannot serve now, not that the statement was wrong: class 08
 * (connection exception), 53300 too many connections, 57P01-57P03 shutdown / cannot connect
 * now, 57014 a statement cancelled (by the deadline of `withDeadlines`, or statement_timeout).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|53300|57P0[123]|57014)$/;

/**
 * True when `error` (or an error it wraps) says the database could not be reached or did not
 * answer in time: the caller should retry later, not fix its request. Either driver.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (isLedgerError(e)) return e.code === 'DATABASE_UNAVAILABLE';
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) {
      return true;
    }
    // PGlite after close(), or after its WebAssembly instance died.
    if (e instanceof Error && /^PGlite is closed/.test(e.message)) return true;
  }
  return false;
}

/** The SQLSTATE of a database error, looking through drizzle's wrapper (`cause`). */
export function sqlStateOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
