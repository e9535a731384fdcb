import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { LedgerError } from './errors';
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
}

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
  if (options.url) return openPostgres(options.url, options.maxConnections ?? 10);
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

async function openPostgres(url: string, max: number): Promise<Database> {
  const client = postgres(url, {
    max,
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
  try {
    await client`select 1`;
  } catch (cause) {
    await client.end({ timeout: 1 }).catch(() => {});
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
    close: () => client.end({ timeout: 5 }),
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
          target.unsafe(query, parameters as never, { ...options, prepare: true });
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

/** The SQLSTATE of a database error, looking through drizzle's wrapper (`cause`). */
export function sqlStateOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
