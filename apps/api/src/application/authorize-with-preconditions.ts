import type { ProposalRecord, RecordContext, Records, VerificationCheck } from '@vouch/ledger';
import type { Authorization } from '@vouch/records';
import { runPhase, type VerificationHost } from '../verification';

/**
 * Authorize one execution: run the proposal's preconditions with this server's verifiers
 * (phase `pre`), then let the ledger check the decision and approval, derive the status of
 * the checks, refuse when a precondition does not hold (or is unproven where the tool's
 * registration blocks), and record the execution claim with the checks in it. The checks
 * are the server's own: nothing the gateway sends is counted as one. A proposal with no
 * preconditions runs nothing. Used by `POST /v1/proposals/{id}/authorize` and the fast path
 * `POST /v1/proposals?authorize=`.
 */
export async function authorizeWithPreconditions(input: {
  records: Records;
  verification: VerificationHost;
  ctx: RecordContext;
  proposal: ProposalRecord;
  /** The body as posted (`payload_hash`, `approval_request_id`, `claim_seconds`). */
  body: Record<string, unknown>;
  signal?: AbortSignal;
}): Promise<Authorization> {
  const { records, proposal } = input;
  const checks =
    proposal.preconditions.length === 0
      ? undefined
      : (
          await runPhase(input.verification, {
            phase: 'pre',
            proposal,
            ...(input.signal ? { signal: input.signal } : {}),
          })
        ).checks;
  const authorization = await records.authorize(
    input.ctx,
    { ...input.body, proposal_id: proposal.id },
    // The host's checks are plain JSON records (`hostCheckSchema`): what the claim stores.
    checks === undefined ? {} : { preconditionChecks: checks as unknown as VerificationCheck[] },
  );
  const recorded = authorization.claim.preconditions ?? null;
  return { ...authorization, preconditions: recorded as Authorization['preconditions'] };
}
