import { canonicalJson, memberSha256, type StoredEvent, sameIdentity } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import { observationInputSchema, proposalInputSchema } from '../records/inputs';
import { mergePostconditions } from '../records/required-postconditions';
import { shownRecord } from '../records/shown-record';
import type { ObservationRecord, ProposalRecord } from '../records/types';

type Json = Record<string, unknown>;
type ClaimsMatch = (claims: unknown) => boolean;

/** What the server signs a lapsed claim's `unknown` observation as, by the claim sweeper. */
export const SWEEP_ACTION = 'execution.sweep';

/** The claims of a sweep: the proposal and when its claim began; the outcome is always `unknown`. */
export function sweepClaims(record: { proposal_id: unknown; started_at: unknown }) {
  return { proposal_id: record.proposal_id, outcome: 'unknown', started_at: record.started_at };
}

/**
 * The signed actions of what a gateway writes (docs/chain.md, "Records signed by their
 * authors"), each with how its claims must match the record: a proposal (`proposal.propose`),
 * an observation (`execution.observe`) and an execution claim (`execution.authorize`). The
 * claims of a proposal and an observation hold their erasable member as a hash
 * (`proposalClaims`, `observationClaims` in @vouch/audit), compared while the member is there
 * (`event.fields` opens it); after an erasure the rest of the claims still binds the record.
 * The claim sweeper's observation is the server's own, signed by its key (`execution.sweep`).
 * Null for other kinds.
 */
export function gatewaySignedActionsOf(
  kind: string,
  record: Json,
  event: StoredEvent,
): Record<string, ClaimsMatch> | null {
  switch (kind) {
    case 'proposal':
      return { 'proposal.propose': (c) => proposalClaimsMatch(c, record as ProposalRecord, event) };
    case 'observation':
      if (sameIdentity(event.actor, CLAIM_SWEEPER_IDENTITY)) {
        return {
          [SWEEP_ACTION]: (c) =>
            canonicalJson(c) ===
            canonicalJson(sweepClaims({ proposal_id: record.proposal_id, started_at: record.started_at })),
        };
      }
      return { 'execution.observe': (c) => observationClaimsMatch(c, record as ObservationRecord, event) };
    case 'execution_claim':
      // What else the body names (the payload hash, the approval request) the server checked
      // against the proposal when it wrote the claim; the claim itself keeps only ids.
      return { 'execution.authorize': (c) => isObject(c) && c.proposal_id === record.proposal_id };
    default:
      return null;
  }
}

/** The signed proposal body (its `arguments` hashed) is the proposal the record shows. */
function proposalClaimsMatch(claims: unknown, record: ProposalRecord, event: StoredEvent): boolean {
  if (!isObject(claims) || typeof claims.arguments_sha256 !== 'string') return false;
  const { arguments_sha256: argumentsHash, ...rest } = claims;
  const parsed = proposalInputSchema.safeParse({ ...rest, arguments: {} });
  if (!parsed.success) return false;
  const sent = parsed.data;
  // The registry's postconditions are added at propose; the agent's are merged into them.
  const required = (record.postconditions ?? []).filter((c) => c.origin === 'registry');
  const same =
    sent.idempotency_key === record.idempotency_key &&
    sent.action === record.action &&
    sent.server_id === record.server_id &&
    sent.tool_name === record.tool_name &&
    sent.side_effect === record.side_effect &&
    equal(sent.target, record.target) &&
    equal(sent.preconditions, record.preconditions) &&
    equal(mergePostconditions(sent.postconditions, required), record.postconditions) &&
    equal(sent.impact, record.impact);
  if (!same) return false;
  const shown = shownRecord(event, record, 'arguments');
  // Erased (or not read): the arguments cannot be compared, the rest still binds.
  return shown === null || memberSha256(shown.arguments) === argumentsHash;
}

/** The signed observation body (its `result` hashed) is the observation the record shows. */
function observationClaimsMatch(claims: unknown, record: ObservationRecord, event: StoredEvent): boolean {
  if (!isObject(claims) || typeof claims.result_sha256 !== 'string') return false;
  const { result_sha256: resultHash, ...rest } = claims;
  const parsed = observationInputSchema.safeParse({ ...rest, result: null });
  if (!parsed.success) return false;
  const sent = parsed.data;
  const same =
    sent.proposal_id === record.proposal_id &&
    sent.outcome === record.outcome &&
    sent.transport_status === record.transport_status &&
    sent.tool_error === record.tool_error &&
    sent.started_at === record.started_at &&
    sent.finished_at === record.finished_at &&
    (sent.result_source ?? null) === (record.result_source ?? null);
  if (!same) return false;
  const shown = shownRecord(event, record, 'result');
  return shown === null || memberSha256(shown.result) === resultHash;
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const equal = (a: unknown, b: unknown): boolean => {
  try {
    return canonicalJson(a ?? null) === canonicalJson(b ?? null);
  } catch {
    return false;
  }
};
