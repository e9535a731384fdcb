import type { ApprovalView, ProposalRecord } from './api-types';

/**
 * What an approval means for executing one proposal now. Only `approved` lets `invoke` run.
 * The mismatch states are refusals the server would also give, caught before the tool runs
 * because the server can only refuse the *record* of an execution, not the execution.
 */
export type ApprovalState =
  | 'approved'
  | 'pending'
  | 'denied'
  | 'expired'
  | 'consumed'
  | 'payload_mismatch'
  | 'scope_mismatch';

/**
 * Decide whether `view` authorizes `proposal` at `now`: the same payload hash, the same
 * requester + server + tool, approved, not expired, and (for a single-use approval) not yet
 * used by another proposal. Mirrors the ledger's `checkApproval`, so the client refuses to
 * invoke exactly where the server would refuse to record.
 */
export function approvalStateOf(view: ApprovalView, proposal: ProposalRecord, now: Date): ApprovalState {
  const { request, resolution, uses } = view;
  if (
    request.requester !== proposal.requester ||
    request.server_id !== proposal.server_id ||
    request.tool_name !== proposal.tool_name
  ) {
    return 'scope_mismatch';
  }
  // Bound to the exact payload the approver saw: approving one amount never covers another.
  if (request.payload_hash !== proposal.payload_hash) return 'payload_mismatch';
  const at = now.getTime();
  if (resolution === null) return at >= Date.parse(request.expires_at) ? 'expired' : 'pending';
  if (resolution.resolution === 'denied') return 'denied';
  if (uses.some((use) => use.proposal_id === proposal.id)) return 'approved';
  if (resolution.valid_until !== null && at >= Date.parse(resolution.valid_until)) return 'expired';
  if (resolution.validity === 'once' && uses.length > 0) return 'consumed';
  return 'approved';
}
