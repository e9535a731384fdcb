import { type ChainHead, eventHashOf, payloadHashOf, type StoredEvent } from '@vouch/audit';
import type { PgTable } from 'drizzle-orm/pg-core';
import { toStorageError } from './append-errors';
import type { AppendHead } from './append-time';
import { type ConflictKeys, planWaves } from './batch-plan';
import { insertTables } from './batched-sql';
import type { Database, Db } from './database';
import { sqlStateOf } from './database';
import { type AppendInput, type EventLimits, prepareEvent } from './event-input';
import { eventRows, insertEvents } from './event-store';
import type { AppendHook, LedgerTransaction, StagedRow, StagingTransaction } from './ledger';
import { auditEvents } from './schema/core';

/** How a waiting caller is answered once its batch settles. */
export interface Settle {
  resolve(value: unknown): void;
  reject(e: unknown): void;
}

/** One item of a log's queue: a plain append, work that runs alone, or staged work with its keys. */
export type Pending =
  | ({
      type: 'event';
      input: AppendInput;
      /** Canonicalized and hashed before the batch takes the lock: it depends on the input alone. */
      staged: StagedEvent;
    } & Settle)
  | ({ type: 'work'; work: (tx: LedgerTransaction) => Promise<unknown>; notBefore?: string } & Settle)
  | ({
      type: 'staged';
      keys: ConflictKeys;
      work: (tx: StagingTransaction) => Promise<unknown>;
      /** See `BatchOptions.notBefore`. */
      notBefore?: string;
    } & Settle);

/** An event validated, canonicalized and hashed, waiting for its seq; with the record row that will point at it. */
export interface StagedEvent {
  kind: string;
  entity: string;
  actor: string;
  canonicalPayload: string;
  payloadHash: string;
  commitment?: string;
  row: StagedRow | undefined;
}

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A staged row once its event has a seq. */
interface RowToInsert {
  table: PgTable;
  values: Record<string, unknown>;
}

/** What a staged work item left after it ran: its answer and what it staged. */
interface WaveResult {
  outcome: Outcome;
  staged: StagedEvent[];
}

/** Validate an event, canonicalize and hash its payload: all it needs before it gets a seq. */
export function stageEvent(input: AppendInput, limits: EventLimits, row?: StagedRow): StagedEvent {
  const { canonicalPayload } = prepareEvent(input, limits);
  const { kind, entity, actor, commitment } = input;
  const staged = { kind, entity, actor, canonicalPayload, payloadHash: payloadHashOf(canonicalPayload), row };
  return commitment === undefined ? staged : { ...staged, commitment };
}

/** `staged` as the event right after `head` in `log`, recorded at `at`. */
export function chainEvent(log: string, at: string, head: ChainHead, s: StagedEvent): StoredEvent {
  const header = {
    log,
    seq: head.seq + 1,
    kind: s.kind,
    entity: s.entity,
    actor: s.actor,
    at,
    payload_hash: s.payloadHash,
    prev_hash: head.hash,
    ...(s.commitment === undefined ? {} : { commitment: s.commitment }),
  };
  return { ...header, payload: s.canonicalPayload, hash: eventHashOf(header) };
}

/** Plain appends declare no keys: they run beside anything that declares its own. */
const NO_KEYS: ConflictKeys = {};

function keysOf(item: Pending): ConflictKeys | null {
  if (item.type === 'event') return NO_KEYS;
  if (item.type === 'staged') return item.keys;
  return null;
}

/** An item as work that runs alone: the isolated retry runs every item this way. */
function aloneWork(item: Pending): (tx: LedgerTransaction) => Promise<unknown> {
  if (item.type === 'work' || item.type === 'staged') return item.work;
  const { log: _log, ...input } = item.input;
  return (tx) => tx.append(input);
}

/** What a batch run needs from its ledger and its transaction. */
export interface BatchContext {
  database: Database;
  /** The batch transaction, holding the log's lock. */
  tx: Db;
  log: string;
  limits: EventLimits;
  /** ISO 8601 time of this batch: never earlier than the head's (see `batchTime`). */
  now: string;
  /** The head the batch builds on (read under the lock). */
  head: AppendHead;
}

/**
 * One batch of one log, inside its transaction and under the log's lock: its items run in
 * waves (see `planWaves`), the staged work of a wave side by side, then the wave's events get
 * their seqs in batch order and go in with their record rows, one multi-row insert per table.
 * Work without keys runs alone, in its own savepoint.
 *
 * `isolated` (see {@link run}): every item alone, its work and its writes in a savepoint of
 * its own. The retry after a wave's writes broke a constraint the keys did not foresee, or a
 * read of one item failed on the server (which aborts the whole transaction).
 */
export class BatchRun {
  /** What each item answers, by index; filled as the waves run. */
  readonly outcomes: Outcome[];
  /** Every event written in this batch, in seq order: what the append hooks get. */
  private readonly written: StoredEvent[] = [];
  private head: AppendHead;
  /** The database refused a wave's inserts (see {@link needsIsolatedRetry}). */
  private waveRefused = false;
  /** A staged work's read failed on the server, which aborts the whole transaction. */
  private workFailedInDatabase = false;

  constructor(
    private readonly context: BatchContext,
    readonly items: readonly Pending[],
  ) {
    this.outcomes = new Array(items.length);
    this.head = context.head;
  }

  /** The last event written (the head before the batch when none was). */
  get headAfter(): AppendHead {
    return this.head;
  }

  /** Run every item, wave after wave; work deferred by a lost claim runs in the next wave. */
  async run(isolated: boolean): Promise<void> {
    const indices = this.items.map((_, i) => i);
    const waves = isolated ? indices.map((i) => [i]) : planWaves(indices, (i) => keysOf(this.items[i]!));
    for (let wave = waves.shift(); wave; wave = waves.shift()) {
      const first = this.items[wave[0]!]!;
      if (isolated || first.type === 'work') await this.runAlone(wave[0]!, aloneWork(first));
      else {
        const deferred = await this.runWave(wave);
        if (deferred.length > 0) waves.unshift(deferred);
      }
    }
  }

  /** The append hooks (the Merkle tree first), in the batch transaction, over what it wrote. */
  async runHooks(hooks: readonly AppendHook[]): Promise<void> {
    if (this.written.length === 0) return;
    for (const hook of hooks)
      await hook(this.context.tx, this.context.log, this.written, this.context.database);
  }

  /**
   * Whether the batch failed in a way one item alone caused and a retry with every item
   * isolated answers each on its own: a wave the database refused on a constraint the keys
   * did not foresee, or a read the server refused.
   */
  needsIsolatedRetry(cause: unknown): boolean {
    return (this.waveRefused && isConstraintViolation(cause)) || this.workFailedInDatabase;
  }

  /** Give a staged event the next seq, chained to the head. */
  private chain(s: StagedEvent): StoredEvent {
    const event = chainEvent(this.context.log, this.context.now, this.head, s);
    this.head = { seq: event.seq, hash: event.hash, at: event.at };
    return event;
  }

  /** Chain staged events into `events`; returns their rows, now linked to their seqs, in staging order. */
  private chainAll(staged: readonly StagedEvent[], events: StoredEvent[]): RowToInsert[] {
    const rows: RowToInsert[] = [];
    for (const s of staged) {
      const event = this.chain(s);
      events.push(event);
      if (!s.row) continue;
      const link = { logId: this.context.log, eventSeq: event.seq };
      rows.push({ table: s.row.table, values: s.row.values(link) });
      if (s.row.more) rows.push(...s.row.more(link));
    }
    return rows;
  }

  private stageInto(into: StagedEvent[]) {
    const { log, limits } = this.context;
    return (input: Omit<AppendInput, 'log'>, row?: StagedRow): void => {
      into.push(stageEvent({ ...input, log }, limits, row));
    };
  }

  /** Work in a savepoint of its own: its failure, a database error included, is its alone. */
  private async runAlone(index: number, work: (tx: LedgerTransaction) => Promise<unknown>): Promise<void> {
    const { database, log, now, limits } = this.context;
    const headBefore = this.head;
    const mine: StoredEvent[] = [];
    try {
      const value = await this.context.tx.transaction(async (savepoint) => {
        const db = savepoint as unknown as Db;
        const staged: StagedEvent[] = [];
        const value = await work({
          db,
          database,
          log,
          now,
          stage: this.stageInto(staged),
          // Work that runs alone shares its wave with nobody.
          claim: () => {},
          append: async (input) => {
            const event = this.chain(stageEvent({ ...input, log }, limits));
            await insertEvents(database, db, [event]);
            mine.push(event);
            return event;
          },
        });
        const stagedEvents: StoredEvent[] = [];
        const rows = this.chainAll(staged, stagedEvents);
        await insertStaged(database, db, stagedEvents, [rows]);
        mine.push(...stagedEvents);
        return value;
      });
      this.written.push(...mine);
      this.outcomes[index] = { ok: true, value };
    } catch (error) {
      this.head = headBefore;
      // The database's refusal says what it refused in ledger terms; the work's own errors pass.
      this.outcomes[index] = { ok: false, error: sqlStateOf(error) ? toStorageError(error, log) : error };
    }
  }

  /** Runs a wave; returns the items that found a key claimed and must run after it. */
  private async runWave(wave: readonly number[]): Promise<number[]> {
    const claims = new WaveClaims();
    // The work of a wave runs side by side: its reads go out together.
    const ran = await Promise.all(wave.map((index) => this.runStaged(index, claims)));
    const events: StoredEvent[] = [];
    const rowsByItem: RowToInsert[][] = [];
    wave.forEach((index, k) => {
      // Deferred work is run again whatever it made of the refused claim.
      if (claims.isDeferred(index)) return;
      const { outcome, staged } = ran[k]!;
      this.outcomes[index] = outcome;
      if (!outcome.ok) return;
      const first = events.length;
      rowsByItem.push(this.chainAll(staged, events));
      if (this.items[index]!.type === 'event') this.outcomes[index] = { ok: true, value: events[first] };
    });
    try {
      await insertStaged(this.context.database, this.context.tx, events, rowsByItem);
    } catch (error) {
      this.waveRefused = true;
      throw error;
    }
    this.written.push(...events);
    return wave.filter((index) => claims.isDeferred(index));
  }

  /** One item of a wave: a plain append is staged as it is; staged work runs against the wave's claims. */
  private async runStaged(index: number, claims: WaveClaims): Promise<WaveResult> {
    const item = this.items[index]!;
    if (item.type === 'event') return { outcome: { ok: true, value: undefined }, staged: [item.staged] };
    const { database, tx, log, now } = this.context;
    const staged: StagedEvent[] = [];
    try {
      const work = item.work as (tx: StagingTransaction) => Promise<unknown>;
      const value = await work({
        db: tx,
        database,
        log,
        now,
        stage: this.stageInto(staged),
        claim: (key) => claims.claim(key, index),
      });
      return { outcome: { ok: true, value }, staged };
    } catch (error) {
      // A read the server refused has aborted the whole transaction, not only this work.
      if (sqlStateOf(error)) this.workFailedInDatabase = true;
      return { outcome: { ok: false, error }, staged: [] };
    }
  }
}

/** The keys claimed (`tx.claim`) by the work of one wave, and the work that lost a claim. */
class WaveClaims {
  private readonly owners = new Map<string, number>();
  private readonly deferred = new Set<number>();

  /** Claim `key` for item `index`; throws {@link ClaimTaken} into it when another item holds it. */
  claim(key: string, index: number): void {
    const owner = this.owners.get(key);
    if (owner !== undefined && owner !== index) {
      this.deferred.add(index);
      // What it already holds goes too, so two pieces of work claiming two keys in opposite
      // orders cannot hold each other off wave after wave.
      for (const [held, by] of this.owners) if (by === index) this.owners.delete(held);
      throw new ClaimTaken(key);
    }
    this.owners.set(key, index);
  }

  isDeferred(index: number): boolean {
    return this.deferred.has(index);
  }
}

/** Thrown into work whose claim another work of its wave holds: it runs again in the next wave. */
class ClaimTaken extends Error {
  override readonly name = 'ClaimTaken';
  constructor(key: string) {
    super(`key ${key} is claimed by other work of this wave; this work runs again after it`);
  }
}

/**
 * Insert a wave's events and its record rows in one statement (see `insertTables`). The
 * foreign keys (a row to its event, a record to a record its work staged before) are checked
 * once every row is in, so the order of the tables does not matter.
 */
async function insertStaged(
  database: Database,
  db: Db,
  events: readonly StoredEvent[],
  rowsByItem: readonly (readonly RowToInsert[])[],
): Promise<void> {
  const byTable = new Map<PgTable, Record<string, unknown>[]>();
  for (const rows of rowsByItem)
    for (const r of rows) {
      const values = byTable.get(r.table);
      if (values) values.push(r.values);
      else byTable.set(r.table, [r.values]);
    }
  await insertTables(database, db, [
    { table: auditEvents, rows: eventRows(events) },
    ...[...byTable].map(([table, rows]) => ({ table, rows })),
  ]);
}

/** SQLSTATE class 23: the database refused a row (unique, foreign key, check). */
function isConstraintViolation(error: unknown): boolean {
  return sqlStateOf(error)?.startsWith('23') ?? false;
}
