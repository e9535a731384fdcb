import type { DsseEnvelope, StoredEvent } from '@vouch/audit';
import type { KeyHistory } from '../keys/key-history';
import { gatewaySignedActionsOf } from './gateway-signatures';
import { claimedAction, signedActionsOf } from './record-signatures';
import type { SignatureViolation } from './signing-key-registry';

/**
 * The signed actions a record event may carry (an author's record, or a gateway's), each with
 * how its claims must match the record; null for records nobody signs.
 */
export function signedActionsOfEvent(event: StoredEvent, record: Record<string, unknown>) {
  return signedActionsOf(event.kind, record) ?? gatewaySignedActionsOf(event.kind, record, event);
}

/**
 * Judge the author signature of one record event (verification, as the events stream by):
 * a record that speaks for its actor (an approval answer, a verification, an external
 * decision; a gateway's proposal, execution claim and observation) carries a signature by a key of the actor live at the event's time, over a
 * statement whose claims are what the record says, used by no other record of the log
 * (`seen`); or none, when the actor need not sign then. Null when it holds.
 */
export function judgeRecordSignature(
  history: KeyHistory,
  log: string,
  event: StoredEvent,
  record: Record<string, unknown>,
  seen: Set<string>,
): SignatureViolation | null {
  const actions = signedActionsOfEvent(event, record);
  if (actions === null) return null;
  const signature = record.signature as DsseEnvelope | undefined;
  const at = Date.parse(event.at);
  const claimed = claimedAction(signature);
  const action =
    claimed !== undefined && Object.hasOwn(actions, claimed) ? claimed : Object.keys(actions)[0]!;
  const violation = history.signingKeys.judge({
    log,
    action,
    actor: event.actor,
    at,
    signature,
    claimsMatch: actions[action]!,
  });
  if (violation !== null || signature === undefined) return violation;
  const sig = signature.signatures[0]!.sig;
  if (seen.has(sig))
    return { rule: 'SIGNATURE_REPLAYED', why: 'the same signed statement speaks for an earlier record' };
  seen.add(sig);
  return null;
}
