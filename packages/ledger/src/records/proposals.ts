import { proposalClaims } from '@vouch/audit';
import { LedgerError } from '../errors';
import { evaluatePolicy } from '../policy/built-in-policy';
import { refuseUnsigned } from '../signatures/signed-record-check';
import { requestApproval } from './approvals';
import { BUILT_IN_POLICY } from './built-in-decisions';
import { decisionInputSchema, parseInput, proposalInputSchema } from './inputs';
import { proposalPayloadHash, proposalPayloadOf } from './payload-hash';
import { refuseUnpinnedSource } from './policy-pins';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId } from './record-transaction';
import { mustGetProposal, type RecordsRuntime } from './records-runtime';
import { applyRequiredPostconditions, mergePostconditions } from './required-postconditions';
import type { ApprovalRequestRecord, DecisionRecord, ProposalPayload, ProposalRecord } from './types';

type JsonBody = Record<string, unknown>;

/** What `propose` returns; `replayed` when the idempotency key had already been used with this payload. */
export interface ProposalResult {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  approval: ApprovalRequestRecord | null;
  replayed: boolean;
}

/** Record a proposal (and, with the built-in policy, its decision and approval request). */
export async function propose(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<ProposalResult> {
  const input = parseInput(proposalInputSchema, body, {
    what: 'proposal',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const declared = proposalPayloadOf(input);
  // Over the body with `arguments` hashed: the envelope is kept whole, never erased.
  const signature = await runtime.authorSignature(ctx, 'proposal.propose', proposalClaims(body as JsonBody));
  const caller = ctx.caller;
  const key = input.idempotency_key;
  return runtime.run(ctx, recordKeys.propose(caller.identity, key), async (tx) => {
    const now = tx.time();
    // An idempotency key is its requester's own: another requester's use of it is not this one's.
    const existing = await tx.reads.proposalByKey(caller.identity, key);
    if (existing) {
      // The stored proposal must show the payload its hash names, or its approval is another's.
      tx.reads.requireProposalPayload(existing);
      if (!sameProposal(existing, declared)) {
        throw new LedgerError(
          'IDEMPOTENCY_CONFLICT',
          `idempotency key ${key} was used for another proposal`,
          {
            details: { proposal_id: existing.id },
          },
        );
      }
      const decision = await tx.reads.decisionOf(existing.id);
      const approval = decision?.approval_request_id
        ? await tx.reads.requestById(decision.approval_request_id)
        : null;
      return { proposal: existing, decision, approval, replayed: true };
    }
    // The registration the policy reads, read here in every policy mode: what must be proven is
    // fixed when the proposal is recorded, also when an external engine decides later.
    const tool = await tx.reads.latestTool(declared.server_id, declared.tool_name);
    // A registration in an enrolled registrar's name without its signature decides nothing.
    refuseUnsigned(tool && (await tx.reads.unsignedRecord('tool', tool)), 'tool', tool?.id ?? '');
    const payload = applyRequiredPostconditions(declared, tool);
    const proposal = tx.write('proposal', caller.identity, {
      id: newId('prop'),
      idempotency_key: key,
      requester: caller.identity,
      requester_scopes: [...(caller.scopes ?? [])],
      requester_environments: caller.environments ? [...caller.environments] : null,
      ...payload,
      payload_hash: proposalPayloadHash(payload),
      proposed_at: now,
      ...(signature ? { signature } : {}),
    });
    if (runtime.settings.policy === 'external') {
      return { proposal, decision: null, approval: null, replayed: false };
    }

    const result = evaluatePolicy({
      proposal,
      tool,
      caller: { scopes: proposal.requester_scopes, environments: proposal.requester_environments },
    });
    const approval =
      result.verdict === 'require_approval'
        ? await requestApproval(runtime, tx, caller.identity, proposal, tool, now)
        : null;
    const decision = tx.write('decision', caller.identity, {
      id: newId('dec'),
      proposal_id: proposal.id,
      ...result,
      source: 'built_in',
      tool_id: tool?.id ?? null,
      approval_request_id: approval?.id ?? null,
      decided_by: BUILT_IN_POLICY,
      decided_at: now,
    });
    return { proposal, decision, approval, replayed: false };
  });
}

/**
 * Whether a replay asks for the stored proposal: the payload the agent sent now, with the
 * postconditions the registry required when the key was first used (a registration changed
 * since does not turn a replay into a conflict).
 */
function sameProposal(existing: ProposalRecord, declared: ProposalPayload): boolean {
  const required = existing.postconditions.filter((c) => c.origin === 'registry');
  const payload = { ...declared, postconditions: mergePostconditions(declared.postconditions, required) };
  return proposalPayloadHash(payload) === existing.payload_hash;
}

/** Record an external policy engine's decision; one per proposal (`DECISION_EXISTS`). */
export async function decide(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<{ decision: DecisionRecord; approval: ApprovalRequestRecord | null }> {
  const input = parseInput(decisionInputSchema, body, {
    what: 'decision',
    maxBytes: runtime.settings.maxInputBytes,
  });
  refuseUnpinnedSource(runtime.settings.pinnedPolicy, {
    source: input.source,
    decided_by: ctx.caller.identity,
  });
  const signature = await runtime.authorSignature(ctx, 'decision.record', body);
  return runtime.run(ctx, recordKeys.decide(input.proposal_id), async (tx) => {
    const now = tx.time();
    const proposal = await mustGetProposal(tx.reads, input.proposal_id);
    tx.reads.requireProposalPayload(proposal);
    const existing = await tx.reads.decisionOf(proposal.id);
    if (existing) {
      throw new LedgerError('DECISION_EXISTS', `proposal ${proposal.id} already has a decision`, {
        details: { decision_id: existing.id, source: existing.source },
      });
    }
    const tool = await tx.reads.latestTool(proposal.server_id, proposal.tool_name);
    const executable = input.verdict === 'allow' || input.verdict === 'require_approval';
    // No engine can make an unregistered tool executable: discovery and registration
    // are the only doors into the registry, and a decision is neither.
    if (executable && !tool) {
      throw new LedgerError(
        'TOOL_NOT_REGISTERED',
        `${proposal.server_id}/${proposal.tool_name} is not registered; it cannot be allowed`,
        { details: { server_id: proposal.server_id, tool_name: proposal.tool_name } },
      );
    }
    const approval =
      input.verdict === 'require_approval'
        ? await requestApproval(runtime, tx, ctx.caller.identity, proposal, tool, now)
        : null;
    const decision = tx.write('decision', ctx.caller.identity, {
      id: newId('dec'),
      proposal_id: proposal.id,
      verdict: input.verdict,
      reasons: input.reasons.map(stripUndefined),
      repair: input.repair,
      authorized_identity: executable ? (input.authorized_identity ?? proposal.requester) : null,
      source: input.source,
      tool_id: tool?.id ?? null,
      approval_request_id: approval?.id ?? null,
      decided_by: ctx.caller.identity,
      decided_at: now,
      ...(signature ? { signature } : {}),
    });
    return { decision, approval };
  });
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
