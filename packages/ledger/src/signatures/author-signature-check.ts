import type { ChainFailure, StoredEvent } from '@vouch/audit';
import { createKeyHistory, type KeyEvent, type KeyHistory } from '../keys/key-history';
import { RECORD_TABLE_OF } from '../records/codec';
import { recordRuleFailure } from '../records/record-rules';
import { judgeRecordSignature, signedActionsOfEvent } from './judge-record-signature';

type Json = Record<string, unknown>;

/**
 * The author signatures of one log's records, judged in seq order against a key history:
 * the one check `verifyChain` (with the `system` log read from the database) and
 * `vouch verify --bundle` (with the `system` log the bundle carries) both run. A record whose
 * signature breaks the rule is a `RECORD_RULE_VIOLATION` with the rule
 * (`SIGNATURE_MISSING`, `SIGNATURE_INVALID`, `SIGNATURE_REPLAYED`, …: `judgeRecordSignature`);
 * every record that speaks for its author is counted, signed or unsigned.
 */
export function createAuthorSignatureCheck(log: string, fail: (failure: ChainFailure) => void) {
  /** The signatures seen so far: one signed statement speaks for one record. */
  const seen = new Set<string>();
  const authors = { signed: 0, unsigned: 0 };
  const judgeRecord = (history: KeyHistory, event: StoredEvent, record: Json): void => {
    if (signedActionsOfEvent(event, record) === null) return;
    if (record.signature === undefined) authors.unsigned++;
    else authors.signed++;
    const violation = judgeRecordSignature(history, log, event, record, seen);
    if (violation !== null)
      fail(recordRuleFailure(event, violation.rule, violation.why, { actor: event.actor }));
  };
  return {
    /** Judge a record event whose payload the caller already parsed. */
    judgeRecord,
    /** Judge any event: a record event's payload is parsed here; other events are passed over. */
    add(history: KeyHistory, event: StoredEvent): void {
      if (!RECORD_TABLE_OF.has(event.kind)) return;
      const record = recordOf(event);
      if (record !== null) judgeRecord(history, event, record);
    },
    /** How many records that speak for their author carry a signature, and how many do not. */
    authors: () => ({ ...authors }),
  };
}

export type AuthorSignatureCheck = ReturnType<typeof createAuthorSignatureCheck>;

/**
 * {@link createAuthorSignatureCheck} for a log whose `system` log is not at hand but in a
 * bundle (`verifySystemPart`): the key history is built from that part's key events
 * (`KEY_EVENT_KINDS`), in seq order, as the database's is from its rows.
 */
export function createBundleSignatureCheck(
  log: string,
  keyEvents: readonly KeyEvent[],
  fail: (failure: ChainFailure) => void,
) {
  const history = createKeyHistory();
  for (const event of keyEvents) history.add(event);
  const check = createAuthorSignatureCheck(log, fail);
  return { add: (event: StoredEvent) => check.add(history, event), authors: check.authors };
}

/** A record event's payload as an object; null when it is not one (the chain check reports a payload that is not what was hashed). */
export function recordOf(event: Pick<StoredEvent, 'payload'>): Json | null {
  let record: unknown;
  try {
    record = JSON.parse(event.payload);
  } catch {
    return null;
  }
  return typeof record === 'object' && record !== null && !Array.isArray(record) ? (record as Json) : null;
}
