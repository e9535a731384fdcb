import { canonicalJson, sha256Hex } from '@vouch/audit';
import type { ProposalPayload } from './types';

/**
 * Exactly what an approver is shown, and nothing else: the action, where it lands, its
 * arguments, its class, its conditions and the gateway's impact estimate. Who asked and the
 * idempotency key are left out on purpose: an approval is bound to the requester separately
 * (`APPROVAL_SCOPE_MISMATCH`), so a different payload and a different requester stay two
 * distinct refusals.
 */
export function proposalPayloadOf(proposal: ProposalPayload): ProposalPayload {
  return {
    action: proposal.action,
    server_id: proposal.server_id,
    tool_name: proposal.tool_name,
    target: { kind: proposal.target.kind, id: proposal.target.id, env: proposal.target.env },
    arguments: proposal.arguments,
    side_effect: proposal.side_effect,
    preconditions: proposal.preconditions,
    postconditions: proposal.postconditions,
    impact: proposal.impact,
  };
}

/**
 * `payload_hash = SHA-256(canonical(payload))` as lowercase hex. Canonical (RFC 8785) first,
 * so the key order a gateway happened to send cannot change the hash.
 *
 * @example
 * proposalPayloadHash(proposal) === proposalPayloadHash({ ...proposal }); // true, whatever the key order
 */
export function proposalPayloadHash(proposal: ProposalPayload): string {
  return sha256Hex(canonicalJson(proposalPayloadOf(proposal)));
}

/**
 * Whether a proposal's payload hashes to the `payload_hash` it carries: the server computes
 * both from the same input, so a record where they differ was not written by it (an approval
 * of what it shows would transfer to the payload its hash names). False too for a record
 * whose payload cannot be hashed at all.
 */
export function proposalPayloadHolds(proposal: ProposalPayload & { payload_hash: string }): boolean {
  try {
    return proposalPayloadHash(proposal) === proposal.payload_hash;
  } catch {
    return false;
  }
}
