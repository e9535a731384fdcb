import type { ChainHead, StoredEvent } from '@vouch/audit';
import type { PgTable } from 'drizzle-orm/pg-core';
import { isNotifyingHook } from './append-hooks';
import type { ConflictKeys } from './batch-plan';
import { type Pending, type Settle, stageEvent } from './batch-run';
import type { Database, Db } from './database';
import { type AppendInput, assertLogId, DEFAULT_EVENT_LIMITS, type EventLimits } from './event-input';
import { readEvents, readHead, streamEvents } from './event-store';
import { type BatchListener, GroupCommit } from './group-commit';
import { createIntegrityAlarm, type IntegrityAlarm } from './integrity-alarm';
import { createMerkleAppendHook, merkleAppendHook } from './merkle/merkle-append-hook';
import { MerkleFrontiers } from './merkle/merkle-frontiers';
import { inSpan } from './tracing';
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
  /** Rows of other tables written with it (a committed record's field content), in the same statement. */
  more?(link: EventLink): Array<{ table: PgTable; values: Record<string, unknown> }>;
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
  /**
   * Hooks run in each batch transaction after its events are inserted (after the Merkle
   * hook). A hook made by `notifyingHook` only takes note, and may run after a batch that
   * needed no transaction; any other hook makes every batch take one.
   */
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
  /** Told of every committed batch (its log, size, head and duration), for metrics. */
  onBatch?: BatchListener;
}

/** What a unit of work asks of the batch it runs in. */
export interface BatchOptions {
  /**
   * Record the batch no earlier than this (ISO 8601): the time the writer's API key was issued
   * (`Caller.keyIssuedAt`). The key rules judge a record at its event's time, and the key at
   * its `api_key.created` event's, which another server's clock may have put ahead of this
   * one's; a time more than `KEY_TIME_AHEAD_MS` (a minute) ahead of this server's clock is not
   * followed (the key rules then report the record, and a clock is wrong).
   */
  notBefore?: string;
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
  transact<T>(log: string, work: (tx: LedgerTransaction) => Promise<T>, options?: BatchOptions): Promise<T>;
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
    options?: BatchOptions,
  ): Promise<T>;
  head(log: string): Promise<ChainHead | null>;
  events(log: string, page?: { after?: number; limit?: number }): Promise<StoredEvent[]>;
  streamEvents(log: string, options?: { after?: number; pageSize?: number }): AsyncIterable<StoredEvent>;
  verifyChain(options: VerifyChainOptions): Promise<LogVerificationReport>;
  /** Stop taking appends and wait for every pending one to settle. Does not close the database. */
  close(): Promise<void>;
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
  const integrityAlarm = options.integrityAlarm ?? createIntegrityAlarm();
  const frontiers = options.merkle === false ? null : new MerkleFrontiers();
  const afterAppend = options.afterAppend ?? [];
  const commits = new GroupCommit({
    database,
    limits,
    maxBatch: options.maxBatch ?? 512,
    maxWaitMs: options.maxWaitMs ?? 0,
    clock: options.now ?? (() => new Date()),
    integrityAlarm,
    // The Merkle tree is stored in the same transaction as the events it covers, always.
    hooks: [...(frontiers ? [createMerkleAppendHook(frontiers)] : []), ...afterAppend],
    oneStatement: afterAppend.every(
      (hook) => (hook === merkleAppendHook && frontiers) || isNotifyingHook(hook),
    )
      ? { frontiers, notifiers: afterAppend.filter(isNotifyingHook) }
      : null,
    ...(options.onBatch ? { onBatch: options.onBatch } : {}),
  });
  /**
   * A promise settled by the batch that runs the item `build` makes for a log; what `build`
   * throws rejects it. In a span `name` (tracing on), from queueing to the batch's answer.
   */
  const queued = <T>(
    name: string,
    log: string,
    build: (settle: Settle) => readonly [log: string, item: Pending],
  ) =>
    inSpan(
      name,
      { 'vouch.log': log },
      () =>
        new Promise<T>((resolve, reject) => {
          commits.enqueue(...build({ resolve: resolve as (value: unknown) => void, reject }));
        }),
    );

  return {
    database,
    integrityAlarm,
    append: (input) =>
      queued<StoredEvent>('ledger.append', input.log, (settle) => [
        input.log,
        { type: 'event', input, staged: stageEvent(input, limits), ...settle },
      ]),
    transact: <T>(log: string, work: (tx: LedgerTransaction) => Promise<T>, options: BatchOptions = {}) =>
      queued<T>('ledger.transact', log, (settle) => {
        assertLogId(log);
        return [log, { type: 'work', work, ...notBeforeOf(options), ...settle }];
      }),
    transactConcurrently: <T>(
      log: string,
      keys: ConflictKeys,
      work: (tx: StagingTransaction) => Promise<T>,
      options: BatchOptions = {},
    ) =>
      queued<T>('ledger.transact_concurrently', log, (settle) => {
        assertLogId(log);
        return [log, { type: 'staged', keys, work, ...notBeforeOf(options), ...settle }];
      }),
    head: (log) => readHead(database, log),
    events: (log, page = {}) =>
      readEvents(database, log, page.after ?? 0, Math.min(page.limit ?? 100, 10_000)),
    streamEvents: (log, opts = {}) => streamEvents(database, log, opts),
    verifyChain: (opts) => verifyChain(database, opts),
    close: () => commits.close(),
  };
}

/** The batch options of work written for a caller whose key was issued at `keyIssuedAt` (if known). */
export function keyTimeFloor(keyIssuedAt: string | undefined): BatchOptions {
  return keyIssuedAt === undefined ? {} : { notBefore: keyIssuedAt };
}

/** `options.notBefore` as an item's member, absent when not given. */
function notBeforeOf(options: BatchOptions): { notBefore?: string } {
  return options.notBefore === undefined ? {} : { notBefore: options.notBefore };
}
