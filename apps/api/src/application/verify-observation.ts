import type {
  ObservationRecord,
  RecordContext,
  RecordedVerification,
  Records,
  ToolRecord,
} from '@vouch/ledger';
import type { Metrics } from '../metrics/metrics';
import { runPhase, type VerificationHost } from '../verification';
import { unsigned } from './unsigned-context';

// The verification use cases, written once: the routes (`POST /v1/observations/{id}/verify`,
// `POST /v1/observations?verify=true`) and the background queue call these, and only check
// their input and shape their answers around them.

/** What verifying needs: the records, the server's verifiers, and (optionally) where it is counted. */
export interface VerificationServices {
  records: Records;
  host: VerificationHost;
  metrics?: Pick<Metrics, 'countVerification'>;
}

/** One verification to run: of which observation, recorded by whom, with which re-verification body. */
export interface VerifyObservationRequest {
  /** The log and the identity the verification is recorded as. */
  ctx: RecordContext;
  observation: ObservationRecord;
  /** A re-verification's `supersedes` and `reason`, or `{}`. */
  body: Record<string, unknown>;
  signal?: AbortSignal;
  /**
   * Called once the verifiers have run, before anything is recorded: a throw records nothing
   * (the queue's job was cancelled or its lease lost while the sources were read).
   */
  beforeRecording?: () => void;
}

/**
 * Run the server's verifiers on an observation and record their checks as a verification by
 * `ctx.caller`. The verifiers get the systems the tool writes to from the registration the
 * decision read (`decision.tool_id`), not from whatever was registered since: what the
 * action was allowed under is what its checks are judged against.
 *
 * @example
 * const recorded = await verifyObservation({ records, host }, { ctx, observation, body: {} });
 * recorded.verification_status.status; // 'passed' | 'failed' | 'inconclusive'
 */
export async function verifyObservation(
  services: VerificationServices,
  request: VerifyObservationRequest,
): Promise<RecordedVerification> {
  const { records, host } = services;
  const { ctx, observation } = request;
  const [proposal, tool] = await Promise.all([
    records.getProposal(ctx.log, observation.proposal_id),
    decidedTool(records, ctx.log, observation.proposal_id),
  ]);
  const outcome = await runPhase(host, {
    phase: 'post',
    proposal,
    observation,
    writes: tool?.writes ?? [],
    ...(request.signal ? { signal: request.signal } : {}),
  });
  request.beforeRecording?.();
  const recorded = await records.recordVerification(
    ctx,
    { ...request.body, observation_id: observation.id, checks: outcome.checks },
    { checksRunByServer: true, runRequest: { ...request.body, observation_id: observation.id } },
  );
  services.metrics?.countVerification(recorded.verification.status);
  return recorded;
}

/** What `observeAndVerify` did: the observation, and the verification or why it was refused. */
export interface ObservedAndVerified {
  observation: ObservationRecord;
  replayed: boolean;
  /** Null when not asked for, when the observation was replayed, or when it was refused. */
  verification: RecordedVerification | null;
  /** The error that stopped the verification after the observation was recorded; null otherwise. */
  verificationError: unknown;
}

/**
 * Record an observation and, when `verify` is set and it is new, verify it as the same caller.
 * Two ledger batches on purpose: the verifiers read the world after the observation is
 * committed, only for an observation that was recorded (not a refusal, not a replay), and
 * outside any batch, since holding the log's batch open while sources are read (seconds, with
 * measurement policies) would stall every writer of the log. A refused verification does not
 * undo the observation: it is returned beside it.
 */
export async function observeAndVerify(
  services: VerificationServices,
  request: { ctx: RecordContext; body: Record<string, unknown>; verify: boolean; signal?: AbortSignal },
): Promise<ObservedAndVerified> {
  const { observation, replayed } = await services.records.observe(request.ctx, request.body);
  // A replayed observation may have been verified before: the caller reads its story.
  if (!request.verify || replayed) {
    return { observation, replayed, verification: null, verificationError: null };
  }
  try {
    const verification = await verifyObservation(services, {
      ctx: unsigned(request.ctx),
      observation,
      body: {},
      ...(request.signal ? { signal: request.signal } : {}),
    });
    return { observation, replayed, verification, verificationError: null };
  } catch (error) {
    return { observation, replayed, verification: null, verificationError: error };
  }
}

/** The registration the proposal's decision read, or null when it read none. */
async function decidedTool(records: Records, log: string, proposalId: string): Promise<ToolRecord | null> {
  const decision = await records.getDecision(log, proposalId);
  return decision.tool_id === null ? null : records.getTool(log, decision.tool_id);
}
