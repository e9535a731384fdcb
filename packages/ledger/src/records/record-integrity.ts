import { canonicalJson, payloadHashOf } from '@vouch/audit';
import type { EventColumns } from '../batched-sql';
import { isLedgerError, LedgerError } from '../errors';
import type { IntegrityAlarm } from '../integrity-alarm';

/**
 * A record row the server was about to act on that its event does not account for: the
 * details of a `RECORD_INTEGRITY_VIOLATION`, and what the integrity alarm is told.
 */
export interface IntegrityViolation {
  log: string;
  /** The record table, e.g. `approval_resolutions`. */
  table: string;
  /** The record id the row carries. */
  id: string;
  /** The seq of the event the row names. */
  seq: number;
  /**
   * In `verifyChain`'s terms: `RECORD_MISMATCH`, the row no longer rebuilds the payload its
   * event hashed (an edited row); `RECORD_WITHOUT_EVENT`, the row names no event, or an event
   * of another kind or entity (a row inserted behind the ledger's back). `RECORD_MISSING`:
   * an event records it and its row is gone (a deleted row; `verifyChain` reports it as
   * `RECORD_MISMATCH` at the event's seq); `id` and `seq` are then the event's.
   */
  reason: 'RECORD_MISMATCH' | 'RECORD_WITHOUT_EVENT' | 'RECORD_MISSING';
}

/** How to check the rows of one record table: its name, its event kind and its codec. */
export interface CheckedTable<Row, R> {
  name: string;
  kind: string;
  toRecord(row: Row): R;
}

/**
 * The record a row holds, once it is shown to be the one its event recorded:
 * `SHA-256(canonical(toRecord(row)))` must equal the event's `payload_hash`, and the event
 * must be of the table's kind and about the row's id. The event's own hash is not checked
 * here: a row changed together with its event's payload hash breaks the chain, which
 * `verifyChain`, checkpoints and witnesses catch; this check makes the cheap edit (the row
 * alone, as a database owner can) refuse at once instead of being acted on until someone
 * runs verify. Costs one canonical JSON and one SHA-256 per row.
 *
 * @throws LedgerError `RECORD_INTEGRITY_VIOLATION` with an {@link IntegrityViolation} as details.
 */
export function checkedRecord<Row extends { id: string; eventSeq: number }, R>(
  table: CheckedTable<Row, R>,
  log: string,
  row: Row & EventColumns,
): R {
  const at = { log, table: table.name, id: row.id, seq: row.eventSeq };
  if (row.eventPayloadHash === null || row.eventKind !== table.kind || row.eventEntity !== row.id) {
    throw integrityViolation({ ...at, reason: 'RECORD_WITHOUT_EVENT' });
  }
  let record: R;
  let payloadHash: string;
  try {
    record = table.toRecord(row);
    payloadHash = payloadHashOf(canonicalJson(record));
  } catch {
    // A JSON column edited into something unparseable cannot match any payload.
    throw integrityViolation({ ...at, reason: 'RECORD_MISMATCH' });
  }
  if (payloadHash !== row.eventPayloadHash) throw integrityViolation({ ...at, reason: 'RECORD_MISMATCH' });
  return record;
}

const WHAT: Record<IntegrityViolation['reason'], string> = {
  RECORD_MISMATCH: 'differs from the payload of its event',
  RECORD_WITHOUT_EVENT: 'is not accounted for by its event',
  RECORD_MISSING: 'is missing, and recorded by event',
};

/** The error for a violation (see {@link IntegrityViolation}); raise it with {@link raiseViolation}. */
export function integrityViolation(violation: IntegrityViolation): LedgerError {
  const what = `${WHAT[violation.reason]} ${violation.seq}`;
  return new LedgerError(
    'RECORD_INTEGRITY_VIOLATION',
    `${violation.table} row ${violation.id} in log ${violation.log} ${what}: the server refuses to act on it and wrote nothing; run \`vouch verify\``,
    { details: { ...violation } },
  );
}

/** The violation an error reports, when it is a `RECORD_INTEGRITY_VIOLATION` from any copy of this package. */
export function integrityViolationOf(error: unknown): IntegrityViolation | null {
  return isLedgerError(error) && error.code === 'RECORD_INTEGRITY_VIOLATION'
    ? (error.details as unknown as IntegrityViolation)
    : null;
}

/**
 * Tell the integrity alarm about a violation: whoever read the row gets its 503, and the
 * server stops signing and reports itself not ready until an operator looks. Raised where
 * the row is checked, so a read-only route hears of it as surely as a write.
 */
export function raiseViolation(alarm: IntegrityAlarm, violation: IntegrityViolation): void {
  alarm.raise({
    code: 'RECORD_MISMATCH',
    log: violation.log,
    seq: violation.seq,
    table: violation.table,
    message: `${violation.table} row ${violation.id} disagrees with event ${violation.seq} (${violation.reason})`,
  });
}
