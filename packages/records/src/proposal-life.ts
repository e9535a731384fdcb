/**
 * What each proposal outcome means, for the API reference and anyone reading a story. The
 * outcome answers "what do we know about the action's result?": nothing ran, it ran and
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
} as const;

/** What is known about a proposal's result, derived from its records (never stored). */
export type ProposalOutcome = keyof typeof PROPOSAL_OUTCOMES;

/** What each proposal stage means: how far the proposal got on its way to execution. */
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
    "The identity the decision authorized attempted an execution and was refused (see `refusals`): it may have run the tool without a claim, or a precondition stopped its authorize. Nothing was recorded as executed; it may still run it while the decision allows. Another identity's refused attempt is recorded under that identity and never shows here.",
  executed: 'An observation is recorded: the tool was called. `outcome` says what is known about its result.',
} as const;

/** Where a proposal is on its way to execution; `outcome` says what is known about the result. */
export type ProposalStage = keyof typeof PROPOSAL_STAGES;

/** The keys of a meanings table, as the tuple `z.enum` takes. */
export const keysOf = <K extends string>(meanings: Record<K, string>) => Object.keys(meanings) as [K, ...K[]];

const valueList = (meanings: Record<string, string>) =>
  Object.entries(meanings)
    .map(([value, meaning]) => `- \`${value}\`: ${meaning}`)
    .join('\n');

/** The meaning of every `outcome` value, as a list for a description. */
export const OUTCOME_VALUES_TEXT = valueList(PROPOSAL_OUTCOMES);
/** The meaning of every `stage` value, as a list for a description. */
export const STAGE_VALUES_TEXT = valueList(PROPOSAL_STAGES);
