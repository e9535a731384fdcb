import type { StoredEvent } from '@vouch/audit';
import { RECORD_KINDS } from '@vouch/records';
import type { KeyHistory } from '../keys/key-history';
import { POLICY_CONFIGURED_KIND } from '../policy/policy-configuration';
import { judgeRecordSignature, signedActionsOfEvent } from './judge-record-signature';
import type { SignatureViolation } from './signing-key-registry';

type Json = Record<string, unknown>;

/**
 * The author signatures of one log's records, judged in seq order against a key history:
 * the one judge `verifyChain` (the `system` log read from the database), `vouch verify
 * --bundle` (the `system` log a bundle carries) and the console's check in the browser (the
 * `system` log read over HTTP) all run. `report` hears each record whose signature breaks
 * the rule (`SIGNATURE_MISSING`, `SIGNATURE_INVALID`, `SIGNATURE_REPLAYED`, …:
 * `judgeRecordSignature`); every record that speaks for its author is counted, signed or
 * unsigned. Browser-safe, like everything `@vouch/ledger/signature-rules` exports.
 */
export function createAuthorSignatureJudge(
  log: string,
  report: (event: StoredEvent, violation: SignatureViolation) => void,
) {
  /** The signatures seen so far: one signed statement speaks for one record. */
  const seen = new Set<string>();
  const authors = { signed: 0, unsigned: 0 };
  const judgeRecord = (history: KeyHistory, event: StoredEvent, record: Json): void => {
    if (signedActionsOfEvent(event, record) === null) return;
    if (record.signature === undefined) authors.unsigned++;
    else authors.signed++;
    const violation = judgeRecordSignature(history, log, event, record, seen);
    if (violation !== null) report(event, violation);
  };
  return {
    /** Judge a record event whose payload the caller already parsed. */
    judgeRecord,
    /**
     * Judge any event: a record event's (or a policy pin's, which the server may sign) payload
     * is parsed here; other events are passed over.
     */
    add(history: KeyHistory, event: StoredEvent): void {
      const kind = event.kind;
      if (!(RECORD_KINDS as readonly string[]).includes(kind) && kind !== POLICY_CONFIGURED_KIND) return;
      const record = recordOf(event);
      if (record !== null) judgeRecord(history, event, record);
    },
    /** How many records that speak for their author carry a signature, and how many do not. */
    authors: () => ({ ...authors }),
  };
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
