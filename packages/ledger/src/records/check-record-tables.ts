import { type ChainFailure, canonicalJson } from '@vouch/audit';
import { and, asc, eq, getTableName, gt } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { anyOf } from '../batched-sql';
import type { Database, Db } from '../database';
import { eventPagesOfKinds } from '../event-store';
import { auditEvents } from '../schema/core';
import { RECORD_TABLE_OF, RECORD_TABLES } from './codec';

/** A record table that disagrees with the chain; the shape `verifyChain` reports. */
export interface RecordFailure extends ChainFailure {
  code: 'RECORD_WITHOUT_EVENT' | 'RECORD_MISMATCH';
  table: string;
  id: string;
}

export interface CheckRecordTablesOptions {
  /** Rows (or events) read per query (default 1,000). */
  pageSize?: number;
  /** Run the reads here instead of on the database, e.g. inside a snapshot transaction. */
  executor?: Db;
  signal?: AbortSignal;
}

// The columns every record table shares, typed once so one loop serves all tables.
interface RecordTable {
  logId: PgColumn;
  id: PgColumn;
  eventSeq: PgColumn;
}

/**
 * Cross-check every record table of a log against its chain, page by page with constant
 * memory:
 * - `RECORD_WITHOUT_EVENT`: a row whose `event_seq` names no event, or an event of another
 *   kind or entity (a row inserted behind the ledger's back);
 * - `RECORD_MISMATCH`: a row that no longer rebuilds its event's payload byte for byte (an
 *   edited row), or a record event whose row is gone (a deleted row).
 *
 * The event payloads themselves are trusted here only because `verifyChain` checks their
 * hashes in the same run: run both, as `verifyChain` does. (`verifyChain` itself runs
 * {@link checkRecordRows} and finds deleted rows with {@link createRecordRowPresenceCheck}
 * from the events it streams anyway, instead of reading the log's events a second time.)
 *
 * @example
 * for await (const failure of checkRecordTables(database, 'default')) report.failures.push(failure);
 */
export async function* checkRecordTables(
  database: Database,
  log: string,
  options: CheckRecordTablesOptions = {},
): AsyncGenerator<RecordFailure> {
  const db = options.executor ?? database.db;
  const pageSize = options.pageSize ?? 1_000;
  yield* checkRecordRows(database, log, options);
  for await (const events of eventPagesOfKinds(db, log, [...RECORD_TABLE_OF.keys()], {
    pageSize,
    ...(options.signal ? { signal: options.signal } : {}),
  })) {
    yield* missingRecordRows(db, log, events);
  }
}

/**
 * One direction of {@link checkRecordTables}: every record row against the event it names
 * (`RECORD_WITHOUT_EVENT`, and `RECORD_MISMATCH` for an edited row).
 */
export async function* checkRecordRows(
  database: Database,
  log: string,
  options: CheckRecordTablesOptions = {},
): AsyncGenerator<RecordFailure> {
  const db = options.executor ?? database.db;
  const pageSize = options.pageSize ?? 1_000;

  for (const { kind, table, toRecord } of RECORD_TABLES) {
    const t = table as unknown as RecordTable & PgTable;
    const name = tableName(table);
    let after = 0;
    for (;;) {
      options.signal?.throwIfAborted();
      const page = await db
        .select({
          row: table as unknown as PgTable,
          eventKind: auditEvents.kind,
          eventEntity: auditEvents.entityId,
          eventPayload: auditEvents.payload,
        })
        .from(t)
        .leftJoin(auditEvents, and(eq(auditEvents.logId, t.logId), eq(auditEvents.seq, t.eventSeq)))
        .where(and(eq(t.logId, log), gt(t.eventSeq, after)))
        .orderBy(asc(t.eventSeq))
        .limit(pageSize);
      for (const item of page as unknown as Array<{
        row: { id: string; eventSeq: number };
        eventKind: string | null;
        eventEntity: string | null;
        eventPayload: string | null;
      }>) {
        const { row } = item;
        const at = { seq: row.eventSeq, table: name, id: row.id };
        if (item.eventKind === null || item.eventKind !== kind || item.eventEntity !== row.id) {
          yield {
            ...at,
            code: 'RECORD_WITHOUT_EVENT',
            message:
              item.eventKind === null
                ? `${name} row ${row.id} names event ${row.eventSeq}, which does not exist`
                : `${name} row ${row.id} names event ${row.eventSeq}, which is a ${item.eventKind} about ${item.eventEntity}`,
          };
          continue;
        }
        if (rebuild(toRecord as (row: unknown) => unknown, row) !== item.eventPayload) {
          yield {
            ...at,
            code: 'RECORD_MISMATCH',
            message: `${name} row ${row.id} differs from the payload of its event ${row.eventSeq}`,
          };
        }
      }
      if (page.length < pageSize) break;
      after = (page[page.length - 1] as unknown as { row: { eventSeq: number } }).row.eventSeq;
    }
  }
}

/** An event as the presence check needs it. */
interface EventRef {
  seq: number;
  kind: string;
  entity: string;
}

/**
 * The other direction of {@link checkRecordTables}, fed by a caller that streams the log's
 * events anyway (`verifyChain`): `add` every event in seq order, `flush` at the end of each
 * page. Record events are gathered (other kinds cost one lookup), and each flush asks every
 * table that has some for their rows, one query per table: `RECORD_MISMATCH` for a record
 * event whose row is gone. Memory: the record events of one page.
 */
export function createRecordRowPresenceCheck(
  database: Database,
  log: string,
  options: { fail: (failure: RecordFailure) => void; executor?: Db },
) {
  const db = options.executor ?? database.db;
  let gathered: EventRef[] = [];
  return {
    add(event: EventRef): void {
      if (RECORD_TABLE_OF.has(event.kind))
        gathered.push({ seq: event.seq, kind: event.kind, entity: event.entity });
    },
    async flush(): Promise<void> {
      if (gathered.length === 0) return;
      const events = gathered;
      gathered = [];
      for await (const failure of missingRecordRows(db, log, events)) options.fail(failure);
    },
  };
}

/** Record events among `events` whose row is missing from their table. */
async function* missingRecordRows(
  db: Db,
  log: string,
  events: readonly EventRef[],
): AsyncGenerator<RecordFailure> {
  for (const [kind, entry] of RECORD_TABLE_OF) {
    const seqs = events.filter((e) => e.kind === kind).map((e) => e.seq);
    if (seqs.length === 0) continue;
    const t = entry.table as unknown as RecordTable & PgTable;
    const present = new Set(
      (
        (await db
          .select({ seq: t.eventSeq })
          .from(t)
          .where(and(eq(t.logId, log), anyOf(t.eventSeq, seqs, 'bigint')))) as Array<{ seq: number }>
      ).map((r) => r.seq),
    );
    for (const event of events) {
      if (event.kind !== kind || present.has(event.seq)) continue;
      yield {
        seq: event.seq,
        code: 'RECORD_MISMATCH',
        table: tableName(entry.table),
        id: event.entity,
        message: `event ${event.seq} records ${kind} ${event.entity}, but its ${tableName(entry.table)} row is missing`,
      };
    }
  }
}

function rebuild(toRecord: (row: unknown) => unknown, row: unknown): string | null {
  try {
    return canonicalJson(toRecord(row));
  } catch {
    // A JSON column edited into something unparseable cannot match any payload.
    return null;
  }
}

function tableName(table: PgTable | unknown): string {
  return getTableName(table as PgTable);
}
