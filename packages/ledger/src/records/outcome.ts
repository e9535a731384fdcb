import type { ApprovalStatus } from './queries';
import type {
  ApprovalUseRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalOutcome,
  ProposalRecord,
  RefusedExecutionRecord,
  VerificationStatus,
} from './types';

/**
 * What each {@link ProposalOutcome} means, for the API reference and anyone reading a story.
 * The outcome answers "what do we know about the action's result?": nothing ran, it ran and
 * waits for a check, or what the check found. Never what the tool said about itself.
 */
export const PROPOSAL_OUTCOMES = {
  not_executed:
    'No execution is recorded: the proposal waits for a decision or an approval, was denied, or an execution was refused. `stage` says which.',
  awaiting_verification:
    'The tool was called (the gateway observed `succeeded` or `failed`) and no verification is recorded yet. A successful execution is not a verification of its result.',
  awaiting_resolution:
    'The tool was called and its outcome is `unknown` (a timeout: it may still act). It is never retried automatically, and stays here until a definitive verification says what happened.',
  verified: 'Every check passed, each read from a source independent of the tool that acted.',
  verification_failed:
    'A check failed: an independent source says a postcondition does not hold, whatever the tool returned.',
  unverified:
    'The tool was called, but its verification was inconclusive (no verifier, a timeout, an error, a source that is not independent). "We did not look" is not "all is well".',
} as const satisfies Record<ProposalOutcome, string>;

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

/** The approval request a decision waits on, with its status at the time of reading. */
export interface StageApproval {
  status: ApprovalStatus;
  uses: readonly Pick<ApprovalUseRecord, 'proposal_id'>[];
}

/** What each {@link ProposalStage} means: how far the proposal got on its way to execution. */
export const PROPOSAL_STAGES = {
  awaiting_decision: 'Proposed; no decision yet (an external policy engine decides).',
  denied: 'The policy denied it. It will not run.',
  repair_proposed:
    'The policy refused it as proposed and offered a corrected action (`decision.repair`) to propose instead. This proposal will not run.',
  awaiting_approval: 'A human must approve its exact payload; the approval request is open.',
  approval_denied: 'The approver denied it. It will not run.',
  approval_expired:
    'The approval request expired unanswered, or the approval window closed before it ran. Propose again to ask again.',
  approval_used:
    'The single-use approval it waited on (shared by identical proposals) was used by another proposal. Propose again to ask again.',
  authorized:
    'Allowed or approved, and no execution recorded yet; the gateway may have claimed it (`authorize`) and be running the tool.',
  execution_refused:
    'An execution was attempted and refused (see `refusals`): a gateway may have run the tool without authorization. Nothing was recorded as executed; the authorized identity may still run it while the decision allows.',
  executed: 'An observation is recorded: the tool was called. `outcome` says what is known about its result.',
} as const;

/** Where a proposal is on its way to execution; `outcome` says what is known about the result. */
export type ProposalStage = keyof typeof PROPOSAL_STAGES;

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
