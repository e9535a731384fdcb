import type { StoredEvent } from '@vouch/audit';
import type { CompactRange } from '@vouch/audit/merkle';
import { type AppendHead, batchTime } from './append-time';
import { chainEvent, type StagedEvent } from './batch-run';
import { insertTables } from './batched-sql';
import type { Database } from './database';
import { eventRows } from './event-store';
import { appendLeaves } from './merkle/merkle-append-hook';
import { subtreeRows } from './merkle/merkle-node-store';
import { auditEvents, merkleNodes } from './schema/core';

/** What {@link commitInOneStatement} builds on: the log's head as this process last committed it. */
export interface KnownHead {
  head: AppendHead;
  /** The Merkle tree at that head; null when the ledger keeps no tree. */
  range: CompactRange | null;
}

/**
 * Commit a batch of plain appends as ONE statement outside any transaction: the events, and
 * the Merkle nodes they complete, inserted together (see `insertTables`) on the head this
 * process last committed. One round trip, where the locked path needs a transaction, the
 * lock, a head read and a frontier read first.
 *
 * Why it cannot fork the chain: the head is not read, it is assumed, and the database
 * checks the assumption. Each row must link to the row before it by seq and hash (the
 * `audit_events_prev_link` foreign key) and take a seq no other row has (the primary key),
 * so if any process appended since, the statement fails on one of them (class 23, or
 * class 40 when two such statements wait on each other's rows and the database breaks the
 * deadlock) and nothing of it is written; the caller then runs the batch on the locked path. A statement
 * is atomic and, under `synchronous_commit = on`, durable when the server answers.
 *
 * Resolves with the events as stored and the tree after them.
 */
export async function commitInOneStatement(options: {
  database: Database;
  log: string;
  clock: Date;
  known: KnownHead;
  staged: readonly StagedEvent[];
}): Promise<{ events: StoredEvent[]; head: KnownHead }> {
  const { database, log, clock, known, staged } = options;
  // The known head is the real one or the statement fails: its time is the real head's too.
  const now = batchTime(clock, known.head.at);
  const events: StoredEvent[] = [];
  let head = known.head;
  for (const s of staged) {
    const event = chainEvent(log, now, head, s);
    events.push(event);
    head = { seq: event.seq, hash: event.hash, at: event.at };
  }
  const range = known.range;
  const nodes = range ? subtreeRows(log, appendLeaves(log, range, events)) : [];
  await insertTables(database, database.db, [
    { table: auditEvents, rows: eventRows(events) },
    { table: merkleNodes, rows: nodes },
  ]);
  return { events, head: { head, range } };
}

/**
 * The one statement lost a race with another process's: SQLSTATE class 23 (a row of the
 * same seq or node exists), or class 40 (each waited on the other's rows: the database broke
 * the deadlock, or the serialization failed). Either way the statement wrote nothing.
 */
export function lostRace(sqlState: string | undefined): boolean {
  return sqlState !== undefined && (sqlState.startsWith('23') || sqlState.startsWith('40'));
}
