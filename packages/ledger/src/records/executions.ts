import { observationClaims, sameIdentity } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import { LedgerError, type LedgerErrorCode } from '../errors';
import { addSeconds, checkApproval, isPast } from '../policy/approval-validity';
import { SWEEP_ACTION, sweepClaims } from '../signatures/gateway-signatures';
import { approverKeysAt } from './approvals';
import { builtInDecisionBreak, isBuiltInDecision } from './built-in-decisions';
import { authorizeInputSchema, observationInputSchema, parseInput } from './inputs';
import { isObservationReplay } from './observation-replay';
import { preconditionBlock, preconditionJson, preconditionResultOf, unprovenModeOf } from './preconditions';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId, type RecordTransaction } from './record-transaction';
import { mustGetProposal, notFound, type RecordsRuntime } from './records-runtime';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  Caller,
  DecisionRecord,
  ExecutionClaimRecord,
  JsonObject,
  JsonValue,
  ObservationRecord,
  ProposalRecord,
  VerificationCheck,
} from './types';

/** What `authorize` returns: the decision, the use it claimed when approval-gated, and the execution claim. */
export interface Authorization {
  proposal: ProposalRecord;
  decision: DecisionRecord;
  approval_use: ApprovalUseRecord | null;
  claim: ExecutionClaimRecord;
}

/** An approval that authorizes this execution and that it has not used yet: `authorize` uses it. */
interface UnusedApproval {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord;
}

type Check =
  | {
      ok: true;
      proposal: ProposalRecord;
      decision: DecisionRecord;
      use: ApprovalUseRecord | null;
      /** Set when the execution needs an approval use not yet recorded; `use` is then null. */
      unused: UnusedApproval | null;
    }
  | { ok: false; code: LedgerErrorCode; message: string };

/** What the server passes `authorize` beside the body: never taken from the caller. */
export interface AuthorizeOptions {
  /**
   * The precondition checks the server's own verifiers ran (phase `pre`) for this proposal.
   * Absent for a proposal with preconditions: nothing proved them, so they are unproven.
   */
  preconditionChecks?: readonly VerificationCheck[];
}

/** What an execution claims it ran under: checked against the decision and the approval. */
interface ExecutionClaim {
  approval_request_id?: string | undefined;
  payload_hash?: string | undefined;
}

/** One observation by id; NOT_FOUND when the log has none with that id. */
export async function getObservation(
  runtime: RecordsRuntime,
  log: string,
  observationId: string,
): Promise<ObservationRecord> {
  const observation = await runtime.reads(log).observationById(observationId);
  if (!observation) throw notFound('observation', observationId);
  return observation;
}

/**
 * Before executing: check the decision, the approval and the preconditions, claim the
 * approval use, so a second executor is refused up front, and record the execution claim
 * (who executes, until when an observation is expected, and the precondition checks the
 * server ran). A precondition that failed, or that no check proved where the tool's
 * registration blocks unproven ones, refuses: the attempt is recorded with its checks as a
 * refused execution and no approval is used. Authorizing again before the deadline answers
 * the same claim; after it, the outcome is unknown and the proposal never runs again
 * (`EXECUTION_CLAIM_LAPSED`).
 */
export async function authorize(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
  options: AuthorizeOptions = {},
): Promise<Authorization> {
  const input = parseInput(authorizeInputSchema, body, {
    what: 'authorization',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const signature = await runtime.authorSignature(ctx, 'execution.authorize', body);
  const checked = await runtime.run(ctx, recordKeys.execute(input.proposal_id), async (tx) => {
    const now = tx.time();
    const proposal = await mustGetProposal(tx.reads, input.proposal_id);
    tx.reads.requireProposalPayload(proposal);
    const [observed, claimed] = await Promise.all([
      tx.reads.observationOf(proposal.id),
      tx.reads.claimOf(proposal.id),
    ]);
    // An execution is recorded once; `unknown` included: it is never retried automatically.
    if (observed && isClaimSweep(observed)) throw claimLapsed(proposal.id, observed.id);
    if (observed) {
      throw new LedgerError('OBSERVATION_EXISTS', `proposal ${proposal.id} has already been executed`, {
        details: { observation_id: observed.id, outcome: observed.outcome },
      });
    }
    // Past its deadline the call may have run: its outcome is unknown, not a reason to run it again.
    if (claimed && isPast(claimed.deadline, now)) throw claimLapsed(proposal.id, null);
    // Whoever decided or approved after an erasure saw the arguments without the erased keys,
    // while the payload hash binds the full ones: an erased proposal never runs.
    if (!claimed && proposal.redacted) {
      return {
        kind: 'not_authorized' as const,
        code: 'EXECUTION_NOT_AUTHORIZED' as const,
        message: `arguments of proposal ${proposal.id} were erased (${proposal.redacted.arguments.join(', ')}); an erased proposal is not executed: propose again`,
        details: {},
      };
    }
    const check = await checkExecution(tx, ctx.caller, proposal, input, now);
    if (!check.ok) return { kind: 'not_authorized' as const, ...check, details: {} };
    // Authorizing again answers the claim already recorded, with the checks it recorded.
    if (claimed) return { kind: 'claimed' as const, ...check, claim: claimed };
    if (check.unused) {
      const revoked = await approverKeyRevoked(tx, check.unused.resolution, now);
      if (revoked) return { kind: 'not_authorized' as const, ...revoked };
    }
    const preconditions = preconditionResultOf(proposal, options.preconditionChecks);
    const tool = await tx.reads.latestTool(proposal.server_id, proposal.tool_name);
    const blocked = preconditionBlock(proposal.id, preconditions, unprovenModeOf(tool));
    if (blocked && preconditions) {
      // The blocked attempt is evidence too (the checks that stopped it): kept, then refused.
      const refusal = tx.write('execution_refused', ctx.caller.identity, {
        id: newId('ref'),
        proposal_id: proposal.id,
        code: blocked.code,
        message: blocked.message,
        attempted_by: ctx.caller.identity,
        attempted: { authorize: body as JsonValue, preconditions: preconditionJson(preconditions) },
        refused_at: now,
      });
      return {
        kind: 'not_authorized' as const,
        ...blocked,
        details: { refusal_id: refusal.id, ...preconditionJson(preconditions) },
      };
    }
    const use = check.use ?? (check.unused ? useApproval(tx, ctx.caller, proposal, check.unused, now) : null);
    const seconds = Math.min(
      input.claim_seconds ?? runtime.settings.executionClaimSeconds,
      runtime.settings.executionClaimSeconds,
    );
    const claim = tx.write('execution_claim', ctx.caller.identity, {
      id: newId('clm'),
      proposal_id: proposal.id,
      decision_id: check.decision.id,
      approval_use_id: use?.id ?? null,
      claimed_by: ctx.caller.identity,
      claimed_at: now,
      deadline: addSeconds(now, seconds),
      ...(preconditions ? { preconditions } : {}),
      ...(signature ? { signature } : {}),
    });
    return { kind: 'claimed' as const, ...check, use, claim };
  });
  if (checked.kind === 'not_authorized') {
    throw new LedgerError(checked.code, checked.message, {
      details: { proposal_id: input.proposal_id, ...checked.details },
    });
  }
  return {
    proposal: checked.proposal,
    decision: checked.decision,
    approval_use: checked.use,
    claim: checked.claim,
  };
}

/**
 * An approval answered while a key of its approver was live that was revoked before this
 * use no longer authorizes (`APPROVER_KEY_REVOKED`): a key is revoked because it may be in
 * other hands, and the answer does not say which of the approver's keys gave it. The
 * proposal needs a new approval.
 */
async function approverKeyRevoked(
  tx: RecordTransaction,
  resolution: ApprovalResolutionRecord,
  now: string,
): Promise<{ code: LedgerErrorCode; message: string; details: JsonObject } | null> {
  const revoked = await tx.reads.revokedApproverKeys(approverKeysAt(resolution, now));
  const first = revoked[0];
  if (first === undefined) return null;
  return {
    code: 'APPROVER_KEY_REVOKED',
    message: `approval ${resolution.id} was given by ${resolution.resolver} while key ${first.keyId} was live, and that key was revoked at ${first.revokedAt}: the approval no longer authorizes; ask for a new one`,
    details: { resolution_id: resolution.id, key_id: first.keyId, revoked_at: first.revokedAt },
  };
}

/** Record the use of an approval by this execution (see {@link checkExecution}). */
function useApproval(
  tx: RecordTransaction,
  caller: Caller,
  proposal: ProposalRecord,
  { request, resolution }: UnusedApproval,
  now: string,
): ApprovalUseRecord {
  // Two executions of one single-use approval may share a wave (their proposals differ):
  // the first to claim it takes it, the other runs again after and finds it consumed.
  if ((resolution.validity ?? 'once') === 'once') tx.claim(recordKeys.approvalUse(request.id));
  return tx.write('approval_use', caller.identity, {
    id: newId('use'),
    request_id: request.id,
    resolution_id: resolution.id,
    proposal_id: proposal.id,
    validity: resolution.validity ?? 'once',
    used_by: caller.identity,
    used_at: now,
  });
}

/** Is this the server's `unknown` observation of a lapsed claim (see {@link sweepLapsedClaims})? */
export const isClaimSweep = (observation: ObservationRecord): boolean =>
  sameIdentity(observation.executed_by, CLAIM_SWEEPER_IDENTITY);

function claimLapsed(proposalId: string, observationId: string | null): LedgerError {
  return new LedgerError(
    'EXECUTION_CLAIM_LAPSED',
    `the execution claim of proposal ${proposalId} lapsed with no observation: its outcome is unknown and it is never run again`,
    { details: { proposal_id: proposalId, ...(observationId ? { observation_id: observationId } : {}) } },
  );
}

/**
 * Record an `unknown` observation, by {@link CLAIM_SWEEPER_IDENTITY}, for every execution
 * claim past its deadline with no observation (at most `limit` per run, oldest first): the
 * gateway stopped before it said what happened, so nobody knows, and the proposal is never
 * run again. Each is re-read under its log's lock, so sweeps running at once in several
 * server processes record one observation per claim. Returns the observations written.
 */
export async function sweepLapsedClaims(
  runtime: RecordsRuntime,
  options: { log?: string; limit?: number } = {},
): Promise<ObservationRecord[]> {
  const lapsed = await runtime.lapsedClaims({
    now: runtime.wallNow(),
    limit: options.limit ?? 500,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const sign = await runtime.serverSigner(CLAIM_SWEEPER_IDENTITY);
  const swept = await Promise.all(
    lapsed.map(({ log, proposalId }) =>
      runtime.run({ log }, recordKeys.execute(proposalId), async (tx) => {
        const now = tx.time();
        const [proposal, claim, observed] = await Promise.all([
          tx.reads.proposalById(proposalId),
          tx.reads.claimOf(proposalId),
          tx.reads.observationOf(proposalId),
        ]);
        if (!proposal || !claim || observed || !isPast(claim.deadline, now)) return null;
        const signature = sign?.({
          log,
          action: SWEEP_ACTION,
          actor: CLAIM_SWEEPER_IDENTITY,
          claims: sweepClaims({ proposal_id: proposal.id, started_at: claim.claimed_at }),
        });
        return tx.write('observation', CLAIM_SWEEPER_IDENTITY, {
          id: newId('obs'),
          proposal_id: proposal.id,
          decision_id: claim.decision_id,
          approval_use_id: claim.approval_use_id,
          server_id: proposal.server_id,
          tool_name: proposal.tool_name,
          executed_by: CLAIM_SWEEPER_IDENTITY,
          outcome: 'unknown',
          result: {
            reason: 'EXECUTION_CLAIM_LAPSED',
            claim_id: claim.id,
            claimed_by: claim.claimed_by,
            deadline: claim.deadline,
            message: `${claim.claimed_by} claimed this execution and posted no observation before ${claim.deadline}: the tool may or may not have acted. It is never run again.`,
          },
          transport_status: null,
          tool_error: null,
          started_at: claim.claimed_at,
          finished_at: null,
          observed_at: now,
          ...(signature ? { signature } : {}),
        });
      }),
    ),
  );
  return swept.filter((o): o is ObservationRecord => o !== null);
}

/** Record what the tool returned; refused executions are appended as evidence and thrown. */
export async function observe(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<{ observation: ObservationRecord; replayed: boolean }> {
  const input = parseInput(observationInputSchema, body, {
    what: 'observation',
    maxBytes: runtime.settings.maxInputBytes,
  });
  // Over the body with `result` hashed: the envelope is kept whole, never erased.
  const signature = await runtime.authorSignature(
    ctx,
    'execution.observe',
    observationClaims(body as Record<string, unknown>),
  );
  const outcome = await runtime.run(ctx, recordKeys.execute(input.proposal_id), async (tx) => {
    const now = tx.time();
    const proposal = await mustGetProposal(tx.reads, input.proposal_id);
    // The attempt is evidence (a gateway that executed anyway, a stolen key, a second
    // account of what happened): keep it, then refuse. Returning instead of throwing
    // lets this refusal commit.
    const refuse = (code: LedgerErrorCode, message: string, details: Record<string, string> = {}) => {
      const refusal = tx.write('execution_refused', ctx.caller.identity, {
        id: newId('ref'),
        proposal_id: proposal.id,
        code,
        message,
        attempted_by: ctx.caller.identity,
        attempted: body as JsonValue,
        refused_at: now,
      });
      return {
        kind: 'refused' as const,
        code,
        message,
        details: { ...details, refusal_id: refusal.id },
      };
    };
    const first = await tx.reads.observationOf(proposal.id);
    if (first && isClaimSweep(first)) {
      // The server already recorded that nobody knows what happened: a late account does
      // not replace that record, and is kept as evidence beside it.
      return refuse(
        'EXECUTION_CLAIM_LAPSED',
        `the execution claim of proposal ${proposal.id} lapsed and was recorded as unknown (${first.id}); a later observation is refused`,
        { observation_id: first.id },
      );
    }
    if (first) {
      const replay = { recorded: first, proposal, caller: ctx.caller, attempt: input };
      if (await isObservationReplay(tx.reads, replay)) {
        return { kind: 'observed' as const, replayed: true, observation: first };
      }
      // One execution, one account of it: a different one is refused, never swallowed.
      return refuse(
        'OBSERVATION_CONFLICT',
        `proposal ${proposal.id} already has observation ${first.id} (${first.outcome}, by ${first.executed_by}); another account of it is refused`,
        { observation_id: first.id },
      );
    }
    const checked = await checkExecution(tx, ctx.caller, proposal, input, now);
    if (!checked.ok) return refuse(checked.code, checked.message);
    // Every execution is claimed: `authorize` checked the approval, ran the preconditions and
    // used the approval; an observation without its claim skipped all three.
    const claim = await tx.reads.claimOf(proposal.id);
    if (!claim || checked.unused) {
      return refuse(
        'EXECUTION_NOT_CLAIMED',
        `proposal ${proposal.id} has no execution claim: authorize it (POST /v1/proposals/${proposal.id}/authorize) before executing`,
      );
    }
    if (!sameIdentity(claim.claimed_by, ctx.caller.identity)) {
      return refuse(
        'IDENTITY_MISMATCH',
        `proposal ${proposal.id} was claimed by ${claim.claimed_by}, not ${ctx.caller.identity}`,
      );
    }
    const observation = tx.write('observation', ctx.caller.identity, {
      id: newId('obs'),
      proposal_id: proposal.id,
      decision_id: checked.decision.id,
      approval_use_id: checked.use?.id ?? null,
      server_id: proposal.server_id,
      tool_name: proposal.tool_name,
      executed_by: ctx.caller.identity,
      outcome: input.outcome,
      result: input.result,
      transport_status: input.transport_status,
      tool_error: input.tool_error,
      started_at: input.started_at,
      finished_at: input.finished_at,
      observed_at: now,
      ...(input.result_source === undefined ? {} : { result_source: input.result_source }),
      ...(signature ? { signature } : {}),
    });
    return { kind: 'observed' as const, replayed: false, observation };
  });
  if (outcome.kind === 'refused') {
    throw new LedgerError(outcome.code, outcome.message, {
      details: { proposal_id: input.proposal_id, ...outcome.details },
    });
  }
  return { observation: outcome.observation, replayed: outcome.replayed };
}

/**
 * May `caller` execute `proposal` now? Writes nothing: an approval this execution has not
 * used yet comes back as `unused`, for `authorize` to use once nothing else refuses.
 */
async function checkExecution(
  tx: RecordTransaction,
  caller: Caller,
  proposal: ProposalRecord,
  claim: ExecutionClaim,
  now: string,
): Promise<Check> {
  const refuse = (code: LedgerErrorCode, message: string): Check => ({ ok: false, code, message });
  const decision = await tx.reads.decisionOf(proposal.id);
  if (!decision) return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} has not been decided`);
  if (decision.verdict === 'deny' || decision.verdict === 'repair') {
    return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} was decided ${decision.verdict}`);
  }
  if (decision.authorized_identity === null || !sameIdentity(decision.authorized_identity, caller.identity)) {
    return refuse(
      'IDENTITY_MISMATCH',
      `${caller.identity} is not the identity the decision authorized (${decision.authorized_identity})`,
    );
  }
  // Nor a decision from another source than the policy the log pinned then (policy-pins.ts).
  const unpinned = await tx.reads.unpinnedDecision(decision);
  if (unpinned !== null) return refuse('DECISION_SOURCE_NOT_PINNED', unpinned);
  // Nor a decision, in an enrolled engine's name, that it did not sign (signatures/).
  const unsignedDecision = await tx.reads.unsignedRecord('decision', decision);
  if (unsignedDecision !== null) return refuse('RECORD_SIGNATURE_INVALID', unsignedDecision);
  // The runtime role can append a built-in decision the policy never gave (an allow where it
  // asks a human): re-derive it, with the tool in force then, before acting on it.
  if (isBuiltInDecision(decision)) {
    const tool = await tx.reads.toolAtDecision(proposal.server_id, proposal.tool_name, decision.id);
    // Nor one re-derived from a registration in an enrolled registrar's name it did not sign.
    const unsignedTool = tool && (await tx.reads.unsignedRecord('tool', tool));
    if (unsignedTool) return refuse('RECORD_SIGNATURE_INVALID', unsignedTool);
    const broken = builtInDecisionBreak(proposal, decision, tool);
    if (broken !== null) {
      const message = `decision ${decision.id} in log ${tx.log} ${broken}: the server never wrote it and refuses to act on it; run \`vouch verify\``;
      tx.reads.raiseRuleViolation('decisions', message);
      return refuse('DECISION_NOT_DERIVED', message);
    }
  }
  if (decision.verdict === 'allow') {
    if (claim.payload_hash !== undefined && claim.payload_hash !== proposal.payload_hash) {
      return refuse(
        'EXECUTION_NOT_AUTHORIZED',
        `the executed payload is not the one proposal ${proposal.id} holds`,
      );
    }
    return { ok: true, proposal, decision, use: null, unused: null };
  }
  const requestId = claim.approval_request_id ?? decision.approval_request_id;
  const request = requestId ? await tx.reads.requestById(requestId) : null;
  if (!request) return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} has no approval request`);
  if (claim.payload_hash !== undefined && claim.payload_hash !== request.payload_hash) {
    return refuse(
      'APPROVAL_PAYLOAD_MISMATCH',
      `the executed payload is not the one approval ${request.id} was shown`,
    );
  }
  const [resolution, uses] = await Promise.all([
    tx.reads.resolutionOf(request.id),
    tx.reads.usesOf(request.id),
  ]);
  const unsignedAnswer = resolution && (await tx.reads.unsignedRecord('approval_resolution', resolution));
  if (unsignedAnswer) return refuse('RECORD_SIGNATURE_INVALID', unsignedAnswer);
  const verdict = checkApproval({ request, resolution, uses, proposal, now });
  if (!verdict.ok) {
    if (verdict.code === 'APPROVAL_BOUNDS_VIOLATED' || verdict.code === 'SELF_APPROVAL')
      tx.reads.raiseRuleViolation('approval_resolutions', verdict.message);
    return refuse(verdict.code, verdict.message);
  }
  if (verdict.existingUse) return { ok: true, proposal, decision, use: verdict.existingUse, unused: null };
  return { ok: true, proposal, decision, use: null, unused: { request, resolution: verdict.resolution } };
}
