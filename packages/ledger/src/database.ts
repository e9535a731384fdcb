import type { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type postgres from 'postgres';
import { openPostgres } from './database-postgres';
import { LedgerError } from './errors';
import type * as schema from './schema/index';

export { constraintTableOf, isDatabaseUnavailable, sqlStateOf } from './database-errors';
export { redactUrl } from './database-postgres';
export { rowsOf } from './rows-of';

/** The drizzle handle for either driver (a transaction is one too). */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * An open database: embedded PGlite or a Postgres server, behind one drizzle schema. The two
 * implementations (`database-pglite.ts`, `database-postgres.ts`) differ only in how they
 * connect and what their driver needs; everything above this interface runs on either.
 */
export interface Database {
  readonly kind: 'pglite' | 'postgres';
  readonly db: Db;
  /** Run a drizzle `sql` query and return its rows, whichever driver runs it. */
  rows<T = Record<string, unknown>>(query: SQL, executor?: Db): Promise<T[]>;
  /** Where the data lives, for messages: a data directory, `memory`, or the URL without password. */
  readonly location: string;
  /** The underlying driver client, for the few places that need it (locks, benchmarks). */
  readonly driver:
    | { kind: 'pglite'; client: PGlite }
    | {
        kind: 'postgres';
        client: postgres.Sql;
        /**
         * The URL to open another connection to the same server with, for a worker thread
         * that reads beside this pool (parallel verification). A function, so the URL and its
         * password are not printed with the object.
         */
        reopen?: () => string;
      };
  /** How busy the connection pool is now, for metrics. */
  pool(): PoolStats;
  close(): Promise<void>;
}

/**
 * The connection pool at one moment. PGlite is one embedded connection (`max` 1) whose queue
 * is not visible, so it reports no `inUse` or `waiting`. On Postgres the counts are the
 * statements and transactions that hold or wait for a pool connection (postgres.js does not
 * expose its pool): `inUse` is at most `max`, and what is beyond it is `waiting`.
 */
export interface PoolStats {
  max: number;
  inUse?: number;
  waiting?: number;
}

export interface OpenDatabaseOptions {
  /** `postgres://…`: use that server. */
  url?: string;
  /** PGlite data directory; neither option means an in-memory PGlite. */
  dataDir?: string;
  /** Postgres pool size (default 10). */
  maxConnections?: number;
  /**
   * Postgres: how long opening a connection may take, TCP and startup included, in ms
   * (default 5000). A server that is down or unreachable then fails fast instead of after
   * the driver's 30 s.
   */
  connectTimeoutMs?: number;
  /**
   * Postgres: how long one statement may wait for its answer, in ms, counted from when it is
   * issued (so waiting for a free connection counts too); for a transaction, how long its
   * BEGIN may take and how long its COMMIT or ROLLBACK may take once its work is done
   * (default 15000). Past it the statement fails with `DATABASE_UNAVAILABLE` (and is
   * cancelled on the server when the server can be reached), so no caller waits forever on a
   * connection that went silent. Migrations are not bounded by it.
   */
  statementTimeoutMs?: number;
  /**
   * Postgres: every transaction read-only (`default_transaction_read_only`), for a handle that
   * only reads, such as one on a hot standby (`DATABASE_READ_URL`).
   */
  readOnly?: boolean;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;

/**
 * Open the database. `url` selects Postgres (production); otherwise PGlite, embedded, for
 * trying Vouch and for tests. PGlite runs with fsync off: it is not crash-durable.
 *
 * @example
 * const database = await openDatabase({ url: process.env.DATABASE_URL });
 * await migrate(database);
 */
export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<Database> {
  if (options.url) {
    return openPostgres(options.url, {
      max: options.maxConnections ?? 10,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      statementTimeoutMs: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      readOnly: options.readOnly ?? false,
    });
  }
  const { openPglite } = await importPglite();
  return openPglite(options.dataDir);
}

/** The optional package that embeds PGlite; Postgres deployments may install without it. */
const PGLITE_PACKAGE = '@electric-sql/pglite';

/**
 * The PGlite driver, loaded only when it is used: `@electric-sql/pglite` is an optional
 * dependency, so a Postgres deployment installed without it still starts.
 */
async function importPglite(): Promise<typeof import('./database-pglite')> {
  try {
    return await import('./database-pglite');
  } catch (cause) {
    if (!isMissingPackage(cause, PGLITE_PACKAGE)) throw cause;
    throw new LedgerError(
      'DATABASE_UNAVAILABLE',
      `no database: DATABASE_URL is not set, and the embedded PGlite needs the optional package ${PGLITE_PACKAGE}, which is not installed: set DATABASE_URL=postgres://…, or \`npm install ${PGLITE_PACKAGE}\``,
      { cause, details: { package: PGLITE_PACKAGE } },
    );
  }
}

function isMissingPackage(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'${name}'`);
}

/** `select 1`, for readiness checks. */
export async function ping(database: Database): Promise<void> {
  await database.rows(sql`select 1`);
}
