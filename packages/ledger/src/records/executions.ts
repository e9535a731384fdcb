import { sameIdentity } from '@vouch/audit';
import { LedgerError, type LedgerErrorCode } from '../errors';
import { checkApproval } from '../policy/approval-validity';
import { authorizeInputSchema, observationInputSchema, parseInput } from './inputs';
import { isObservationReplay } from './observation-replay';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId, type RecordTransaction } from './record-transaction';
import { mustGetProposal, notFound, type RecordsRuntime } from './records-runtime';
import type {
  ApprovalUseRecord,
  Caller,
  DecisionRecord,
  JsonValue,
  ObservationRecord,
  ProposalRecord,
} from './types';

/** What `authorize` returns: the decision and, when approval-gated, the use it claimed. */
export interface Authorization {
  proposal: ProposalRecord;
  decision: DecisionRecord;
  approval_use: ApprovalUseRecord | null;
}

type Check =
  | { ok: true; proposal: ProposalRecord; decision: DecisionRecord; use: ApprovalUseRecord | null }
  | { ok: false; code: LedgerErrorCode; message: string };

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

/** Before executing: check the decision and claim the approval use, so a second executor is refused up front. */
export async function authorize(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<Authorization> {
  const input = parseInput(authorizeInputSchema, body, {
    what: 'authorization',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const checked = await runtime.run(ctx.log, recordKeys.execute(input.proposal_id), async (tx) => {
    const proposal = await mustGetProposal(tx.reads, input.proposal_id);
    const observed = await tx.reads.observationOf(proposal.id);
    // An execution is recorded once; `unknown` included: it is never retried automatically.
    if (observed) {
      throw new LedgerError('OBSERVATION_EXISTS', `proposal ${proposal.id} has already been executed`, {
        details: { observation_id: observed.id, outcome: observed.outcome },
      });
    }
    return checkExecution(tx, ctx.caller, proposal, input, tx.time());
  });
  if (!checked.ok)
    throw new LedgerError(checked.code, checked.message, { details: { proposal_id: input.proposal_id } });
  return { proposal: checked.proposal, decision: checked.decision, approval_use: checked.use };
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
  const outcome = await runtime.run(ctx.log, recordKeys.execute(input.proposal_id), async (tx) => {
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
 * May `caller` execute `proposal` now? Claims the approval use when one is needed (inside
 * the caller's transaction, so the claim and the observation commit together).
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
  if (decision.verdict === 'allow') {
    if (claim.payload_hash !== undefined && claim.payload_hash !== proposal.payload_hash) {
      return refuse(
        'EXECUTION_NOT_AUTHORIZED',
        `the executed payload is not the one proposal ${proposal.id} holds`,
      );
    }
    return { ok: true, proposal, decision, use: null };
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
  const verdict = checkApproval({ request, resolution, uses, proposal, now });
  if (!verdict.ok) return refuse(verdict.code, verdict.message);
  if (verdict.existingUse) return { ok: true, proposal, decision, use: verdict.existingUse };
  // Two executions of one single-use approval may share a wave (their proposals differ):
  // the first to claim it takes it, the other runs again after and finds it consumed.
  if ((verdict.resolution.validity ?? 'once') === 'once') tx.claim(recordKeys.approvalUse(request.id));
  const use = tx.write('approval_use', caller.identity, {
    id: newId('use'),
    request_id: request.id,
    resolution_id: verdict.resolution.id,
    proposal_id: proposal.id,
    validity: verdict.resolution.validity ?? 'once',
    used_by: caller.identity,
    used_at: now,
  });
  return { ok: true, proposal, decision, use };
}
