import { type SqlGrant, sourceForbidden, sourceUnavailable, type VerifierError } from '@vouch/verifier-sdk';
import mysql from 'mysql2';
import { toJsonRow } from './postgres-sql-grant';
import { toPositionalPlaceholders } from './read-only-statement';

/** Options for {@link createMysqlSqlGrant}. */
export interface MysqlSqlGrantOptions {
  /** The connection's name from configuration (`orders-db`); verifiers record it as their source. */
  name: string;
  /** A mysql:// URL (MySQL or MariaDB). Prefer a user with SELECT on the checked tables only. */
  url: string;
  /** Pool size (default 2). */
  max?: number;
  /** Seconds to wait for a connection (default 5). */
  connectTimeoutSeconds?: number;
}

/** A read-only SQL grant on MySQL / MariaDB that owns a connection pool. */
export interface MysqlSqlGrant extends SqlGrant {
  /** Close the pool. */
  close(): Promise<void>;
}

// Server errors that mean "you may not do this here", as opposed to "could not read".
const FORBIDDEN_ERRNOS = new Set([
  1792, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  1044, // ER_DBACCESS_DENIED_ERROR
  1142, // ER_TABLEACCESS_DENIED_ERROR
  1143, // ER_COLUMNACCESS_DENIED_ERROR
  1227, // ER_SPECIFIC_ACCESS_DENIED_ERROR
  1370, // ER_PROCACCESS_DENIED_ERROR
]);
const TIMEOUT_ERRNOS = new Set([
  1969, // MariaDB ER_STATEMENT_TIMEOUT
  3024, // MySQL ER_QUERY_TIMEOUT
]);

type PoolConnection = mysql.PoolConnection;

/**
 * A {@link SqlGrant} on MySQL or MariaDB (`mysql2`). The session is read-only
 * (`SET SESSION TRANSACTION READ ONLY`), every query runs in `START TRANSACTION READ ONLY` that
 * is always rolled back and followed by a session reset, with a server-side statement timeout (MariaDB `max_statement_time`,
 * MySQL `max_execution_time`), one statement only (`multipleStatements` off), values only as
 * bind parameters (`$1`, `$2`, ... are rewritten to `?`), and rows are streamed and cut at
 * `maxRows`. Aborting destroys the connection. A refused write or a missing privilege is
 * `SOURCE_FORBIDDEN`; a timeout or an unreachable server `SOURCE_UNAVAILABLE`.
 *
 * @example
 * const sql = createMysqlSqlGrant({ name: 'orders-db', url: process.env.ORDERS_DATABASE_URL! });
 */
export function createMysqlSqlGrant(options: MysqlSqlGrantOptions): MysqlSqlGrant {
  const pool = mysql.createPool({
    uri: options.url,
    connectionLimit: options.max ?? 2,
    connectTimeout: (options.connectTimeoutSeconds ?? 5) * 1000,
    multipleStatements: false,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    idleTimeout: 30_000,
  });
  const name = options.name;
  let flavour: Promise<'mariadb' | 'mysql'> | undefined;

  const run = (conn: PoolConnection, text: string, values: unknown[] = []) =>
    new Promise<unknown>((resolve, reject) => {
      conn.query({ sql: text, values }, (error, rows) => (error ? reject(error) : resolve(rows)));
    });

  return {
    name,
    async query(text, params, { signal, timeoutMs, maxRows }) {
      signal.throwIfAborted();
      let conn: PoolConnection | undefined;
      let reusable = false;
      const onAbort = () => conn?.destroy();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        conn = await new Promise<PoolConnection>((resolve, reject) =>
          pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection))),
        );
        signal.throwIfAborted();
        flavour ??= run(conn, 'select version() as v').then((rows) =>
          /mariadb/i.test(String((rows as { v: string }[])[0]?.v)) ? 'mariadb' : 'mysql',
        );
        const server = await flavour;
        await run(conn, 'set session transaction read only');
        const ms = Math.max(1, Math.floor(timeoutMs));
        if (server === 'mysql') await run(conn, `set session max_execution_time = ${ms}`);
        await run(conn, 'start transaction read only');
        const { text: positional, order } = toPositionalPlaceholders(text);
        const statement =
          server === 'mariadb'
            ? `set statement max_statement_time = ${ms / 1000} for ${positional}`
            : positional;
        const rows = await streamRows(
          conn,
          statement,
          order.map((n) => params[n - 1]),
          maxRows,
        );
        // A cut stream leaves unread rows on the wire: that connection cannot be reused.
        reusable = !rows.cut;
        if (reusable) {
          // Roll back, then reset the session (user variables, session settings, prepared
          // statements): MySQL keeps `@x := 1` across a rollback, so a reset is what stops one
          // check from leaving state for the next on this pooled connection.
          await run(conn, 'rollback');
          await new Promise<void>((resolve, reject) =>
            conn!.reset((error) => (error ? reject(error) : resolve())),
          );
        }
        return rows.rows.map((row) => toJsonRow(row));
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw classify(error, name);
      } finally {
        signal.removeEventListener('abort', onAbort);
        if (conn !== undefined) {
          if (reusable) conn.release();
          else conn.destroy();
        }
      }
    },
    close: () => new Promise<void>((resolve) => pool.end(() => resolve())),
  };
}

function streamRows(
  conn: PoolConnection,
  sql: string,
  values: unknown[],
  maxRows: number | undefined,
): Promise<{ rows: Record<string, unknown>[]; cut: boolean }> {
  return new Promise((resolve, reject) => {
    const rows: Record<string, unknown>[] = [];
    let settled = false;
    const query = conn.execute({ sql, values });
    query.on('result', (row) => {
      if (settled) return;
      rows.push(row as Record<string, unknown>);
      if (maxRows !== undefined && rows.length >= maxRows) {
        settled = true;
        resolve({ rows, cut: true });
      }
    });
    query.on('error', (error) => {
      if (settled) return;
      settled = true;
      reject(error);
    });
    query.on('end', () => {
      if (settled) return;
      settled = true;
      resolve({ rows, cut: false });
    });
  });
}

function classify(error: unknown, connection: string): VerifierError {
  const e = error as { errno?: number; code?: string; sqlState?: string; fatal?: boolean };
  if (typeof e.errno === 'number' && typeof e.sqlState === 'string' && !e.fatal) {
    const evidence = { connection, errno: e.errno, sqlstate: e.sqlState };
    if (FORBIDDEN_ERRNOS.has(e.errno)) {
      return sourceForbidden(
        `${connection} refused the statement (${e.code}): verifier queries are read-only`,
        {
          evidence,
          cause: error,
        },
      );
    }
    const what = TIMEOUT_ERRNOS.has(e.errno) ? 'the statement timed out' : `the query failed (${e.code})`;
    return sourceUnavailable(`${connection}: ${what}`, { evidence, cause: error });
  }
  const code = typeof e.code === 'string' ? e.code : 'ERROR';
  return sourceUnavailable(`${connection} is unreachable (${code})`, {
    evidence: { connection, code },
    cause: error,
  });
}
