import { type StoredEvent, sameIdentity } from '@vouch/audit';
import { ownRefusals } from '@vouch/records';
import { requireSignedRecords } from '../signatures/signed-record-check';
import { type ApprovalView, approvalView } from './approvals';
import { deriveOutcome, deriveStage, type ProposalStage } from './outcome';
import { requirePinnedDecision } from './policy-pins';
import { mustGetProposal, type RecordsRuntime } from './records-runtime';
import type {
  DecisionRecord,
  ExecutionClaimRecord,
  ObservationRecord,
  ProposalOutcome,
  ProposalRecord,
  RefusedExecutionRecord,
  VerificationRecord,
} from './types';
import { type EffectiveVerification, effectiveVerification } from './verification-status';

/** Everything recorded about one proposal, with its derived outcome and the events behind it. */
export interface ProposalStory {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  approval: ApprovalView | null;
  /** The execution claim `authorize` recorded, if any. */
  claim: ExecutionClaimRecord | null;
  observation: ObservationRecord | null;
  /** Refused executions by the identity the decision authorized (see `ownRefusals`); others' stay in the chain. */
  refusals: RefusedExecutionRecord[];
  /** Every verification record, superseded ones included, in chain order. */
  verifications: VerificationRecord[];
  /** The latest verification record (not the status: see `verification_status`). */
  verification: VerificationRecord | null;
  /** The status derived from all the verification records; the outcome follows it. */
  verification_status: EffectiveVerification;
  outcome: ProposalOutcome;
  stage: ProposalStage;
  events: StoredEvent[];
}

/** The proposal, its decision, approval, observation, verifications, outcome and events. */
export async function story(
  runtime: RecordsRuntime,
  log: string,
  proposalId: string,
): Promise<ProposalStory> {
  const reads = runtime.reads(log);
  const proposal = await mustGetProposal(reads, proposalId);
  const [decision, claim, observation, allRefusals, verificationList] = await Promise.all([
    reads.decisionOf(proposal.id),
    reads.claimOf(proposal.id),
    reads.observationOf(proposal.id),
    reads.refusalsOf(proposal.id),
    reads.verificationsOf(proposal.id),
  ]);
  await requirePinnedDecision(reads, decision);
  const refusals = ownRefusals(proposal, decision, allRefusals, sameIdentity);
  const request = decision?.approval_request_id
    ? await reads.requestById(decision.approval_request_id)
    : null;
  const approval = request ? await approvalView(reads, request, runtime.wallNow()) : null;
  await requireSignedRecords(reads, [
    ['proposal', proposal],
    ['decision', decision],
    ['execution_claim', claim],
    ['observation', observation],
    ['approval_resolution', approval?.resolution],
    ...verificationList.map((v) => ['verification', v] as const),
  ]);
  const verification = verificationList.at(-1) ?? null;
  reads.requireAssessedChecks(proposal, observation, verificationList);
  await reads.requireOwnEvidence(proposal.id, verificationList);
  const verificationStatus = effectiveVerification({
    proposal,
    observation,
    verifications: verificationList,
    settleSeconds: runtime.settings.unknownOutcomeSettleSeconds,
    now: runtime.wallNow(),
  });
  // The outcome follows the status of all records, not the latest one; while an unknown
  // outcome settles there is no verdict yet.
  const verified =
    verificationList.length === 0 || verificationStatus.reason === 'OUTCOME_UNKNOWN'
      ? null
      : { status: verificationStatus.status };
  const entities = [
    proposal.id,
    decision?.id,
    request?.id,
    approval?.resolution?.id,
    ...(approval?.uses.filter((u) => u.proposal_id === proposal.id).map((u) => u.id) ?? []),
    claim?.id,
    observation?.id,
    ...refusals.map((r) => r.id),
    ...verificationList.map((v) => v.id),
  ].filter((e): e is string => typeof e === 'string');
  const events = await reads.eventsOf(entities);
  return {
    proposal,
    decision,
    approval,
    claim,
    observation,
    refusals,
    verifications: verificationList,
    verification,
    verification_status: verificationStatus,
    outcome: deriveOutcome({ observation, verificationStatus: verified?.status ?? null }),
    stage: deriveStage({ proposal, decision, approval, observation, refusals }),
    events,
  };
}
