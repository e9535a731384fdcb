import {
  type ChainHead,
  eventHashOf,
  GENESIS_PREV_HASH,
  payloadHashOf,
  type StoredEvent,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { type ConflictKeys, mergeOrders, planWaves } from './batch-plan';
import { insertRows } from './batched-sql';
import { constraintTableOf, type Database, type Db, sqlStateOf } from './database';
import { LedgerError } from './errors';
import {
  type AppendInput,
  assertLogId,
  DEFAULT_EVENT_LIMITS,
  type EventLimits,
  prepareEvent,
} from './event-input';
import { insertEvents, readEvents, readHead, streamEvents } from './event-store';
import { createIntegrityAlarm, type IntegrityAlarm } from './integrity-alarm';
import { merkleAppendHook } from './merkle/merkle-append-hook';
import { type LogVerificationReport, type VerifyChainOptions, verifyChain } from './verify-chain';

/** Where a staged record row points: the event staged with it, once that event has its seq. */
export interface EventLink {
  logId: string;
  eventSeq: number;
}

/** A record row staged with its event; `values` is called with the event's link once it has a seq. */
export interface StagedRow {
  table: PgTable;
  values(link: EventLink): Record<string, unknown>;
}

/** Inside {@link Ledger.transactConcurrently}: reads through `db`, writes only by staging. */
export interface StagingTransaction {
  /** The batch transaction: the committed state and every earlier wave of this batch. Reads only. */
  readonly db: Db;
  readonly database: Database;
  readonly log: string;
  /** ISO 8601 time of this batch. */
  readonly now: string;
  /**
   * Stage an event, and the record row that points at it. Both are written after the work
   * returns, with the seq the event gets then; if the work throws, neither is.
   */
  stage(input: Omit<AppendInput, 'log'>, row?: StagedRow): void;
  /**
   * Claim a key that only the work's own reads could name (the approval scope a decision
   * turned out to need). If other work of the same wave claimed it first, this work stops
   * here, keeps nothing it staged, and runs again in a later wave, after that work.
   */
  claim(key: string): void;
}

/** Inside {@link Ledger.transact}: work that runs alone, so it may also write through `db` and append at once. */
export interface LedgerTransaction extends StagingTransaction {
  /** The drizzle transaction: do reads and record-table writes here. */
  readonly db: Db;
  /** Append an event to this log now; it gets the next seq at once. */
  append(input: Omit<AppendInput, 'log'>): Promise<StoredEvent>;
}

/** Runs inside the append transaction after a log's events are written (Merkle storage). */
export type AppendHook = (
  tx: Db,
  log: string,
  events: readonly StoredEvent[],
  database: Database,
) => Promise<void>;

export interface LedgerOptions {
  limits?: Partial<EventLimits>;
  /** Most appends committed in one transaction (default 512). */
  maxBatch?: number;
  /**
   * How long (ms) a batch may wait for more appends before it starts, when it holds fewer
   * than `maxBatch` (default 0: start at once; appends that arrive while a batch is in
   * flight join the next one anyway). A small wait trades latency for larger batches when
   * commits are faster than arrivals.
   */
  maxWaitMs?: number;
  /** Clock, for tests. */
  now?: () => Date;
  /** Hooks run in each batch transaction after its events are inserted (after the Merkle hook). */
  afterAppend?: AppendHook[];
  /**
   * Store the Merkle tree in the append transaction (default true). Off only for benchmarks
   * and tests that need a log without its tree; proofs and checkpoints need it on.
   */
  merkle?: boolean;
  /**
   * Raised when an append is refused because the stored chain or Merkle tree disagrees with
   * itself (`CHAIN_CONFLICT`), and by the records service's checked reads
   * (`RECORD_MISMATCH`): share the server's one alarm here. Default: a fresh one.
   */
  integrityAlarm?: IntegrityAlarm;
}

/** The append-only, hash-chained ledger over one database. */
export interface Ledger {
  readonly database: Database;
  /** The integrity alarm this ledger raises, and that anything holding the ledger may raise. */
  readonly integrityAlarm: IntegrityAlarm;
  /** Append one event. Resolves after the transaction holding it has committed. */
  append(input: AppendInput): Promise<StoredEvent>;
  /**
   * Run `work` alone in the log's next batch transaction, under the log's lock, in its own
   * savepoint: if it throws, only its own writes roll back and the promise rejects. For
   * work that writes through `db` directly; record writes use {@link transactConcurrently}.
   */
  transact<T>(log: string, work: (tx: LedgerTransaction) => Promise<T>): Promise<T>;
  /**
   * Run `work` in the log's next batch, beside the other work of that batch whose keys do
   * not collide with `keys` (see {@link ConflictKeys}): the reads of a whole wave of work go
   * out together, and its writes go in as one insert per table, instead of a savepoint and
   * a round trip per statement for each. The work reads through `tx.db` and writes only with
   * `tx.stage`; if it throws, nothing it staged is written. Resolves after the commit.
   */
  transactConcurrently<T>(
    log: string,
    keys: ConflictKeys,
    work: (tx: StagingTransaction) => Promise<T>,
  ): Promise<T>;
  head(log: string): Promise<ChainHead | null>;
  events(log: string, page?: { after?: number; limit?: number }): Promise<StoredEvent[]>;
  streamEvents(log: string, options?: { after?: number; pageSize?: number }): AsyncIterable<StoredEvent>;
  verifyChain(options: VerifyChainOptions): Promise<LogVerificationReport>;
  /** Stop taking appends and wait for every pending one to settle. Does not close the database. */
  close(): Promise<void>;
}

/**
 * Below this many events a log is young, and its batches run with custom plans.
 *
 * Why: each inserted row's link check (the foreign key to the row before) is a query whose
 * generic plan the server caches per connection. Built while the table is tiny and has no
 * statistics, that plan can pick the index on (log_id, entity_id), which then ties on cost
 * with the link index, and filter every row of the log: O(n) per append until the table
 * is next analyzed, which PGlite never does. Forcing custom plans while the log is young
 * means the generic plan is only built once the table is big enough for the planner to
 * tell the indexes apart. Custom plans cost ~30 us of server time per row, so only the
 * first batches of a log pay it.
 */
const YOUNG_LOG_EVENTS = 1_000;

type Settle = { resolve(value: unknown): void; reject(e: unknown): void };

type Pending =
  | ({
      type: 'event';
      input: AppendInput;
      /** Canonicalized and hashed before the batch takes the lock: it depends on the input alone. */
      staged: StagedEvent;
    } & Settle)
  | ({ type: 'work'; work: (tx: LedgerTransaction) => Promise<unknown> } & Settle)
  | ({ type: 'staged'; keys: ConflictKeys; work: (tx: StagingTransaction) => Promise<unknown> } & Settle);

/** An event a work item staged, with the record row that will point at it. */
interface StagedEvent {
  kind: string;
  entity: string;
  actor: string;
  canonicalPayload: string;
  payloadHash: string;
  row: StagedRow | undefined;
}

/** A staged row once its event has a seq. */
interface RowToInsert {
  table: PgTable;
  values: Record<string, unknown>;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface LogQueue {
  pending: Pending[];
  flushing: Promise<void> | null;
  /** Set while a batch waits (`maxWaitMs`) for more appends: wakes it once it is full. */
  full: (() => void) | null;
}

/** Plain appends declare no keys: they run beside anything that declares its own. */
const NO_KEYS: ConflictKeys = {};

/**
 * Create a ledger. Appends to one log are serialized in the database (a transaction-scoped
 * advisory lock on the log), never in process memory, so any number of processes can
 * append to one Postgres; appends that arrive while a batch is in flight join the next one
 * (group commit), which is what makes durable appends fast.
 *
 * @example
 * const ledger = createLedger(await openDatabase());
 * const event = await ledger.append({ log: 'default', kind: 'note', entity: 'n1', actor: 'user:alice', payload: { hi: 1 } });
 */
export function createLedger(database: Database, options: LedgerOptions = {}): Ledger {
  const limits: EventLimits = { ...DEFAULT_EVENT_LIMITS, ...options.limits };
  const maxBatch = options.maxBatch ?? 512;
  const maxWaitMs = options.maxWaitMs ?? 0;
  const clock = options.now ?? (() => new Date());
  const integrityAlarm = options.integrityAlarm ?? createIntegrityAlarm();
  // The Merkle tree is stored in the same transaction as the events it covers, always.
  const hooks = [...(options.merkle === false ? [] : [merkleAppendHook]), ...(options.afterAppend ?? [])];
  const queues = new Map<string, LogQueue>();
  // The last head seq this process committed per log: a performance hint only (see below).
  const knownHeads = new Map<string, number>();
  /** ANALYZE runs in flight (see refreshStatistics): `close` waits for them. */
  const maintenance = new Set<Promise<void>>();
  let closed = false;

  const enqueue = (log: string, item: Pending) => {
    if (closed) {
      item.reject(new LedgerError('LEDGER_CLOSED', 'the ledger is shutting down and takes no new appends'));
      return;
    }
    let queue = queues.get(log);
    if (!queue) {
      queue = { pending: [], flushing: null, full: null };
      queues.set(log, queue);
    }
    queue.pending.push(item);
    if (queue.full && queue.pending.length >= maxBatch) queue.full();
    if (!queue.flushing) queue.flushing = drain(log, queue);
  };

  /** Resolves after `maxWaitMs`, or as soon as the queue holds a full batch. */
  const fill = (queue: LogQueue) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => queue.full?.(), maxWaitMs);
      queue.full = () => {
        clearTimeout(timer);
        queue.full = null;
        resolve();
      };
    });

  // One batch per log is in flight at a time in this process; appends that arrive while it
  // commits wait in `pending` and go together in the next one (group commit).
  const drain = async (log: string, queue: LogQueue) => {
    while (queue.pending.length > 0) {
      // Give the event loop a turn before each batch, so the requests already waiting on
      // sockets reach their appends and join it. Postgres I/O yields on its own; PGlite runs
      // each query synchronously, and without this turn its batches would hold one request.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (maxWaitMs > 0 && queue.pending.length < maxBatch && !closed) await fill(queue);
      await commitBatch(log, () => queue.pending.splice(0, maxBatch), false);
    }
    queue.flushing = null;
    if (queue.pending.length === 0) queues.delete(log);
  };

  /** Validate an event, canonicalize and hash its payload: all it needs before it gets a seq. */
  const stageEvent = (input: AppendInput, row?: StagedRow): StagedEvent => {
    const { canonicalPayload } = prepareEvent(input, limits);
    const { kind, entity, actor } = input;
    return { kind, entity, actor, canonicalPayload, payloadHash: payloadHashOf(canonicalPayload), row };
  };
  const stageInto =
    (log: string, into: StagedEvent[]) =>
    (input: Omit<AppendInput, 'log'>, row?: StagedRow): void => {
      into.push(stageEvent({ ...input, log }, row));
    };

  /**
   * One batch in one transaction. Its items run in waves (see `planWaves`): the staged work
   * of a wave runs side by side, then the wave's events get their seqs in batch order and
   * go in with their record rows, one multi-row insert per table. Work without keys runs
   * alone, in its own savepoint, as it always did.
   *
   * The batch is taken (`take`) only once the transaction holds the log's lock, so appends
   * that arrive while it waits for a connection or the lock still join it: on PGlite, whose
   * queries queue behind the open transaction, that is what makes a batch more than one item.
   *
   * `isolated`: every item alone, its work and its writes in a savepoint of its own. The retry
   * after a wave's writes broke a constraint the keys did not foresee, or a read of one item
   * failed on the server (which aborts the whole transaction): nothing of the batch
   * committed, and one item at a time each gets its own answer.
   */
  const commitBatch = async (log: string, take: () => Pending[], isolated: boolean): Promise<void> => {
    let batch: Pending[] | null = null;
    let outcomes: Outcome[] = [];
    let headAfter = 0;
    let waveRefused = false;
    let workFailedInDatabase = false;
    try {
      await database.db.transaction(async (tx) => {
        // Two statements, sent together (postgres-js pipelines them on the transaction's
        // connection; the server runs them in order): one round trip. The head is read by
        // the second, whose READ COMMITTED snapshot is taken only after the first has the
        // lock, so it sees every batch that committed before ours, from any process.
        const young = (knownHeads.get(log) ?? 0) < YOUNG_LOG_EVENTS;
        const [, found] = await Promise.all([
          database.rows(
            young
              ? sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0)), set_config('plan_cache_mode', 'force_custom_plan', true)`
              : sql`select pg_advisory_xact_lock(hashtextextended(${log}, 0))`,
            tx,
          ),
          readHead(database, log, tx),
        ]);
        const items = take();
        batch = items;
        outcomes = new Array(items.length);
        let head = found ?? { seq: 0, hash: GENESIS_PREV_HASH };
        const now = clock().toISOString();
        const written: StoredEvent[] = [];

        const chain = (s: StagedEvent): StoredEvent => {
          const header = {
            log,
            seq: head.seq + 1,
            kind: s.kind,
            entity: s.entity,
            actor: s.actor,
            at: now,
            payload_hash: s.payloadHash,
            prev_hash: head.hash,
          };
          const event: StoredEvent = { ...header, payload: s.canonicalPayload, hash: eventHashOf(header) };
          head = { seq: event.seq, hash: event.hash };
          return event;
        };
        /** Chain staged events; their rows, now linked to their seqs, in staging order. */
        const chainAll = (staged: readonly StagedEvent[], events: StoredEvent[]): RowToInsert[] => {
          const rows: RowToInsert[] = [];
          for (const s of staged) {
            const event = chain(s);
            events.push(event);
            if (s.row)
              rows.push({ table: s.row.table, values: s.row.values({ logId: log, eventSeq: event.seq }) });
          }
          return rows;
        };

        /** Work in a savepoint of its own: its failure, a database error included, is its alone. */
        const runAlone = async (index: number, work: (tx: LedgerTransaction) => Promise<unknown>) => {
          const headBefore = head;
          const mine: StoredEvent[] = [];
          try {
            const value = await tx.transaction(async (savepoint) => {
              const db = savepoint as unknown as Db;
              const staged: StagedEvent[] = [];
              const value = await work({
                db,
                database,
                log,
                now,
                stage: stageInto(log, staged),
                // Work that runs alone shares its wave with nobody.
                claim: () => {},
                append: async (input) => {
                  const event = chain(stageEvent({ ...input, log }));
                  await insertEvents(database, db, [event]);
                  mine.push(event);
                  return event;
                },
              });
              const stagedEvents: StoredEvent[] = [];
              const rows = chainAll(staged, stagedEvents);
              await insertStaged(database, db, stagedEvents, [rows]);
              mine.push(...stagedEvents);
              return value;
            });
            written.push(...mine);
            outcomes[index] = { ok: true, value };
          } catch (error) {
            head = headBefore;
            // The database's refusal says what it refused in ledger terms; the work's own errors pass.
            outcomes[index] = { ok: false, error: sqlStateOf(error) ? toStorageError(error, log) : error };
          }
        };

        /** An item as work that runs alone: the isolated retry runs every item this way. */
        const aloneWork = (item: Pending): ((tx: LedgerTransaction) => Promise<unknown>) => {
          if (item.type === 'work') return item.work;
          if (item.type === 'staged') return item.work;
          const { log: _log, ...input } = item.input;
          return (tx) => tx.append(input);
        };

        /** Runs a wave; returns the items that found a key claimed and must run after it. */
        const runWave = async (wave: readonly number[]): Promise<number[]> => {
          const claims = new Map<string, number>();
          const deferred = new Set<number>();
          // The work of a wave runs side by side: its reads go out together.
          const ran = await Promise.all(
            wave.map(async (index): Promise<{ outcome: Outcome; staged: StagedEvent[] }> => {
              const item = items[index]!;
              if (item.type === 'event')
                return { outcome: { ok: true, value: undefined }, staged: [item.staged] };
              const staged: StagedEvent[] = [];
              const claim = (key: string) => {
                const owner = claims.get(key);
                if (owner !== undefined && owner !== index) {
                  deferred.add(index);
                  // What it already holds goes too, so two pieces of work claiming two keys
                  // in opposite orders cannot hold each other off wave after wave.
                  for (const [held, by] of claims) if (by === index) claims.delete(held);
                  throw new ClaimTaken(key);
                }
                claims.set(key, index);
              };
              try {
                const work = item.work as (tx: StagingTransaction) => Promise<unknown>;
                const value = await work({
                  db: tx as unknown as Db,
                  database,
                  log,
                  now,
                  stage: stageInto(log, staged),
                  claim,
                });
                return { outcome: { ok: true, value }, staged };
              } catch (error) {
                // A read the server refused has aborted the whole transaction, not only this work.
                if (sqlStateOf(error)) workFailedInDatabase = true;
                return { outcome: { ok: false, error }, staged: [] };
              }
            }),
          );
          const events: StoredEvent[] = [];
          const rowsByItem: RowToInsert[][] = [];
          wave.forEach((index, k) => {
            // Deferred work is run again whatever it made of the refused claim.
            if (deferred.has(index)) return;
            const { outcome, staged } = ran[k]!;
            outcomes[index] = outcome;
            if (!outcome.ok) return;
            const first = events.length;
            rowsByItem.push(chainAll(staged, events));
            if (items[index]!.type === 'event') outcomes[index] = { ok: true, value: events[first] };
          });
          try {
            await insertStaged(database, tx as unknown as Db, events, rowsByItem);
          } catch (error) {
            waveRefused = true;
            throw error;
          }
          written.push(...events);
          return wave.filter((index) => deferred.has(index));
        };

        const indices = items.map((_, i) => i);
        const waves = isolated
          ? indices.map((i) => [i])
          : planWaves(indices, (i) => keysOf(items[i]!), maxBatch);
        for (let wave = waves.shift(); wave; wave = waves.shift()) {
          const first = items[wave[0]!]!;
          if (isolated || first.type === 'work') await runAlone(wave[0]!, aloneWork(first));
          else {
            const deferred = await runWave(wave);
            if (deferred.length > 0) waves.unshift(deferred);
          }
        }
        headAfter = head.seq;
        for (const hook of hooks)
          if (written.length > 0) await hook(tx as unknown as Db, log, written, database);
      });
    } catch (cause) {
      // The keys did not foresee a conflict the database caught, or one item's read failed
      // and took the transaction down with it: run the batch again, each item alone in a
      // savepoint, so each gets its own answer (nothing of this attempt committed).
      const failed = batch ?? take();
      const refusedByKeys = waveRefused && isConstraintViolation(cause);
      if (!isolated && (refusedByKeys || workFailedInDatabase)) return commitBatch(log, () => failed, true);
      const error = toStorageError(cause, log);
      raiseOnChainConflict(integrityAlarm, error, log);
      for (const item of failed) item.reject(error);
      return;
    }
    const taken = batch!;
    const before = knownHeads.get(log) ?? 0;
    knownHeads.set(log, headAfter);
    taken.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else {
        raiseOnChainConflict(integrityAlarm, outcome.error, log);
        item.reject(outcome.error);
      }
    });
    // Leaving its young phase, the log's batches switch to generic plans: give the planner
    // statistics to build them from (see refreshStatistics). Beside the appends, not in their
    // way: a plan built before it lands is rebuilt once ANALYZE invalidates it.
    if (before < YOUNG_LOG_EVENTS && headAfter >= YOUNG_LOG_EVENTS) {
      const running = refreshStatistics(database).finally(() => maintenance.delete(running));
      maintenance.add(running);
    }
  };

  return {
    database,
    integrityAlarm,
    append(input) {
      return new Promise<StoredEvent>((resolve, reject) => {
        enqueue(input.log, {
          type: 'event',
          input,
          staged: stageEvent(input),
          resolve: resolve as (v: unknown) => void,
          reject,
        });
      });
    },
    transact<T>(log: string, work: (tx: LedgerTransaction) => Promise<T>) {
      return new Promise<T>((resolve, reject) => {
        assertLogId(log);
        enqueue(log, { type: 'work', work, resolve: resolve as (v: unknown) => void, reject });
      });
    },
    transactConcurrently<T>(log: string, keys: ConflictKeys, work: (tx: StagingTransaction) => Promise<T>) {
      return new Promise<T>((resolve, reject) => {
        assertLogId(log);
        enqueue(log, { type: 'staged', keys, work, resolve: resolve as (v: unknown) => void, reject });
      });
    },
    head: (log) => readHead(database, log),
    events: (log, page = {}) =>
      readEvents(database, log, page.after ?? 0, Math.min(page.limit ?? 100, 10_000)),
    streamEvents: (log, opts = {}) => streamEvents(database, log, opts),
    verifyChain: (opts) => verifyChain(database, opts),
    async close() {
      closed = true;
      // A batch waiting to fill starts now.
      for (const queue of queues.values()) queue.full?.();
      while (queues.size > 0) {
        await Promise.all([...queues.values()].map((q) => q.flushing));
      }
      await Promise.all(maintenance);
    },
  };
}

/** Thrown into work whose claim another work of its wave holds: it runs again in the next wave. */
class ClaimTaken extends Error {
  override readonly name = 'ClaimTaken';
  constructor(key: string) {
    super(`key ${key} is claimed by other work of this wave; this work runs again after it`);
  }
}

function keysOf(item: Pending): ConflictKeys | null {
  if (item.type === 'event') return NO_KEYS;
  if (item.type === 'staged') return item.keys;
  return null;
}

/**
 * Insert a wave's events, then its record rows: one statement per table, the tables in an
 * order every work item agrees with, so a row's reference to a row its work staged before
 * points backwards (foreign keys are checked at the end of each statement).
 */
async function insertStaged(
  database: Database,
  db: Db,
  events: readonly StoredEvent[],
  rowsByItem: readonly (readonly RowToInsert[])[],
): Promise<void> {
  if (events.length > 0) await insertEvents(database, db, events);
  const order = mergeOrders(rowsByItem.map((rows) => rows.map((r) => r.table)));
  if (!order) {
    for (const rows of rowsByItem) for (const r of rows) await insertRows(database, db, r.table, [r.values]);
    return;
  }
  for (const table of order) {
    const values = rowsByItem.flatMap((rows) => rows.filter((r) => r.table === table).map((r) => r.values));
    await insertRows(database, db, table, values);
  }
}

/**
 * `ANALYZE` when the ledger's tables have no statistics yet (a database younger than
 * autovacuum's first pass, or PGlite, which never analyzes on its own).
 *
 * Why: every row a batch inserts is checked by foreign keys (the chain link, each record's
 * event, a decision's proposal, ...), whose queries the server plans once per connection and
 * caches. A plan built without statistics can pick the wrong one of the indexes that start
 * with log_id and scan the whole log for each check: O(n) per row, measured as a 64-row
 * insert growing from 2 ms to 60 ms within a few thousand events. ANALYZE invalidates those
 * plans, and the next ones are built from real row counts. Costs one sampled pass, once.
 */
async function refreshStatistics(database: Database): Promise<void> {
  try {
    const [row] = await database.rows<{ tuples: number }>(
      sql`select reltuples::float8 as tuples from pg_class where oid = 'audit_events'::regclass`,
    );
    if ((row?.tuples ?? -1) < YOUNG_LOG_EVENTS) await database.rows(sql`analyze`);
  } catch {
    // Only a hint to the planner: appends are correct without it.
  }
}

/** The tables whose rows make up the chain and its tree: a conflict there is damage, not a race. */
const CHAIN_TABLES = new Set(['audit_events', 'merkle_nodes']);

/**
 * A `CHAIN_CONFLICT` means the chain or tree in the database disagrees with itself (the
 * Merkle hook found it, or the database refused a row of the chain): with every append
 * under the log's lock, no honest writer gets there. The alarm turns a string of refused
 * appends into something an operator sees. A refusal by a record table is the caller's.
 */
function raiseOnChainConflict(alarm: IntegrityAlarm, error: unknown, log: string): void {
  if (!(error instanceof LedgerError) || error.code !== 'CHAIN_CONFLICT') return;
  const table = constraintTableOf(error);
  if (table !== undefined && !CHAIN_TABLES.has(table)) return;
  const seq = error.details?.seq;
  alarm.raise({
    code: 'CHAIN_CONFLICT',
    log,
    ...(typeof seq === 'number' ? { seq } : {}),
    ...(table === undefined ? {} : { table }),
    message: error.message,
  });
}

/** SQLSTATE class 23: the database refused a row (unique, foreign key, check). */
function isConstraintViolation(error: unknown): boolean {
  return sqlStateOf(error)?.startsWith('23') ?? false;
}

function toStorageError(cause: unknown, log: string): unknown {
  if (cause instanceof LedgerError) return cause;
  const code = sqlStateOf(cause);
  // 23505 unique / 23503 foreign key on the chain: another writer broke the rules we rely on.
  if (code === '23505' || code === '23503') {
    return new LedgerError(
      'CHAIN_CONFLICT',
      `append to log ${log} conflicted with the chain; nothing was written`,
      {
        cause,
      },
    );
  }
  return new LedgerError('DATABASE_UNAVAILABLE', `append to log ${log} failed; nothing was written`, {
    cause,
  });
}
