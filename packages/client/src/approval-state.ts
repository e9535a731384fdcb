import { sameIdentity } from '@vouch/audit';
import type { ApprovalView, ProposalRecord } from './api-types';

/**
 * What an approval means for executing one proposal now. Only `approved` lets `invoke` run.
 * The mismatch states are refusals the server would also give at `authorize`, caught here
 * as well so a server that answered wrongly still cannot make this client run a payload
 * nobody approved.
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
 * Decide whether `view` authorizes `proposal`: the same payload hash, the same requester +
 * server + tool, and a status that allows a use. Time (expiry, windows) is the server's
 * call, made on its clock when it derived `status`; the binding to this exact payload and
 * requester is checked here again, because it is what an approval means.
 */
export function approvalStateOf(view: ApprovalView, proposal: ProposalRecord): ApprovalState {
  const { request, uses } = view;
  if (
    !sameIdentity(request.requester, proposal.requester) ||
    request.server_id !== proposal.server_id ||
    request.tool_name !== proposal.tool_name
  ) {
    return 'scope_mismatch';
  }
  // Bound to the exact payload the approver saw: approving one amount never covers another.
  if (request.payload_hash !== proposal.payload_hash) return 'payload_mismatch';
  const ownUse = uses.some((use) => use.proposal_id === proposal.id);
  switch (view.status) {
    case 'pending':
      return 'pending';
    case 'denied':
      return 'denied';
    case 'expired':
      return 'expired';
    case 'used':
      // Used by this very proposal: an earlier attempt claimed it (the caller decides what that means).
      return ownUse ? 'approved' : 'consumed';
    case 'approved':
      return view.resolution?.validity === 'once' && uses.length > 0 && !ownUse ? 'consumed' : 'approved';
  }
}
