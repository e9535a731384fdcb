import { raiseOnChainConflict, toStorageError } from './append-errors';
import { BatchRun, type Pending } from './batch-run';
import type { Database, Db } from './database';
import { LedgerError } from './errors';
import type { EventLimits } from './event-input';
import type { IntegrityAlarm } from './integrity-alarm';
import type { AppendHook } from './ledger';
import { lockLogAndReadHead, refreshStatistics, YOUNG_LOG_EVENTS } from './log-lock';

export interface GroupCommitOptions {
  database: Database;
  limits: EventLimits;
  maxBatch: number;
  maxWaitMs: number;
  clock: () => Date;
  integrityAlarm: IntegrityAlarm;
  /** Run in each batch transaction after its events are inserted, in order. */
  hooks: readonly AppendHook[];
  /** Told of every committed batch, after its callers are answered (metrics). */
  onBatch?: BatchListener;
}

/** What a committed batch was: its log, how many appends it held, its head after, how long it took. */
export interface CommittedBatch {
  log: string;
  size: number;
  headSeq: number;
  /** From the batch asking for its transaction to the commit, in milliseconds. */
  durationMs: number;
}

/** Called once per committed batch; it must not throw (what it throws is dropped). */
export type BatchListener = (batch: CommittedBatch) => void;

interface LogQueue {
  pending: Pending[];
  flushing: Promise<void> | null;
  /** Set while a batch waits (`maxWaitMs`) for more appends: wakes it once it is full. */
  full: (() => void) | null;
}

/**
 * The ledger's append path: a queue per log, and one batch per log in flight at a time in
 * this process; appends that arrive while it commits wait and go together in the next one
 * (group commit). Appends to one log are serialized in the database (a transaction-scoped
 * advisory lock on the log), never in process memory, so any number of processes can append
 * to one Postgres.
 */
export class GroupCommit {
  private readonly queues = new Map<string, LogQueue>();
  /** The last head seq this process committed per log: a performance hint only (see `YOUNG_LOG_EVENTS`). */
  private readonly knownHeads = new Map<string, number>();
  /** ANALYZE runs in flight (see `refreshStatistics`): `close` waits for them. */
  private readonly maintenance = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly options: GroupCommitOptions) {}

  /** Queue an item for the log's next batch; it settles when that batch does. */
  enqueue(log: string, item: Pending): void {
    if (this.closed) {
      item.reject(new LedgerError('LEDGER_CLOSED', 'the ledger is shutting down and takes no new appends'));
      return;
    }
    let queue = this.queues.get(log);
    if (!queue) {
      queue = { pending: [], flushing: null, full: null };
      this.queues.set(log, queue);
    }
    queue.pending.push(item);
    if (queue.full && queue.pending.length >= this.options.maxBatch) queue.full();
    if (!queue.flushing) queue.flushing = this.drain(log, queue);
  }

  /** Stop taking appends and wait for every pending one to settle, and for maintenance. */
  async close(): Promise<void> {
    this.closed = true;
    // A batch waiting to fill starts now.
    for (const queue of this.queues.values()) queue.full?.();
    while (this.queues.size > 0) {
      await Promise.all([...this.queues.values()].map((q) => q.flushing));
    }
    await Promise.all(this.maintenance);
  }

  /** Commit the log's batches one after another until its queue is empty. */
  private async drain(log: string, queue: LogQueue): Promise<void> {
    const { maxBatch, maxWaitMs } = this.options;
    while (queue.pending.length > 0) {
      // Give the event loop a turn before each batch, so the requests already waiting on
      // sockets reach their appends and join it. Postgres I/O yields on its own; PGlite runs
      // each query synchronously, and without this turn its batches would hold one request.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (maxWaitMs > 0 && queue.pending.length < maxBatch && !this.closed) await this.fill(queue);
      await this.commitBatch(log, () => queue.pending.splice(0, maxBatch), false);
    }
    queue.flushing = null;
    if (queue.pending.length === 0) this.queues.delete(log);
  }

  /** Resolves after `maxWaitMs`, or as soon as the queue holds a full batch. */
  private fill(queue: LogQueue): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => queue.full?.(), this.options.maxWaitMs);
      queue.full = () => {
        clearTimeout(timer);
        queue.full = null;
        resolve();
      };
    });
  }

  /**
   * One batch in one transaction (see {@link BatchRun}). The batch is taken (`take`) only
   * once the transaction holds the log's lock, so appends that arrive while it waits for a
   * connection or the lock still join it: on PGlite, whose queries queue behind the open
   * transaction, that is what makes a batch more than one item.
   *
   * When the batch fails in a way one item caused (see `BatchRun.needsIsolatedRetry`),
   * nothing of it committed, and it runs again `isolated`: one item at a time, each in a
   * savepoint of its own, so each gets its own answer.
   */
  private async commitBatch(log: string, take: () => Pending[], isolated: boolean): Promise<void> {
    let taken: Pending[] | null = null;
    let run = null as BatchRun | null;
    const started = performance.now();
    try {
      await this.options.database.db.transaction(async (transaction) => {
        run = await this.openRun(transaction as unknown as Db, log, () => (taken = take()));
        await run.run(isolated);
        await run.runHooks(this.options.hooks);
      });
    } catch (cause) {
      const failed = taken ?? take();
      if (!isolated && run?.needsIsolatedRetry(cause)) return this.commitBatch(log, () => failed, true);
      this.rejectAll(log, failed, cause);
      return;
    }
    this.settle(log, run!);
    this.report(log, run!, performance.now() - started);
  }

  private report(log: string, run: BatchRun, durationMs: number): void {
    try {
      this.options.onBatch?.({ log, size: run.items.length, headSeq: run.headSeq, durationMs });
    } catch {
      // A listener is for observing: its failure must not fail appends that committed.
    }
  }

  /** Lock the log, read its head, and take the batch: everything queued until now joins it. */
  private async openRun(tx: Db, log: string, take: () => Pending[]): Promise<BatchRun> {
    const { database, limits, clock } = this.options;
    const young = (this.knownHeads.get(log) ?? 0) < YOUNG_LOG_EVENTS;
    const head = await lockLogAndReadHead(database, tx, log, young);
    const items = take();
    return new BatchRun({ database, tx, log, limits, now: clock().toISOString(), head }, items);
  }

  /** Nothing of the batch committed: every item gets the batch's error. */
  private rejectAll(log: string, items: readonly Pending[], cause: unknown): void {
    const error = toStorageError(cause, log);
    raiseOnChainConflict(this.options.integrityAlarm, error, log);
    for (const item of items) item.reject(error);
  }

  /** The batch committed: answer every caller with its own outcome. */
  private settle(log: string, run: BatchRun): void {
    const before = this.knownHeads.get(log) ?? 0;
    this.knownHeads.set(log, run.headSeq);
    run.items.forEach((item, i) => {
      const outcome = run.outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else {
        raiseOnChainConflict(this.options.integrityAlarm, outcome.error, log);
        item.reject(outcome.error);
      }
    });
    if (before < YOUNG_LOG_EVENTS && run.headSeq >= YOUNG_LOG_EVENTS) this.refreshStatistics();
  }

  /**
   * Leaving its young phase, the log's batches switch to generic plans: give the planner
   * statistics to build them from (see `refreshStatistics`). Beside the appends, not in
   * their way: a plan built before it lands is rebuilt once ANALYZE invalidates it.
   */
  private refreshStatistics(): void {
    const running = refreshStatistics(this.options.database).finally(() => this.maintenance.delete(running));
    this.maintenance.add(running);
  }
}
