import type {
  ApprovalResolutionRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalOutcome,
  RefusedExecutionRecord,
  VerificationRecord,
} from './types';

/**
 * A proposal's outcome, derived from its latest verification only: `passed` -> completed,
 * `failed` -> failed, `inconclusive` -> aborted, none yet -> pending. An observation alone
 * never completes a proposal: a successful execution is not a verification of its result.
 *
 * @example
 * deriveOutcome({ verification: { status: 'failed' } }); // 'failed'
 * deriveOutcome({ verification: null }); // 'pending'
 */
export function deriveOutcome(input: {
  verification: Pick<VerificationRecord, 'status'> | null;
}): ProposalOutcome {
  switch (input.verification?.status) {
    case 'passed':
      return 'completed';
    case 'failed':
      return 'failed';
    case 'inconclusive':
      return 'aborted';
    default:
      return 'pending';
  }
}

/** Where a proposal is in its life, for people reading a story; the outcome says how it ended. */
export type ProposalStage =
  | 'awaiting_decision'
  | 'denied'
  | 'repair_proposed'
  | 'awaiting_approval'
  | 'approval_denied'
  | 'authorized'
  | 'refused'
  | 'executed'
  | 'verified';

/**
 * The stage a proposal has reached, from its records. Later records win: a verification
 * means verified whatever came before.
 */
export function deriveStage(input: {
  decision: Pick<DecisionRecord, 'verdict'> | null;
  resolution: Pick<ApprovalResolutionRecord, 'resolution'> | null;
  observation: Pick<ObservationRecord, 'id'> | null;
  verification: Pick<VerificationRecord, 'status'> | null;
  refusals: readonly Pick<RefusedExecutionRecord, 'id'>[];
}): ProposalStage {
  if (input.verification) return 'verified';
  if (input.observation) return 'executed';
  if (input.refusals.length > 0) return 'refused';
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
      if (input.resolution === null) return 'awaiting_approval';
      return input.resolution.resolution === 'approved' ? 'authorized' : 'approval_denied';
  }
}
