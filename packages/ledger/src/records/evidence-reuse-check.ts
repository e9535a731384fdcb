import type { Db } from '../database';
import { LedgerError } from '../errors';
import type { IntegrityAlarm } from '../integrity-alarm';
import { ownersIn, passingRefsOf, reusedOwner } from './evidence-refs';
import { firstUsesOf } from './queries';
import type { VerificationRecord } from './types';

/**
 * Refuse to derive a status from a proposal's verification that counts as a pass a reference
 * another proposal of the log proved first: the server records such a check as
 * `EVIDENCE_REUSED`, so the record was appended by someone else (the runtime role), and the
 * status a reviewer reads must not rest on it. Raises `alarm` before it throws. One indexed
 * lookup, and none for a proposal whose checks name no reference.
 *
 * @throws LedgerError `EVIDENCE_REUSED`.
 */
export async function requireOwnEvidence(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  proposalId: string,
  verifications: readonly VerificationRecord[],
): Promise<void> {
  const refs = [...new Set(verifications.flatMap((v) => passingRefsOf(v.checks)))];
  if (refs.length === 0) return;
  const owners = ownersIn(await firstUsesOf(db, log, alarm, refs), refs);
  for (const verification of verifications) {
    for (const check of verification.checks) {
      const owner = reusedOwner(check, owners, proposalId);
      if (owner === null) continue;
      const message = `verification ${verification.id} in log ${log} counts evidence ${String(check.evidence_ref)} as a pass for proposal ${proposalId}, which proved proposal ${owner.proposal_id} first: the server never wrote it and derives no status from it; run \`vouch verify\``;
      alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: 'verifications', message });
      throw new LedgerError('EVIDENCE_REUSED', message, {
        details: { verification_id: verification.id, evidence_reused: { ...owner } },
      });
    }
  }
}
