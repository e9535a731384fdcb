import type { VerificationCheck, VerificationRecord } from './types';

/**
 * Evidence is bound to one proposal (docs/verification.md, "Evidence is bound"): a check's
 * `evidence_ref` names what it found (`refund:rf_123`), and the first proposal of a log whose
 * check passed on a reference owns it. A later pass naming it for another proposal proves
 * nothing there: one refund cannot vouch for two refunds. Re-verifying the owner is no reuse.
 * The server applies this when it records a verification; `verifyChain` re-derives the same
 * owners from the events in chain order.
 */

/** Where a reference was first used as proof. */
export interface EvidenceOwner {
  proposal_id: string;
  verification_id: string;
}

/** The references of the checks that count as a pass, each once, in order. */
export function passingRefsOf(checks: readonly VerificationCheck[]): string[] {
  const refs: string[] = [];
  for (const check of checks) {
    const ref = check.evidence_ref;
    if (check.status === 'pass' && typeof ref === 'string' && !refs.includes(ref)) refs.push(ref);
  }
  return refs;
}

/**
 * The owner of each of `refs` among `verifications` (the records that used them first, in
 * chain order): the earliest record with a passing check that names the reference.
 */
export function ownersIn(
  verifications: readonly VerificationRecord[],
  refs: readonly string[],
): Map<string, EvidenceOwner> {
  const owners = new Map<string, EvidenceOwner>();
  for (const verification of verifications) {
    for (const ref of passingRefsOf(verification.checks)) {
      if (refs.includes(ref) && !owners.has(ref)) {
        owners.set(ref, { proposal_id: verification.proposal_id, verification_id: verification.id });
      }
    }
  }
  return owners;
}

/**
 * The checks as they count for `proposalId`: a pass whose reference another proposal owns is
 * `inconclusive`, reason `EVIDENCE_REUSED`, its verdict kept in `reported` and the owner in
 * `evidence_reused`. Every other check is unchanged.
 */
export function markReusedEvidence(
  checks: readonly VerificationCheck[],
  owners: ReadonlyMap<string, EvidenceOwner>,
  proposalId: string,
): VerificationCheck[] {
  return checks.map((check) => {
    const owner = reusedOwner(check, owners, proposalId);
    if (owner === null) return check;
    return {
      ...check,
      status: 'inconclusive',
      reason: 'EVIDENCE_REUSED',
      reported: 'pass',
      evidence_reused: { ...owner },
    };
  });
}

/** The owner whose reference this passing check reuses for `proposalId`, or null. */
export function reusedOwner(
  check: VerificationCheck,
  owners: ReadonlyMap<string, EvidenceOwner>,
  proposalId: string,
): EvidenceOwner | null {
  if (check.status !== 'pass' || typeof check.evidence_ref !== 'string') return null;
  const owner = owners.get(check.evidence_ref);
  return owner !== undefined && owner.proposal_id !== proposalId ? owner : null;
}
