/**
 * Capabilities the host hands a verifier. A verifier never builds its own HTTP client or
 * database connection: the host decides what it may reach (an SSRF-guarded fetch, a read-only
 * SQL handle on one named connection), so a plugin cannot widen its own access.
 */

/** The grants a verifier may declare it `requires`. */
export type GrantName = 'fetch' | 'sql';

/** A WHATWG `fetch`. Hosts grant a guarded one (see `createGuardedFetch` in `@vouch/verifiers`). */
export type FetchGrant = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** A value that is bound as a query parameter, never spliced into SQL text. */
export type SqlParam = string | number | boolean | null;

/** Per-query limits: the host's deadline and how long the database may spend. */
export interface SqlQueryOptions {
  signal: AbortSignal;
  /** Upper bound for the statement in milliseconds (`statement_timeout`). */
  timeoutMs: number;
  /** Return at most this many rows; implementations stop reading from the server there. */
  maxRows?: number;
}

/**
 * A read-only SQL handle on one named connection. Implementations run every query inside a
 * READ ONLY transaction with a `statement_timeout`, with values only as bind parameters.
 */
export interface SqlGrant {
  /** The connection's name from configuration (`ledger-db`); verifiers use it as their source. */
  readonly name: string;
  /** Run one parametrized statement; resolves with its rows as plain objects keyed by column name. */
  query(
    text: string,
    params: readonly SqlParam[],
    options: SqlQueryOptions,
  ): Promise<Record<string, unknown>[]>;
}

/** What a host may grant: at most one `fetch` and one `sql` handle per verifier registration. */
export interface Grants {
  fetch?: FetchGrant;
  sql?: SqlGrant;
}
