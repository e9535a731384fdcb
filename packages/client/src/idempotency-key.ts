import { canonicalJson, sha256Hex } from '@vouch/audit';
import type { ProposalPayload } from './api-types';
import { VouchClientError } from './errors';

/**
 * The payload exactly as the server hashes it (`payload_hash`), with the server's defaults
 * filled in. The field list matches the ledger's `proposalPayloadOf`: who asked and the
 * idempotency key are not part of what an approver is shown.
 */
export function proposalPayloadOf(action: {
  action: string;
  server_id: string;
  tool_name: string;
  target: { kind: string; id?: string | null; env?: string | null };
  arguments: ProposalPayload['arguments'];
  side_effect: ProposalPayload['side_effect'];
  preconditions?: ProposalPayload['preconditions'];
  postconditions?: ProposalPayload['postconditions'];
  impact?: ProposalPayload['impact'];
}): ProposalPayload {
  return {
    action: action.action,
    server_id: action.server_id,
    tool_name: action.tool_name,
    target: { kind: action.target.kind, id: action.target.id ?? null, env: action.target.env ?? null },
    arguments: action.arguments,
    side_effect: action.side_effect,
    preconditions: action.preconditions ?? [],
    postconditions: action.postconditions ?? [],
    impact: action.impact ?? null,
  };
}

/**
 * The payload the server records for `sent`: the same, with the postconditions the tool's
 * registration requires (those `recorded` marks `origin: registry`) first, and an identical
 * one of `sent` (same name, same params as canonical JSON) merged into them, as the server does.
 * Hashing it tells whether the server added anything but what its registry requires.
 */
export function withRequiredPostconditions(
  sent: ProposalPayload,
  recorded: Pick<ProposalPayload, 'postconditions'>,
): ProposalPayload {
  const required = recorded.postconditions.filter((c) => c.origin === 'registry');
  if (required.length === 0) return sent;
  const identity = (c: { name: string; params?: unknown }) => canonicalOrThrow([c.name, c.params ?? {}]);
  const requiredIds = new Set(required.map(identity));
  return {
    ...sent,
    postconditions: [...required, ...sent.postconditions.filter((c) => !requiredIds.has(identity(c)))],
  };
}

/**
 * `SHA-256(canonical(payload))` in lowercase hex (RFC 8785 canonical JSON), computed on the
 * client so it can check that the server recorded the payload it was sent.
 */
export function payloadHashOf(payload: ProposalPayload): string {
  return sha256Hex(canonicalOrThrow(payload));
}

/**
 * A deterministic idempotency key for an action: the same action always gets the same key,
 * so a retried `execute` finds the proposal it made before and replays instead of running
 * twice. `scope` separates keys that must not collide (for example a gateway's call counter).
 *
 * @example
 * deriveIdempotencyKey(payload) === deriveIdempotencyKey(structuredClone(payload)); // true
 */
export function deriveIdempotencyKey(payload: ProposalPayload, scope?: string): string {
  return `ik1_${sha256Hex(canonicalOrThrow({ payload, scope: scope ?? null }))}`;
}

function canonicalOrThrow(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch (cause) {
    // The server would refuse it too; saying so here keeps a bad action from reaching the wire.
    throw new VouchClientError('INVALID_ARGUMENT', 'the action holds a value JSON cannot carry', {
      cause,
      details: { path: (cause as { path?: unknown }).path ?? null },
    });
  }
}
