import type { ChainHead, StoredEvent } from '@vouch/audit';
import { and, asc, desc, eq, gt } from 'drizzle-orm';
import type { Database, Db } from './database';
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
};

/** Insert already-chained events in one statement. */
export async function insertEvents(
  _database: Database,
  tx: Db,
  events: readonly StoredEvent[],
): Promise<void> {
  await tx.insert(auditEvents).values(
    events.map((e) => ({
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
    })),
  );
}

/** The last event's seq and hash, or null for an empty log. */
export async function readHead(
  database: Database,
  log: string,
  executor: Db = database.db,
): Promise<ChainHead | null> {
  const [row] = await executor
    .select({ seq: auditEvents.seq, hash: auditEvents.hash })
    .from(auditEvents)
    .where(eq(auditEvents.logId, log))
    .orderBy(desc(auditEvents.seq))
    .limit(1);
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
  return executor
    .select(eventColumns)
    .from(auditEvents)
    .where(and(eq(auditEvents.logId, log), gt(auditEvents.seq, after)))
    .orderBy(asc(auditEvents.seq))
    .limit(limit);
}

/**
 * Every event of a log in seq order, in keyset pages, with the next page read while the
 * caller works on the current one: constant memory, and reading overlaps hashing.
 */
export async function* streamEvents(
  database: Database,
  log: string,
  options: { after?: number; pageSize?: number } = {},
): AsyncGenerator<StoredEvent> {
  const pageSize = options.pageSize ?? 5_000;
  let after = options.after ?? 0;
  let next: Promise<StoredEvent[]> | null = readEvents(database, log, after, pageSize);
  while (next) {
    const page: StoredEvent[] = await next;
    if (page.length === pageSize) {
      after = page[page.length - 1]!.seq;
      next = readEvents(database, log, after, pageSize);
      // A prefetch the caller abandons must not surface as an unhandled rejection.
      next.catch(() => {});
    } else {
      next = null;
    }
    yield* page;
  }
}
