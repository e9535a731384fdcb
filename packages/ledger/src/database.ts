import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { isLedgerError, LedgerError } from './errors';
import * as schema from './schema/index';

/** The drizzle handle for either driver (a transaction is one too). */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/** An open database: embedded PGlite or a Postgres server, behind one drizzle schema. */
export interface Database {
  readonly kind: 'pglite' | 'postgres';
  readonly db: Db;
  /** Run a drizzle `sql` query and return its rows, whichever driver runs it. */
  rows<T = Record<string, unknown>>(query: SQL, executor?: Db): Promise<T[]>;
  /** Where the data lives, for messages: a data directory, `memory`, or the URL without password. */
  readonly location: string;
  /** The underlying driver client, for the few places that need it (locks, benchmarks). */
  readonly driver: { kind: 'pglite'; client: PGlite } | { kind: 'postgres'; client: postgres.Sql };
  close(): Promise<void>;
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
}

const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;

const INT8_OID = 20;

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
    });
  }
  return openPglite(options.dataDir);
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  let client: PGlite;
  try {
    // int8 as a JS number: seq and tree sizes stay far below 2^53.
    client = await PGlite.create(dataDir, { parsers: { [INT8_OID]: (value: string) => Number(value) } });
  } catch (cause) {
    throw new LedgerError('DATABASE_UNAVAILABLE', `cannot open the PGlite data directory ${dataDir}`, {
      cause,
      details: { dataDir },
    });
  }
  const db = drizzlePglite({ client, schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    location: dataDir ?? 'memory',
    driver: { kind: 'pglite', client },
    rows: async <T>(query: SQL, executor: Db = db) => rowsOf<T>(await executor.execute(query)),
    close: () => client.close(),
  };
}

async function openPostgres(
  url: string,
  limits: { max: number; connectTimeoutMs: number; statementTimeoutMs: number },
): Promise<Database> {
  const raw = postgres(url, {
    max: limits.max,
    connect_timeout: limits.connectTimeoutMs / 1000,
    onnotice: () => {},
    types: {
      bigint: {
        to: INT8_OID,
        from: [INT8_OID],
        serialize: (v: number) => String(v),
        parse: (v: string) => Number(v),
      },
    },
  });
  const location = redactUrl(url);
  const client = withDeadlines(raw, limits.statementTimeoutMs);
  try {
    await client.unsafe('select 1');
  } catch (cause) {
    await raw.end({ timeout: 1 }).catch(() => {});
    throw new LedgerError('DATABASE_UNAVAILABLE', `cannot connect to Postgres at ${location}`, {
      cause,
      details: { location },
    });
  }
  const db = drizzlePostgres({ client: preparedStatements(client), schema }) as unknown as Db;
  return {
    kind: 'postgres',
    db,
    location,
    driver: { kind: 'postgres', client: client as unknown as postgres.Sql },
    rows: async <T>(query: SQL, executor: Db = db) => rowsOf<T>(await executor.execute(query)),
    close: () => raw.end({ timeout: 5 }),
  };
}

/**
 * The client with every statement, and the ends of every transaction and savepoint, bounded
 * by `timeoutMs` (see `OpenDatabaseOptions.statementTimeoutMs`).
 *
 * Why here: postgres.js bounds only the opening of a connection. A statement on a connection
 * that went silent (a network partition, a server that stopped answering) waits for TCP to
 * give up, minutes later, and so does every request behind it: the ledger's append batch for
 * that log, the requests waiting on that batch. Bounding each statement keeps every request
 * to a known time and turns the outage into `DATABASE_UNAVAILABLE`.
 */
function withDeadlines(client: postgres.Sql, timeoutMs: number): postgres.Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (...args: Parameters<postgres.Sql['unsafe']>) => boundQuery(target.unsafe(...args), timeoutMs);
      }
      if (property === 'begin' || property === 'savepoint') {
        const open = Reflect.get(target, property, receiver) as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const body = args[last] as (inner: postgres.Sql) => unknown;
          const phases = transactionPhases(timeoutMs, property);
          args[last] = async (inner: postgres.Sql) => {
            phases.started();
            try {
              return await body(withDeadlines(inner, timeoutMs));
            } finally {
              phases.finished();
            }
          };
          return phases.bound(open.apply(target, args));
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

function deadlineError(timeoutMs: number, what: string): LedgerError {
  return new LedgerError(
    'DATABASE_UNAVAILABLE',
    `the database did not answer ${what} within ${timeoutMs} ms`,
    {
      details: { timeoutMs },
    },
  );
}

/**
 * A postgres.js query whose answer is awaited for at most `timeoutMs`. The query object is
 * kept (drizzle calls `.values()` on it before awaiting); only how it is awaited changes.
 */
function boundQuery<Q extends object>(pending: Q, timeoutMs: number): Q {
  type Then = (
    onFulfilled?: (value: unknown) => unknown,
    onRejected?: (error: unknown) => unknown,
  ) => Promise<unknown>;
  const query = pending as unknown as { then: Then; cancel(): unknown };
  const run = query.then;
  let answer: Promise<unknown> | undefined;
  // biome-ignore lint/suspicious/noThenProperty: the query is a thenable already; this bounds how it is awaited
  query.then = (onFulfilled, onRejected) => {
    answer ??= new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // Stop it on the server when the server can be reached; the caller is answered now either way.
        void Promise.resolve(query.cancel()).catch(() => {});
        reject(deadlineError(timeoutMs, 'a statement'));
      }, timeoutMs);
      run.call(
        query,
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
    return answer.then(onFulfilled, onRejected);
  };
  return pending;
}

/** Bounds a transaction's BEGIN (until its body starts) and its COMMIT or ROLLBACK (once its body is done). */
function transactionPhases(timeoutMs: number, what: string) {
  let fail: ((error: unknown) => void) | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (phase: string) => {
    clearTimeout(timer);
    timer = setTimeout(() => fail?.(deadlineError(timeoutMs, `${what} (${phase})`)), timeoutMs);
  };
  return {
    started: () => clearTimeout(timer),
    finished: () => arm('end'),
    bound<T>(transaction: Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        fail = reject;
        arm('start');
        transaction.then(
          (value) => {
            clearTimeout(timer);
            resolve(value);
          },
          (error: unknown) => {
            clearTimeout(timer);
            reject(error);
          },
        );
      });
    },
  };
}

/**
 * The client drizzle is given: every statement as a named prepared statement, on every
 * connection and in every transaction and savepoint.
 *
 * Why: drizzle sends each query with `prepare: false`, and postgres.js then asks the server
 * to describe every statement that has parameters before it binds it: two round trips and a
 * parse and plan on the server, for every query. Prepared, a statement is parsed once per
 * connection (postgres.js keeps them by text and parameter types) and costs one round trip.
 * The hot statements have one text whatever their size (`unnest` inserts, `= any($1)` reads),
 * so the set of statements a connection keeps stays small.
 */
function preparedStatements(client: postgres.Sql): postgres.Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, parameters?: unknown[], options?: Record<string, unknown>) =>
          // Drizzle hands its parameters on as `unknown[]`; postgres.js serializes each as before.
          target.unsafe(query, parameters as postgres.ParameterOrJSON<never>[] | undefined, {
            ...options,
            prepare: true,
          });
      }
      if (property === 'begin' || property === 'savepoint') {
        const open = Reflect.get(target, property, receiver) as (...args: unknown[]) => unknown;
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const body = args[last] as (inner: postgres.Sql) => unknown;
          args[last] = (inner: postgres.Sql) => body(preparedStatements(inner));
          return open.apply(target, args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/** The rows of a drizzle `execute` result, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  // postgres-js returns the rows array itself; PGlite returns { rows }.
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
}

/** The URL with any password removed, safe for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable url)';
  }
}

/** `select 1`, for readiness checks. */
export async function ping(database: Database): Promise<void> {
  await database.rows(sql`select 1`);
}

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
