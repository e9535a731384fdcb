import { LedgerError, type ObservationRecord, type ProposalRecord } from '@vouch/ledger';
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
import { loadVerifierConfig } from '@vouch/verifiers';
import type { Principal } from './auth/principal';
import type { Logger } from './logger';

/** The verifiers this server runs, validated at startup, and what it lends them. */
export interface VerificationHost {
  registry: VerifierRegistry;
  grants?: Grants;
  logger?: VerifierLogger;
  /** Where the registry came from, for the startup log. */
  file?: string;
  /** Close what the configuration opened (database pools of `sql` connections). */
  close?(): Promise<void>;
}

/**
 * Load the verifier configuration (`vouch.config.json` or `.ts`) with `@vouch/verifiers`:
 * every verifier and its options are validated now, so a mistake stops the server at startup
 * with the file and field, instead of turning every later check inconclusive.
 */
export async function loadVerificationHost(file: string, logger: Logger): Promise<VerificationHost> {
  const loaded = await loadVerifierConfig(file);
  return {
    registry: loaded.registry,
    file: loaded.file,
    logger: { debug: () => {}, info: logger.info, warn: logger.warn, error: logger.error },
    close: loaded.close,
  };
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
    /** The named systems the tool's registration says it writes to. */
    writes?: readonly string[];
    signal?: AbortSignal;
  },
): Promise<VerificationOutcome> {
  return runVerifiers({
    registry: host.registry,
    phase: options.phase,
    proposal: asVerifierProposal(options.proposal),
    observation: options.observation ? asVerifierObservation(options.observation) : null,
    ...(host.grants ? { grants: host.grants } : {}),
    ...(options.writes ? { writes: options.writes } : {}),
    ...(host.logger ? { logger: host.logger } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/**
 * Throw 403 `SUPERSESSION_FORBIDDEN` unless the key may replace a verification result: it
 * must be a verifier's, and not also a gateway's. The gateway is the audited party: it may
 * ask for verification, never overwrite what a reviewer reads about its own actions. (The
 * ledger refuses the identities that executed or proposed, whatever their roles.)
 */
export function assertMaySupersede(principal: Principal): void {
  if (principal.roles.includes('verifier') && !principal.roles.includes('gateway')) return;
  throw new LedgerError(
    'SUPERSESSION_FORBIDDEN',
    'only a verifier key that is not a gateway key may supersede a verification',
    { details: { held: principal.roles } },
  );
}
