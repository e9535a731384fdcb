import { getTableName, sql } from 'drizzle-orm';
import type { Db } from '../database';
import { rowsOf } from '../database';
import { auditEvents } from '../schema/core';
import { approvalUses, executionClaims, observations } from '../schema/records';

/**
 * The record kinds whose existence guards an execution: a single-use approval is used once
 * (`approval_use`), a proposal is claimed once (`execution_claim`) and executed once
 * (`observation`). The reads that decide "already happened" find their rows by what they
 * are about (the request, the proposal); a row the table owner deleted would simply not be
 * found, and the approval or proposal would look unused. So those reads also look for the
 * events, which a deletion cannot take away without breaking the chain (`SEQ_GAP`,
 * `PREV_HASH_MISMATCH`, `MERKLE_MISMATCH`, a witness), through the index
 * `audit_events_subject` on `vouch_event_subject(kind, payload)` (migration 0023): the
 * request an approval use names, or the proposal a claim or observation names.
 */
export const SUBJECT_TABLES = {
  approval_use: approvalUses,
  execution_claim: executionClaims,
  observation: observations,
} as const;

export type SubjectKind = keyof typeof SUBJECT_TABLES;

/** An event of a {@link SubjectKind} about `subject` whose record row is gone. */
export interface EventWithoutRow {
  kind: SubjectKind;
  subject: string;
  seq: number;
  /** The record id the event names. */
  entity: string;
  /** The record table the row is missing from. */
  table: string;
}

const KINDS = sql.raw(
  Object.keys(SUBJECT_TABLES)
    .map((kind) => `'${kind}'`)
    .join(', '),
);
const subjectOf = sql`vouch_event_subject(${auditEvents.kind}, ${auditEvents.payload})`;
const rowOfEvent = sql.join(
  Object.entries(SUBJECT_TABLES).map(
    ([kind, table]) =>
      sql`not exists (select 1 from ${table} where ${sql.raw(`'${kind}'`)} = ${auditEvents.kind}
        and ${table.logId} = ${auditEvents.logId} and ${table.eventSeq} = ${auditEvents.seq})`,
  ),
  sql` and `,
);

/**
 * The events of `log` of these kinds about any of `subjects` that have no row in their
 * record table: one query on the subject index, whatever the kinds (the kind list is a
 * literal, so the planner can prove the partial index's predicate in a generic plan).
 * Normally empty. The caller matches each to the (kind, subject) it asked about.
 */
export async function eventsWithoutRows(
  db: Db,
  log: string,
  subjects: readonly string[],
): Promise<EventWithoutRow[]> {
  if (subjects.length === 0) return [];
  const rows = rowsOf<{ kind: SubjectKind; subject: string; seq: number | string; entity: string }>(
    await db.execute(
      sql`select ${auditEvents.kind} as "kind", ${subjectOf} as "subject", ${auditEvents.seq} as "seq",
          ${auditEvents.entityId} as "entity"
        from ${auditEvents}
        where ${auditEvents.logId} = ${log} and ${auditEvents.kind} in (${KINDS})
          and ${subjectOf} = any(${sql.param([...subjects])}::text[])
          and ${rowOfEvent}`,
    ),
  );
  return rows.map((row) => ({
    kind: row.kind,
    subject: row.subject,
    seq: Number(row.seq),
    entity: row.entity,
    table: getTableName(SUBJECT_TABLES[row.kind]),
  }));
}
