import type { SQL } from 'drizzle-orm';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Database, Db } from './database';
import { LedgerError } from './errors';
import { rowsOf } from './rows-of';
import * as schema from './schema/index';

const INT8_OID = 20;

/** A Postgres server at `url`, through a postgres.js pool whose every wait is bounded. */
export async function openPostgres(
  url: string,
  limits: { max: number; connectTimeoutMs: number; statementTimeoutMs: number; readOnly: boolean },
): Promise<Database> {
  const raw = postgres(url, {
    max: limits.max,
    ...(limits.readOnly ? { connection: { default_transaction_read_only: true } } : {}),
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
  const busy = { count: 0 };
  const client = withDeadlines(raw, limits.statementTimeoutMs, busy);
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
    driver: {
      kind: 'postgres',
      client: client as unknown as postgres.Sql,
      reopen: () => url,
    },
    rows: async <T>(query: SQL, executor: Db = db) => rowsOf<T>(await executor.execute(query)),
    pool: () => ({
      max: limits.max,
      inUse: Math.min(busy.count, limits.max),
      waiting: Math.max(0, busy.count - limits.max),
    }),
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
function withDeadlines(client: postgres.Sql, timeoutMs: number, busy?: { count: number }): postgres.Sql {
  // `busy` counts what holds or waits for a pool connection: only the pool's own statements
  // and transactions (the root client's); statements inside a transaction use its connection.
  const held = <T>(work: () => PromiseLike<T>): Promise<T> => {
    if (!busy) return Promise.resolve(work());
    busy.count++;
    const running = Promise.resolve(work());
    const release = () => {
      busy.count--;
    };
    running.then(release, release);
    return running;
  };
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (...args: Parameters<postgres.Sql['unsafe']>) =>
          boundQuery(target.unsafe(...args), timeoutMs, held);
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
          return held(() => phases.bound(open.apply(target, args)));
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
function boundQuery<Q extends object>(
  pending: Q,
  timeoutMs: number,
  held: <T>(work: () => PromiseLike<T>) => Promise<T> = (work) => Promise.resolve(work()),
): Q {
  type Then = (
    onFulfilled?: (value: unknown) => unknown,
    onRejected?: (error: unknown) => unknown,
  ) => Promise<unknown>;
  const query = pending as unknown as { then: Then; cancel(): unknown };
  const run = query.then;
  let answer: Promise<unknown> | undefined;
  // biome-ignore lint/suspicious/noThenProperty: the query is a thenable already; this bounds how it is awaited
  query.then = (onFulfilled, onRejected) => {
    answer ??= held(
      () =>
        new Promise((resolve, reject) => {
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
        }),
    ) as Promise<unknown>;
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
 * Why: prepared, a statement is parsed once per connection (postgres.js keeps them by text
 * and parameter types) and costs one round trip; unprepared, postgres.js first asks the server
 * to describe every statement that has parameters: two round trips and a parse and plan, for
 * every query. The hot statements have one text whatever their size (`unnest` inserts,
 * `= any($1)` reads), so the set of statements a connection keeps stays small.
 *
 * Why a wrapper and not an option: postgres.js prepares by default (its `prepare` option),
 * but a per-query option wins over it, and drizzle-orm (0.45, `postgres-js/session.js`) passes
 * `{ prepare: false }` with every query not built with `.prepare(name)`. Drizzle has no
 * setting for it, and `.prepare(name)` needs each query built once and kept, which the
 * ledger's queries (built per call, most with `sql` templates) are not. So the client drizzle
 * holds turns that one option back on, and nothing else: drizzle reaches the server only
 * through `unsafe`, `begin` and `savepoint`. `database-postgres.test.ts` checks on a real
 * server that drizzle's statements arrive prepared, so an upgrade that changes this fails a
 * test instead of silently doubling round trips.
 */
function preparedStatements(client: postgres.Sql): postgres.Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, parameters?: unknown[], options?: Record<string, unknown>) =>
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
