import {
  type JsonValue,
  type SqlGrant,
  sourceForbidden,
  sourceUnavailable,
  type VerifierError,
} from '@vouch/verifier-sdk';
import postgres from 'postgres';

// postgres.js reads `simple` (false: the extended protocol, which runs one statement and no
// more, even without parameters) but does not declare it in its options type.
const ONE_STATEMENT: postgres.UnsafeQueryOptions & { simple: false } = { simple: false };

/** Options for {@link createPostgresSqlGrant}. */
export interface PostgresSqlGrantOptions {
  /** The connection's name from configuration (`ledger-db`); verifiers record it as their source. */
  name: string;
  /** A postgres:// URL. Prefer a role that can only SELECT: the transaction is read-only anyway, but least privilege is the real guard. */
  url: string;
  /** Pool size (default 2: verifiers read a row or two). */
  max?: number;
  /** Seconds to wait for a connection (default 5). */
  connectTimeoutSeconds?: number;
}

/** A read-only SQL grant that owns a connection pool. */
export interface PostgresSqlGrant extends SqlGrant {
  /** Close the pool. */
  close(): Promise<void>;
}

const ROLL_BACK = Symbol('roll back');

// SQLSTATEs that mean "you may not do this here", as opposed to "could not read".
const FORBIDDEN_SQLSTATES = new Set([
  '25006', // read_only_sql_transaction: a write inside the READ ONLY transaction
  '42501', // insufficient_privilege
]);

/**
 * A {@link SqlGrant} on one Postgres connection (the `postgres` driver).
 *
 * Every query runs inside `BEGIN READ ONLY`, always rolled back (never committed), with a
 * transaction-local `statement_timeout`, on
 * a session whose `default_transaction_read_only` is on, through the extended protocol (one
 * statement, values only as bind parameters: `commit; delete ...` cannot be smuggled in).
 * Aborting the signal cancels the statement on the server. A write is refused by Postgres and
 * thrown as `SOURCE_FORBIDDEN`; a timeout, an unreachable server or any other database error
 * as `SOURCE_UNAVAILABLE` (with the SQLSTATE in the evidence), so it never reads as `fail`.
 *
 * @example
 * const sql = createPostgresSqlGrant({ name: 'ledger-db', url: process.env.LEDGER_DATABASE_URL! });
 */
export function createPostgresSqlGrant(options: PostgresSqlGrantOptions): PostgresSqlGrant {
  const client = postgres(options.url, {
    max: options.max ?? 2,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    idle_timeout: 30,
    // postgres.js prints notices to the console by default; verifiers never write to the console.
    onnotice: () => {},
    connection: { application_name: 'vouch-verifier', default_transaction_read_only: true },
  });
  const name = options.name;
  return {
    name,
    async query(text, params, { signal, timeoutMs, maxRows }) {
      signal.throwIfAborted();
      let pending: { cancel(): void } | undefined;
      const onAbort = () => pending?.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        let rows: Record<string, unknown>[] = [];
        // Roll back, never commit: whatever the statement changed in the session (a
        // set_config(..., false), a search_path) is undone with the transaction, so no check can
        // leave state on a pooled connection for the next one to inherit. postgres.js commits
        // when the callback returns and rolls back when it throws, so it throws on purpose.
        await client
          .begin('read only', async (tx) => {
            await tx`select set_config('statement_timeout', ${String(Math.max(1, Math.floor(timeoutMs)))}, true)`;
            signal.throwIfAborted();
            const query = tx.unsafe(text, [...params], ONE_STATEMENT);
            pending = query;
            if (maxRows === undefined) rows = [...(await query)];
            else {
              // A cursor, so a query that matches a million rows costs `maxRows`, not a million.
              for await (const batch of query.cursor(maxRows)) {
                rows.push(...batch);
                break;
              }
            }
            throw ROLL_BACK;
          })
          .catch((error: unknown) => {
            if (error !== ROLL_BACK) throw error;
          });
        return rows.map((row) => toJsonRow(row as Record<string, unknown>));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw classify(error, name);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    },
    close: () => client.end({ timeout: 5 }),
  };
}

function classify(error: unknown, connection: string): VerifierError {
  const e = error as { name?: string; code?: string; message?: string };
  const code = typeof e.code === 'string' ? e.code : 'ERROR';
  if (e.name === 'PostgresError') {
    const evidence = { connection, sqlstate: code };
    if (FORBIDDEN_SQLSTATES.has(code)) {
      return sourceForbidden(
        `${connection} refused the statement (${code}): verifier queries are read-only`,
        {
          evidence,
          cause: error,
        },
      );
    }
    const what = code === '57014' ? 'the statement timed out or was cancelled' : `the query failed (${code})`;
    return sourceUnavailable(`${connection}: ${what}`, { evidence, cause: error });
  }
  // Connection-level failures: ECONNREFUSED, CONNECT_TIMEOUT, CONNECTION_CLOSED, ...
  return sourceUnavailable(`${connection} is unreachable (${code})`, {
    evidence: { connection, code },
    cause: error,
  });
}

/** A database row as plain JSON: timestamps as ISO strings, bytea as `\x` hex, bigints as decimal strings. */
export function toJsonRow(row: Record<string, unknown>): Record<string, JsonValue> {
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, toJson(value)]));
}

function toJson(value: unknown): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return `\\x${Buffer.from(value).toString('hex')}`;
  if (Array.isArray(value)) return value.map(toJson);
  if (typeof value === 'object') return toJsonRow(value as Record<string, unknown>);
  return String(value);
}
