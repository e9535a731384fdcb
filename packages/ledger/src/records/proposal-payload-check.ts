import { LedgerError } from '../errors';
import type { IntegrityAlarm } from '../integrity-alarm';
import { proposalPayloadHolds } from './payload-hash';
import type { Redacted } from './record-fields';
import type { ProposalRecord } from './types';

/**
 * Refuse to act on a proposal whose payload does not hash to its `payload_hash`: the server
 * computes both from one input, so such a record was appended by someone else, and an
 * approval of the arguments it shows would transfer to the payload its hash names (what a
 * gateway executing that payload checks). Raises `alarm` before it throws. A proposal with
 * an erased argument cannot be rehashed and passes (an erased proposal never runs: see
 * `authorize`).
 *
 * @throws LedgerError `PROPOSAL_PAYLOAD_MISMATCH`.
 */
export function requireProposalPayload(
  alarm: IntegrityAlarm,
  log: string,
  proposal: ProposalRecord & { redacted?: Redacted },
): void {
  if (proposal.redacted !== undefined || proposalPayloadHolds(proposal)) return;
  const message = `proposal ${proposal.id} in log ${log} carries payload hash ${proposal.payload_hash}, which is not the hash of the payload it shows: the server never wrote it and refuses to act on it; run \`vouch verify\``;
  alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: 'proposals', message });
  throw new LedgerError('PROPOSAL_PAYLOAD_MISMATCH', message, {
    details: { proposal_id: proposal.id, payload_hash: proposal.payload_hash },
  });
}
