import { and, eq, sql } from 'drizzle-orm';
import type { Db } from '../database';
import { LedgerError } from '../errors';
import type { IntegrityAlarm } from '../integrity-alarm';
import { RECORD_TABLE_OF } from '../records/codec';
import { tableNameOf } from '../records/record-rules';
import { auditEvents } from '../schema/core';
import { judgeRecordSignature } from './judge-record-signature';
import { keyHistoryThrough } from './request-signature';

/**
 * Why a stored record that speaks for its actor (an approval answer, a verification, an
 * external decision, a gateway's proposal, claim and observation, the server's own) does not carry that actor's signature as the rule requires, judged at
 * its event's time, or null: what the server checks before it acts on such a record or shows
 * it. The runtime role can append one in an enrolled author's name; this is where the server
 * stops believing it. A break raises the integrity alarm.
 */
export async function unsignedRecord(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  kind: string,
  record: Record<string, unknown> & { id: string },
): Promise<string | null> {
  const history = await keyHistoryThrough(db, alarm);
  // No author has a key and none must sign: nothing to judge, and no event to read for it.
  if (history.signingKeys.isEmpty() && record.signature === undefined) return null;
  const entry = RECORD_TABLE_OF.get(kind);
  if (!entry) return null;
  const table = entry.table;
  const [event] = await db
    .select({
      at: auditEvents.recordedAt,
      actor: auditEvents.actor,
      seq: auditEvents.seq,
      commitment: auditEvents.commitment,
    })
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.logId, log),
        eq(
          auditEvents.seq,
          sql`(select ${table.eventSeq} from ${table} where ${table.logId} = ${log} and ${table.id} = ${record.id})`,
        ),
      ),
    );
  if (!event) return null; // a row without its event is the record check's to refuse
  // Without the field openings an erasable member (a proposal's arguments, an observation's
  // result) is not compared here; the rest of the signed claims still binds the record.
  const stored = {
    seq: Number(event.seq),
    kind,
    actor: event.actor,
    at: event.at,
    commitment: event.commitment,
  } as Parameters<typeof judgeRecordSignature>[2];
  const violation = judgeRecordSignature(history, log, stored, record, new Set());
  if (violation === null) return null;
  const message = `${kind} ${record.id} in log ${log} is in ${event.actor}'s name without a signature that holds (${violation.rule}: ${violation.why}): the server refuses to act on it; run \`vouch verify\``;
  alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: tableNameOf(kind), message });
  return message;
}

/** Refuse a record whose author signature does not hold (see {@link unsignedRecord}): `RECORD_SIGNATURE_INVALID`. */
export function refuseUnsigned(message: string | null, kind: string, id: string): void {
  if (message !== null) {
    throw new LedgerError('RECORD_SIGNATURE_INVALID', message, { details: { kind, id } });
  }
}

/**
 * Refuse to show or derive anything from records whose author signature does not hold
 * (`RECORD_SIGNATURE_INVALID`; the alarm is raised by the read).
 */
export async function requireSignedRecords(
  reads: { unsignedRecord(kind: string, record: { id: string }): Promise<string | null> },
  records: ReadonlyArray<readonly [kind: string, record: { id: string } | null | undefined]>,
): Promise<void> {
  const present = records.filter((entry): entry is readonly [string, { id: string }] => Boolean(entry[1]));
  const messages = await Promise.all(present.map(([kind, record]) => reads.unsignedRecord(kind, record)));
  for (const [i, message] of messages.entries()) refuseUnsigned(message, present[i]![0], present[i]![1].id);
}
