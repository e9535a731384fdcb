import type { ProposalOutcome, ProposalStage } from './proposal-life';
import type {
  ApprovalUseRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalRecord,
  RefusedExecutionRecord,
  VerificationStatus,
} from './records';
import type { ApprovalStatus } from './views';

/*
 * A story's `outcome` and `stage` are derived from its records, never stored. Declared here,
 * beside the records and the meaning of each value, so that every reader (the ledger, the
 * client's fake server) derives them the same way.
 */

/**
 * The outcome of a proposal, from its observation and the effective status of its
 * verification (`null`: nothing verified yet). Which verification counts, and whether an
 * unknown outcome may be given a definitive status yet, is decided before this is called;
 * this only names the result. An observation alone never makes a proposal `verified`.
 *
 * @example
 * deriveOutcome({ observation: { outcome: 'succeeded' }, verificationStatus: 'failed' }); // 'verification_failed'
 * deriveOutcome({ observation: { outcome: 'succeeded' }, verificationStatus: null }); // 'awaiting_verification'
 * deriveOutcome({ observation: { outcome: 'unknown' }, verificationStatus: 'inconclusive' }); // 'awaiting_resolution'
 */
export function deriveOutcome(input: {
  observation: Pick<ObservationRecord, 'outcome'> | null;
  verificationStatus: VerificationStatus | null;
}): ProposalOutcome {
  const { observation, verificationStatus } = input;
  if (observation === null) return 'not_executed';
  switch (verificationStatus) {
    case 'passed':
      return 'verified';
    case 'failed':
      return 'verification_failed';
    case 'inconclusive':
    case null:
      // A timed-out call may still act: only a definitive check settles what it did.
      if (observation.outcome === 'unknown') return 'awaiting_resolution';
      return verificationStatus === null ? 'awaiting_verification' : 'unverified';
  }
}

/**
 * The refused executions that belong in a proposal's story: those attempted by the identity
 * its decision authorized (by its requester while it has none). Another identity's refused
 * attempt is recorded under that identity, in the chain, and never moves this proposal's
 * stage or story: a second gateway must not be able to write on someone else's proposal.
 *
 * @example
 * ownRefusals({ requester: 'agent:a' }, { authorized_identity: 'agent:a' }, [{ attempted_by: 'agent:b' }]); // []
 */
export function ownRefusals<R extends Pick<RefusedExecutionRecord, 'attempted_by'>>(
  proposal: Pick<ProposalRecord, 'requester'>,
  decision: Pick<DecisionRecord, 'authorized_identity'> | null,
  refusals: readonly R[],
  same: (a: string, b: string) => boolean = (a, b) => a === b,
): R[] {
  const owner = decision?.authorized_identity ?? proposal.requester;
  return refusals.filter((refusal) => same(refusal.attempted_by, owner));
}

/** The approval request a decision waits on, with its status at the time of reading. */
export interface StageApproval {
  status: ApprovalStatus;
  uses: readonly Pick<ApprovalUseRecord, 'proposal_id'>[];
}

/**
 * The stage a proposal has reached, from its records. An observation means executed; a
 * refused attempt is shown before the decision path, since a gateway that ran a tool it was
 * refused is the first thing a reader must see. An approval this proposal already claimed
 * keeps it authorized even when the approval has since been used up or has expired.
 *
 * @example
 * deriveStage({ proposal: { id: 'prop_1' }, decision: { verdict: 'deny' }, approval: null, observation: null, refusals: [] }); // 'denied'
 */
export function deriveStage(input: {
  proposal: Pick<ProposalRecord, 'id'>;
  decision: Pick<DecisionRecord, 'verdict'> | null;
  approval: StageApproval | null;
  observation: Pick<ObservationRecord, 'id'> | null;
  refusals: readonly Pick<RefusedExecutionRecord, 'id'>[];
}): ProposalStage {
  if (input.observation) return 'executed';
  if (input.refusals.length > 0) return 'execution_refused';
  switch (input.decision?.verdict) {
    case undefined:
      return 'awaiting_decision';
    case 'deny':
      return 'denied';
    case 'repair':
      return 'repair_proposed';
    case 'allow':
      return 'authorized';
    case 'require_approval':
      return approvalStage(input.proposal, input.approval);
  }
}

function approvalStage(proposal: Pick<ProposalRecord, 'id'>, approval: StageApproval | null): ProposalStage {
  if (approval === null) return 'awaiting_approval';
  if (approval.uses.some((use) => use.proposal_id === proposal.id)) return 'authorized';
  switch (approval.status) {
    case 'pending':
      return 'awaiting_approval';
    case 'approved':
      return 'authorized';
    case 'denied':
      return 'approval_denied';
    case 'expired':
      return 'approval_expired';
    case 'used':
      return 'approval_used';
  }
}
