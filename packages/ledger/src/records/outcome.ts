// A story's `outcome` and `stage`, what each value means and how each is derived, are
// declared with the records (`@vouch/records`); the ledger's names are kept here.
export {
  deriveOutcome,
  deriveStage,
  PROPOSAL_OUTCOMES,
  PROPOSAL_STAGES,
  type ProposalStage,
  type StageApproval,
} from '@vouch/records';
