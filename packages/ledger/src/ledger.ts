import {
  type ChainHead,
  type ChainReport,
  eventHashOf,
  GENESIS_PREV_HASH,
  payloadHashOf,
  type StoredEvent,
} from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { type Database, type Db, sqlStateOf } from './database';
import { LedgerError } from './errors';
import {
  type AppendInput,
  assertLogId,
  DEFAULT_EVENT_LIMITS,
  type EventLimits,
  prepareEvent,
} from './event-input';
import { insertEvents, readEvents, readHead, streamEvents } from './event-store';
import { merkleAppendHook } from './merkle/merkle-append-hook';
import { type VerifyChainOptions, verifyChain } from './verify-chain';

/** Inside {@link Ledger.transact}: record writes and their events commit or vanish together. */
export interface LedgerTransaction {
  /** The drizzle transaction: do reads and record-table writes here. */
  readonly db: Db;
  readonly database: Database;
  readonly log: string;
  /** ISO 8601 time of this batch. */
  readonly now: string;
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
}

/** The append-only, hash-chained ledger over one database. */
export interface Ledger {
  readonly database: Database;
  /** Append one event. Resolves after the transaction holding it has committed. */
  append(input: AppendInput): Promise<StoredEvent>;
  /**
   * Run `work` in the log's next batch transaction, under the log's lock, in its own
   * savepoint: if it throws, only its own writes roll back and the promise rejects.
   */
  transact<T>(log: string, work: (tx: LedgerTransaction) => Promise<T>): Promise<T>;
  head(log: string): Promise<ChainHead | null>;
  events(log: string, page?: { after?: number; limit?: number }): Promise<StoredEvent[]>;
  streamEvents(log: string, options?: { after?: number; pageSize?: number }): AsyncIterable<StoredEvent>;
  verifyChain(options: VerifyChainOptions): Promise<ChainReport>;
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

type Pending =
  | {
      type: 'event';
      input: AppendInput;
      canonicalPayload: string;
      /** Hashed before the batch takes the lock: it depends on the payload alone. */
      payloadHash: string;
      resolve(e: StoredEvent): void;
      reject(e: unknown): void;
    }
  | {
      type: 'work';
      work: (tx: LedgerTransaction) => Promise<unknown>;
      resolve(value: unknown): void;
      reject(e: unknown): void;
    };

interface LogQueue {
  pending: Pending[];
  flushing: Promise<void> | null;
  /** Set while a batch waits (`maxWaitMs`) for more appends: wakes it once it is full. */
  full: (() => void) | null;
}

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
  // The Merkle tree is stored in the same transaction as the events it covers, always.
  const hooks = [...(options.merkle === false ? [] : [merkleAppendHook]), ...(options.afterAppend ?? [])];
  const queues = new Map<string, LogQueue>();
  // The last head seq this process committed per log: a performance hint only (see below).
  const knownHeads = new Map<string, number>();
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
    // Let the appends issued in the same tick join the first batch.
    await Promise.resolve();
    while (queue.pending.length > 0) {
      if (maxWaitMs > 0 && queue.pending.length < maxBatch && !closed) await fill(queue);
      const batch = queue.pending.splice(0, maxBatch);
      await commitBatch(log, batch);
    }
    queue.flushing = null;
    if (queue.pending.length === 0) queues.delete(log);
  };

  const commitBatch = async (log: string, batch: Pending[]) => {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let headAfter = 0;
    try {
      await database.db.transaction(async (tx) => {
        outcomes.length = 0;
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
        let head = found ?? { seq: 0, hash: GENESIS_PREV_HASH };
        const now = clock().toISOString();
        const written: StoredEvent[] = [];
        let buffer: StoredEvent[] = [];

        const chain = (
          input: Omit<AppendInput, 'log'>,
          canonicalPayload: string,
          payload_hash: string,
        ): StoredEvent => {
          const header = {
            log,
            seq: head.seq + 1,
            kind: input.kind,
            entity: input.entity,
            actor: input.actor,
            at: now,
            payload_hash,
            prev_hash: head.hash,
          };
          const event: StoredEvent = { ...header, payload: canonicalPayload, hash: eventHashOf(header) };
          head = { seq: event.seq, hash: event.hash };
          return event;
        };
        const flushBuffer = async () => {
          if (buffer.length === 0) return;
          await insertEvents(database, tx, buffer);
          written.push(...buffer);
          buffer = [];
        };

        for (const item of batch) {
          if (item.type === 'event') {
            const event = chain(item.input, item.canonicalPayload, item.payloadHash);
            buffer.push(event);
            outcomes.push({ ok: true, value: event });
            continue;
          }
          await flushBuffer();
          const headBefore = head;
          const mine: StoredEvent[] = [];
          try {
            const value = await tx.transaction(async (savepoint) => {
              const ledgerTx: LedgerTransaction = {
                db: savepoint as unknown as Db,
                database,
                log,
                now,
                append: async (input) => {
                  const { canonicalPayload } = prepareEvent({ ...input, log }, limits);
                  const event = chain(input, canonicalPayload, payloadHashOf(canonicalPayload));
                  await insertEvents(database, savepoint as unknown as Db, [event]);
                  mine.push(event);
                  return event;
                },
              };
              return item.work(ledgerTx);
            });
            written.push(...mine);
            outcomes.push({ ok: true, value });
          } catch (error) {
            head = headBefore;
            outcomes.push({ ok: false, error });
          }
        }
        await flushBuffer();
        headAfter = head.seq;
        for (const hook of hooks)
          if (written.length > 0) await hook(tx as unknown as Db, log, written, database);
      });
    } catch (cause) {
      const error = toStorageError(cause, log);
      for (const item of batch) item.reject(error);
      return;
    }
    knownHeads.set(log, headAfter);
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value as StoredEvent);
      else item.reject(outcome.error);
    });
  };

  return {
    database,
    append(input) {
      return new Promise<StoredEvent>((resolve, reject) => {
        const { canonicalPayload } = prepareEvent(input, limits);
        const payloadHash = payloadHashOf(canonicalPayload);
        enqueue(input.log, { type: 'event', input, canonicalPayload, payloadHash, resolve, reject });
      });
    },
    transact<T>(log: string, work: (tx: LedgerTransaction) => Promise<T>) {
      return new Promise<T>((resolve, reject) => {
        assertLogId(log);
        enqueue(log, { type: 'work', work, resolve: resolve as (v: unknown) => void, reject });
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
    },
  };
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
