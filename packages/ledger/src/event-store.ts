import type { ChainHead, StoredEvent } from '@vouch/audit';
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import { anyOf, insertRows } from './batched-sql';
import type { Database, Db } from './database';
import { attachFields } from './event-fields';
import { auditEvents } from './schema/core';

const eventColumns = {
  log: auditEvents.logId,
  seq: auditEvents.seq,
  kind: auditEvents.kind,
  entity: auditEvents.entityId,
  actor: auditEvents.actor,
  at: auditEvents.recordedAt,
  payload: auditEvents.payload,
  payload_hash: auditEvents.payloadHash,
  prev_hash: auditEvents.prevHash,
  hash: auditEvents.hash,
  commitment: auditEvents.commitment,
};

/** The events of `log` about any of `entities`, in chain order. */
export async function readEventsOfEntities(
  db: Db,
  log: string,
  entities: readonly string[],
): Promise<StoredEvent[]> {
  return asStoredEvents(
    await db
      .select(eventColumns)
      .from(auditEvents)
      .where(and(eq(auditEvents.logId, log), anyOf(auditEvents.entityId, entities)))
      .orderBy(asc(auditEvents.seq)),
  );
}

/**
 * Rows as events: a whole-payload event has no `commitment` member at all (the column reads
 * NULL), so what is exported and served is what it always was.
 */
function asStoredEvents(
  rows: Array<Omit<StoredEvent, 'commitment'> & { commitment?: string | null }>,
): StoredEvent[] {
  for (let i = 0; i < rows.length; i++) if (rows[i]!.commitment === null) delete rows[i]!.commitment;
  return rows as StoredEvent[];
}

/**
 * The seq, kind and entity of every event of `log` whose kind is one of `kinds`, a page of
 * `pageSize` at a time in seq order: what the table checks look up their rows by.
 */
export async function* eventPagesOfKinds(
  db: Db,
  log: string,
  kinds: readonly string[],
  options: { pageSize: number; signal?: AbortSignal },
): AsyncGenerator<Array<{ seq: number; kind: string; entity: string }>> {
  let after = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    const events = await db
      .select({ seq: auditEvents.seq, kind: auditEvents.kind, entity: auditEvents.entityId })
      .from(auditEvents)
      .where(and(eq(auditEvents.logId, log), gt(auditEvents.seq, after), anyOf(auditEvents.kind, kinds)))
      .orderBy(asc(auditEvents.seq))
      .limit(options.pageSize);
    if (events.length > 0) yield events;
    if (events.length < options.pageSize) return;
    after = events[events.length - 1]!.seq;
  }
}

/** Insert already-chained events in one statement (see {@link insertRows}). */
export function insertEvents(database: Database, tx: Db, events: readonly StoredEvent[]): Promise<void> {
  return insertRows(database, tx, auditEvents, eventRows(events));
}

/** Already-chained events as rows of `audit_events` (see `insertTables`). */
export function eventRows(events: readonly StoredEvent[]): Array<typeof auditEvents.$inferInsert> {
  return events.map((e) => ({
    logId: e.log,
    seq: e.seq,
    kind: e.kind,
    entityId: e.entity,
    actor: e.actor,
    recordedAt: e.at,
    payload: e.payload,
    payloadHash: e.payload_hash,
    prevHash: e.prev_hash,
    hash: e.hash,
    // Left out (not NULL) for whole-payload events, so a batch of them inserts the columns it always did.
    commitment: e.commitment ?? undefined,
  }));
}

/** The last event's seq and hash, or null for an empty log. */
export async function readHead(
  database: Database,
  log: string,
  executor: Db = database.db,
): Promise<ChainHead | null> {
  // A plain statement rather than the query builder: this runs once per append batch.
  const [row] = await database.rows<ChainHead>(
    sql`select seq, hash from audit_events where log_id = ${log} order by seq desc limit 1`,
    executor,
  );
  return row ?? null;
}

/** One page of events after `after`, in seq order. */
export async function readEvents(
  database: Database,
  log: string,
  after: number,
  limit: number,
  executor: Db = database.db,
): Promise<StoredEvent[]> {
  if (executor === database.db && limit > 0) {
    // seq has no gaps in a sound log, so the page is the seq range (after, after + limit]:
    // see readRange for why that beats ORDER BY ... LIMIT. A short range is the end of the
    // log unless a row lies beyond it (a gap, i.e. damage): then fall back to the plain query.
    const page = await readRange(database, log, after, after + limit);
    if (page.length === limit || (await nextSeqAfter(database, log, after + limit)) === null) {
      return attachFields(database, log, page);
    }
  }
  const events = asStoredEvents(
    await executor
      .select(eventColumns)
      .from(auditEvents)
      .where(and(eq(auditEvents.logId, log), gt(auditEvents.seq, after)))
      .orderBy(asc(auditEvents.seq))
      .limit(limit),
  );
  return attachFields(database, log, events, executor);
}

// The columns under StoredEvent's names, so a driver's row object is the event itself.
const RANGE_QUERY = `select log_id as log, seq, kind, entity_id as entity, actor, recorded_at as at, payload,
  payload_hash, prev_hash, hash, commitment from audit_events where log_id = $1 and seq > $2 and seq <= $3`;

/**
 * The events with `after < seq <= through`, in seq order, straight from the driver (the rows
 * already have the event's shape, so nothing maps them again: the ORM's per-row mapping
 * costs about as much as hashing the row).
 *
 * A bounded range and no ORDER BY ... LIMIT on purpose: without statistics (a fresh table;
 * PGlite never analyzes) the planner guesses a few hundred rows and answers `seq > $2 ORDER
 * BY seq LIMIT $3` with a bitmap scan of every later row and an on-disk sort, O(n) per page.
 * A bounded range costs O(page) whatever the plan, and sorting here is free for rows that
 * arrive in order (they mostly do: the table is append-only).
 */
async function readRange(
  database: Database,
  log: string,
  after: number,
  through: number,
): Promise<StoredEvent[]> {
  const params = [log, after, through];
  const rows =
    database.driver.kind === 'pglite'
      ? (await database.driver.client.query<StoredEvent>(RANGE_QUERY, params)).rows
      : ((await database.driver.client.unsafe<StoredEvent[]>(RANGE_QUERY, params)) as StoredEvent[]);
  return asStoredEvents(rows).sort((a, b) => a.seq - b.seq);
}

/** The first seq after `after`, or null: min() is answered from the primary key whatever the statistics. */
async function nextSeqAfter(database: Database, log: string, after: number): Promise<number | null> {
  const [row] = await database.rows<{ next: number | null }>(
    sql`select min(seq) as next from audit_events where log_id = ${log} and seq > ${after}`,
  );
  return row?.next ?? null;
}

export interface StreamOptions {
  after?: number;
  /** The last seq to read (default: to the end of the log). */
  through?: number;
  pageSize?: number;
  /**
   * Read each `fields/1` event's content (default true). A reader that checks only hashes
   * (the checkpointer) passes false: content erased by a redaction committed after it chose
   * its range would otherwise look erased without its redaction event.
   */
  content?: boolean;
}

/**
 * Every event of a log in seq order, in pages of `pageSize` seqs, with the next page read
 * while the caller works on the current one: constant memory, and reading overlaps
 * hashing. A gap (a deleted row) is skipped over, not mistaken for the end.
 */
export async function* streamEvents(
  database: Database,
  log: string,
  options: StreamOptions = {},
): AsyncGenerator<StoredEvent> {
  for await (const page of streamEventPages(database, log, options)) yield* page;
}

/**
 * {@link streamEvents} a page at a time: one await per page instead of one per event, for
 * loops (verification) where the per-event await is a measurable share of the work.
 */
export async function* streamEventPages(
  database: Database,
  log: string,
  options: StreamOptions = {},
): AsyncGenerator<StoredEvent[]> {
  const pageSize = options.pageSize ?? 5_000;
  const through = options.through ?? Number.POSITIVE_INFINITY;
  let after = options.after ?? 0;
  const read = () => readRange(database, log, after, Math.min(after + pageSize, through));
  let next = read();
  for (;;) {
    const page = await next;
    if (page.length === 0) {
      // The end, or a gap of a whole page or more: jump to the next row if there is one.
      const seq = after < through ? await nextSeqAfter(database, log, after) : null;
      if (seq === null || seq > through) return;
      after = seq - 1;
      next = read();
      continue;
    }
    after = Math.min(after + pageSize, through);
    next = after < through ? read() : Promise.resolve([]);
    // A prefetch the caller abandons must not surface as an unhandled rejection.
    next.catch(() => {});
    yield options.content === false ? page : await attachFields(database, log, page);
  }
}
