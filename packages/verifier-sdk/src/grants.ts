/**
 * Capabilities the host hands a verifier. A verifier never builds its own HTTP client or
 * database connection: the host decides what it may reach (an SSRF-guarded fetch, a read-only
 * SQL handle on one named connection), so a plugin cannot widen its own access.
 */

/** The grants a verifier may declare it `requires`. */
export type GrantName = 'fetch' | 'sql' | 'redis';

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

/** The Redis commands a {@link RedisGrant} runs: reads only. */
export type RedisReadCommand =
  | 'GET'
  | 'MGET'
  | 'EXISTS'
  | 'TYPE'
  | 'TTL'
  | 'PTTL'
  | 'STRLEN'
  | 'HGET'
  | 'HMGET'
  | 'HGETALL'
  | 'HEXISTS'
  | 'HLEN'
  | 'LLEN'
  | 'LRANGE'
  | 'LINDEX'
  | 'SCARD'
  | 'SISMEMBER'
  | 'SMEMBERS'
  | 'ZCARD'
  | 'ZSCORE'
  | 'ZRANK'
  | 'ZRANGE'
  | 'XLEN';

/** Per-command limits: the host's deadline. */
export interface RedisCommandOptions {
  signal: AbortSignal;
  /** Upper bound for the command in milliseconds. */
  timeoutMs: number;
}

/**
 * A read-only Redis handle on one named connection. Implementations refuse anything but
 * {@link RedisReadCommand}s, and may confine keys to a configured prefix.
 */
export interface RedisGrant {
  /** The connection's name from configuration (`session-cache`); verifiers use it as their source. */
  readonly name: string;
  /** Run one read command; resolves with its reply as plain JSON (bulk strings as text). */
  command(
    name: RedisReadCommand,
    args: readonly (string | number)[],
    options: RedisCommandOptions,
  ): Promise<unknown>;
}

/** What a host may grant: at most one `fetch`, one `sql` and one `redis` handle per verifier registration. */
export interface Grants {
  fetch?: FetchGrant;
  sql?: SqlGrant;
  redis?: RedisGrant;
}
