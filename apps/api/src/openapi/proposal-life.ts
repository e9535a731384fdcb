/**
 * The life of a proposal as a Mermaid state diagram: the outer states are its `outcome`, the
 * states inside `not_executed` its `stage` before execution. `docs/records.md` shows the same
 * diagram (a test keeps the two equal).
 */
export const PROPOSAL_LIFE_DIAGRAM = `stateDiagram-v2
    state not_executed {
        [*] --> awaiting_decision: proposed (external policy)
        [*] --> authorized: allow
        [*] --> awaiting_approval: require_approval
        [*] --> denied: deny
        [*] --> repair_proposed: repair
        awaiting_decision --> authorized: allow
        awaiting_decision --> awaiting_approval: require_approval
        awaiting_decision --> denied: deny
        awaiting_decision --> repair_proposed: repair
        awaiting_approval --> authorized: approved
        awaiting_approval --> approval_denied: denied
        awaiting_approval --> approval_expired: unanswered in time
        awaiting_approval --> approval_used: another proposal used it
        authorized --> approval_expired: window closed before the call
        authorized --> execution_refused: attempt refused
        denied --> execution_refused: attempt refused, from any stage
    }
    not_executed --> awaiting_verification: stage executed, tool succeeded or failed
    not_executed --> awaiting_resolution: stage executed, outcome unknown
    awaiting_verification --> verified: passed
    awaiting_verification --> verification_failed: failed
    awaiting_verification --> unverified: inconclusive
    awaiting_resolution --> verified: passed
    awaiting_resolution --> verification_failed: failed
    unverified --> verified: passed
    unverified --> verification_failed: failed
    verified --> verification_failed: superseded by a verifier
    verification_failed --> verified: superseded by a verifier`;

// The meaning of every `outcome` and `stage` value, as lists for a description, are the records'.
export { OUTCOME_VALUES_TEXT, STAGE_VALUES_TEXT } from '@vouch/records';
