import { type Context, context, trace } from '@opentelemetry/api';
import type { StoredEvent } from '@vouch/audit';
import { raiseOnChainConflict, toStorageError } from './append-errors';
import { type AppendHead, batchTime, headTimeAhead } from './append-time';
import { BatchRun, type Pending, type StagedEvent } from './batch-run';
import { type Database, type Db, sqlStateOf } from './database';
import { LedgerError } from './errors';
import type { EventLimits } from './event-input';
import type { IntegrityAlarm } from './integrity-alarm';
import type { AppendHook } from './ledger';
import { lockLogAndReadHead, refreshStatistics, YOUNG_LOG_EVENTS } from './log-lock';
import type { MerkleFrontiers } from './merkle/merkle-frontiers';
import { commitInOneStatement, lostRace } from './one-statement-batch';
import { inBatchSpan, linksTo, markFailed } from './tracing';

export interface GroupCommitOptions {
  database: Database;
  limits: EventLimits;
  maxBatch: number;
  maxWaitMs: number;
  clock: () => Date;
  integrityAlarm: IntegrityAlarm;
  /** Run in each batch transaction after its events are inserted, in order. */
  hooks: readonly AppendHook[];
  /**
   * Set when a batch of plain appends may run as one statement (see `commitInOneStatement`):
   * the hooks are only the Merkle tree (kept through `frontiers`, null when there is no
   * tree) and `notifiers`, which are called after such a batch instead.
   */
  oneStatement: { frontiers: MerkleFrontiers | null; notifiers: readonly AppendHook[] } | null;
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

/** Batches that take the locked path after a one-statement batch found the log moved on. */
const LOCKED_AFTER_LOST_RACE = 16;

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
/** SQLSTATEs of a transaction the server rolled back to break a deadlock or a serialization conflict. */
const DEADLOCKED = new Set(['40P01', '40001']);
/** Runs of one locked batch before such a failure is the caller's. */
const MAX_LOCKED_ATTEMPTS = 3;

export class GroupCommit {
  private readonly queues = new Map<string, LogQueue>();
  /**
   * The last head this process committed per log: a hint only, never trusted (see
   * `YOUNG_LOG_EVENTS` and `commitInOneStatement`, where the database checks it).
   */
  private readonly knownHeads = new Map<string, AppendHead>();
  /** Per log, how many batches still take the locked path after a one-statement batch lost a race. */
  private readonly lockedOnly = new Map<string, number>();
  /** ANALYZE runs in flight (see `refreshStatistics`): `close` waits for them. */
  private readonly maintenance = new Set<Promise<void>>();
  /** Logs whose head this process found recorded far ahead of its clock: reported once each. */
  private readonly timeAheadReported = new Set<string>();
  private closed = false;
  /** The trace context each item was queued in, when it was queued inside a span (tracing on). */
  private readonly queuedIn = new WeakMap<Pending, Context>();

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
    if (trace.getActiveSpan()) this.queuedIn.set(item, context.active());
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
      if (await this.commitInOneStatement(log, queue)) continue;
      await this.commitBatch(log, () => queue.pending.splice(0, maxBatch), false, queue.pending[0]);
    }
    queue.flushing = null;
    if (queue.pending.length === 0) this.queues.delete(log);
  }

  /**
   * The plain appends at the head of the queue as one statement on the head this process
   * last committed (see `commitInOneStatement`), when it knows that head, the log is past
   * its young phase and the tree's frontier at that head is at hand. Resolves true when it
   * answered them; false when the locked path must run (the appends are back in the queue).
   */
  private async commitInOneStatement(log: string, queue: LogQueue): Promise<boolean> {
    const oneStatement = this.options.oneStatement;
    const head = this.knownHeads.get(log);
    if (!oneStatement || !head || head.seq < YOUNG_LOG_EVENTS || queue.pending[0]?.type !== 'event')
      return false;
    const lockedOnly = this.lockedOnly.get(log) ?? 0;
    if (lockedOnly > 0) {
      this.lockedOnly.set(log, lockedOnly - 1);
      return false;
    }
    const range = oneStatement.frontiers ? oneStatement.frontiers.at(log, head) : null;
    if (range === undefined) return false;
    let count = 0;
    while (count < this.options.maxBatch && queue.pending[count]?.type === 'event') count++;
    const items = queue.pending.splice(0, count) as Array<Extract<Pending, { type: 'event' }>>;
    const staged: StagedEvent[] = items.map((item) => item.staged);
    const first = this.queuedIn.get(items[0]!);
    return inBatchSpan(first, { 'vouch.log': log, 'vouch.batch.path': 'one_statement' }, async (span) => {
      span.addLinks(
        linksTo(
          items.map((item) => this.queuedIn.get(item)),
          first,
        ),
      );
      span.setAttribute('vouch.batch.size', items.length);
      let events: StoredEvent[];
      const started = performance.now();
      try {
        const done = await commitInOneStatement({
          database: this.options.database,
          log,
          clock: this.options.clock(),
          known: { head, range },
          staged,
        });
        events = done.events;
        this.knownHeads.set(log, done.head.head);
        if (oneStatement.frontiers && done.head.range)
          oneStatement.frontiers.remember(log, done.head.head, done.head.range);
      } catch (cause) {
        if (lostRace(sqlStateOf(cause))) {
          // Another process appended since (or the head is not what it was): nothing was
          // written. The locked path reads the real head; a few batches go that way, so two
          // processes appending to one log do not each lose a statement per batch.
          this.knownHeads.delete(log);
          this.lockedOnly.set(log, LOCKED_AFTER_LOST_RACE);
          queue.pending.unshift(...items);
          span.setAttribute('vouch.batch.lost_race', true);
          return false;
        }
        this.rejectAll(log, items, cause);
        markFailed(span, cause);
        return true;
      }
      items.forEach((item, i) => {
        item.resolve(events[i]);
      });
      for (const notify of oneStatement.notifiers)
        void notify(this.options.database.db, log, events, this.options.database).catch(() => {});
      span.setAttribute('vouch.batch.head_seq', events.at(-1)!.seq);
      this.report({
        log,
        size: items.length,
        headSeq: events.at(-1)!.seq,
        durationMs: performance.now() - started,
      });
      return true;
    });
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
  private async commitBatch(
    log: string,
    take: () => Pending[],
    isolated: boolean,
    first?: Pending,
    attempt = 1,
  ): Promise<void> {
    const parent = first ? this.queuedIn.get(first) : undefined;
    const attributes = { 'vouch.log': log, 'vouch.batch.path': isolated ? 'isolated' : 'locked' };
    let retry: Pending[] | null = null;
    let again: Pending[] | null = null;
    await inBatchSpan(parent, attributes, async (span) => {
      let taken: Pending[] | null = null;
      let run = null as BatchRun | null;
      const started = performance.now();
      try {
        await this.options.database.db.transaction(async (transaction) => {
          run = await this.openRun(transaction as unknown as Db, log, () => {
            taken = take();
            span.addLinks(
              linksTo(
                taken.map((item) => this.queuedIn.get(item)),
                parent,
              ),
            );
            span.setAttribute('vouch.batch.size', taken.length);
            return taken;
          });
          await run.run(isolated);
          await run.runHooks(this.options.hooks);
        });
      } catch (cause) {
        const failed = taken ?? take();
        // A deadlock or serialization failure (with another process's one-statement batch,
        // which takes no lock) rolled everything back: the same batch runs again under the lock.
        if (attempt < MAX_LOCKED_ATTEMPTS && DEADLOCKED.has(sqlStateOf(cause) ?? '')) {
          span.setAttribute('vouch.batch.retried_after', sqlStateOf(cause)!);
          again = failed;
          return;
        }
        if (!isolated && run?.needsIsolatedRetry(cause)) {
          span.setAttribute('vouch.batch.retried_isolated', true);
          retry = failed;
          return;
        }
        this.rejectAll(log, failed, cause);
        markFailed(span, cause);
        return;
      }
      this.settle(log, run!);
      span.setAttribute('vouch.batch.head_seq', run!.headAfter.seq);
      this.report({
        log,
        size: run!.items.length,
        headSeq: run!.headAfter.seq,
        durationMs: performance.now() - started,
      });
    });
    const repeat: Pending[] | null = again;
    if (repeat) return this.commitBatch(log, () => repeat, isolated, repeat[0], attempt + 1);
    const failed: Pending[] | null = retry;
    if (failed) await this.commitBatch(log, () => failed, true, failed[0]);
  }

  private report(batch: CommittedBatch): void {
    try {
      this.options.onBatch?.(batch);
    } catch {
      // A listener is for observing: its failure must not fail appends that committed.
    }
  }

  /** Lock the log, read its head, and take the batch: everything queued until now joins it. */
  private async openRun(tx: Db, log: string, take: () => Pending[]): Promise<BatchRun> {
    const { database, limits, clock } = this.options;
    const young = (this.knownHeads.get(log)?.seq ?? 0) < YOUNG_LOG_EVENTS;
    const head = await lockLogAndReadHead(database, tx, log, young);
    const items = take();
    // Under the lock, on the head read under it: no batch of any process is recorded earlier.
    const at = clock();
    const floors: string[] = [];
    for (const item of items) if (item.type !== 'event' && item.notBefore) floors.push(item.notBefore);
    const now = batchTime(at, head.at, floors);
    const ahead = this.timeAheadReported.has(log) ? null : headTimeAhead(at, head, log);
    if (ahead) {
      this.timeAheadReported.add(log);
      this.options.integrityAlarm.raise(ahead);
    }
    return new BatchRun({ database, tx, log, limits, now, head }, items);
  }

  /** Nothing of the batch committed: every item gets the batch's error. */
  private rejectAll(log: string, items: readonly Pending[], cause: unknown): void {
    const error = toStorageError(cause, log);
    raiseOnChainConflict(this.options.integrityAlarm, error, log);
    for (const item of items) item.reject(error);
  }

  /** The batch committed: answer every caller with its own outcome. */
  private settle(log: string, run: BatchRun): void {
    const before = this.knownHeads.get(log)?.seq ?? 0;
    this.knownHeads.set(log, run.headAfter);
    run.items.forEach((item, i) => {
      const outcome = run.outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else {
        raiseOnChainConflict(this.options.integrityAlarm, outcome.error, log);
        item.reject(outcome.error);
      }
    });
    if (before < YOUNG_LOG_EVENTS && run.headAfter.seq >= YOUNG_LOG_EVENTS) this.refreshStatistics();
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
