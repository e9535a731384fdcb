import type { ObservationRecord, ProposalRecord } from '@vouch/ledger';
import {
  createVerifierRegistry,
  type Grants,
  type Observation,
  type Proposal,
  runVerifiers,
  type VerificationOutcome,
  type Logger as VerifierLogger,
  type VerifierPhase,
  type VerifierRegistry,
} from '@vouch/verifier-sdk';

/** The verifiers this server runs, validated at startup, and what it lends them. */
export interface VerificationHost {
  registry: VerifierRegistry;
  grants?: Grants;
  logger?: VerifierLogger;
}

/** A host with no verifiers: every condition is checked as `NO_VERIFIER`, i.e. inconclusive. */
export function emptyVerificationHost(): VerificationHost {
  return { registry: createVerifierRegistry([]) };
}

// The verifier SDK reads the records as plain JSON in the ledger's own shape; only target
// id and env, which the ledger allows to be null (the policy denies such targets), differ.
function asVerifierProposal(proposal: ProposalRecord): Proposal {
  return proposal as unknown as Proposal;
}

function asVerifierObservation(observation: ObservationRecord): Observation {
  return observation as unknown as Observation;
}

/**
 * Run the host's verifiers for one phase: `pre` answers the proposal's preconditions before
 * execution, `post` its postconditions against the observation. The status is derived by the
 * SDK (and derived again by the ledger when the checks are recorded), never taken from a caller.
 */
export function runPhase(
  host: VerificationHost,
  options: {
    phase: VerifierPhase;
    proposal: ProposalRecord;
    observation?: ObservationRecord;
    signal?: AbortSignal;
  },
): Promise<VerificationOutcome> {
  return runVerifiers({
    registry: host.registry,
    phase: options.phase,
    proposal: asVerifierProposal(options.proposal),
    observation: options.observation ? asVerifierObservation(options.observation) : null,
    ...(host.grants ? { grants: host.grants } : {}),
    ...(host.logger ? { logger: host.logger } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
