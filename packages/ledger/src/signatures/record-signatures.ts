import { canonicalJson, type DsseEnvelope, readAuthorStatementUnverified } from '@vouch/audit';
import {
  canonicalPolicy,
  PIN_POLICY_ACTION,
  POLICY_CONFIGURED_KIND,
  pinnedPolicyOf,
} from '../policy/policy-configuration';
import { BUILT_IN_POLICY } from '../records/built-in-decisions';
import {
  APPROVE_DEFINITION_ACTION,
  definitionApprovalClaimsMatch,
  registrationClaimsMatch,
  TOOL_REGISTER_ACTION,
} from '../records/tool-registration-claims';
import type { ToolRecord } from '../records/types';

type Json = Record<string, unknown>;
type ClaimsMatch = (claims: unknown) => boolean;

/** The signed actions a record of `kind` may carry, each with how its claims must match the record. */
export function signedActionsOf(kind: string, record: Json): Record<string, ClaimsMatch> | null {
  switch (kind) {
    case 'approval_resolution':
      return record.resolution === 'approved'
        ? {
            'approval.approve': (c) =>
              field(c, 'request_id') === record.request_id &&
              (field(c, 'validity') ?? 'once') === record.validity &&
              (field(c, 'comment') ?? null) === record.comment,
          }
        : {
            'approval.deny': (c) =>
              field(c, 'request_id') === record.request_id &&
              (field(c, 'comment') ?? null) === record.comment,
          };
    case 'verification':
      return {
        // Checks the author posted.
        'verification.record': (c) =>
          field(c, 'observation_id') === record.observation_id &&
          sameChecks(field(c, 'checks'), record.checks) &&
          same(field(c, 'supersedes'), record.supersedes),
        // The server's verifiers, run at the author's request.
        'verification.run': (c) =>
          field(c, 'observation_id') === record.observation_id &&
          same(field(c, 'supersedes'), record.supersedes),
      };
    case 'decision':
      if (record.decided_by === BUILT_IN_POLICY && record.source === 'built_in') return null;
      return {
        'decision.record': (c) =>
          field(c, 'proposal_id') === record.proposal_id &&
          field(c, 'verdict') === record.verdict &&
          field(c, 'source') === record.source,
      };
    case 'tool':
      // A gateway's discovery is written as it was found: signed by the gateway when it signs.
      return {
        [TOOL_REGISTER_ACTION]: (c) => registrationClaimsMatch(c, record as ToolRecord),
        [APPROVE_DEFINITION_ACTION]: (c) => definitionApprovalClaimsMatch(c, record as ToolRecord),
      };
    case POLICY_CONFIGURED_KIND: {
      // The server's pin, signed by its own key: the policy it pins, as it pins it.
      const pinned = pinnedPolicyOf(record);
      return {
        [PIN_POLICY_ACTION]: (c) =>
          pinned !== null && canonicalJson(c) === canonicalJson(canonicalPolicy(pinned)),
      };
    }
    default:
      return null;
  }
}

/** The action an envelope's statement names, read without verifying it (to pick the rule to verify by). */
export function claimedAction(envelope: DsseEnvelope | undefined): string | undefined {
  return readAuthorStatementUnverified(envelope)?.action;
}

function field(claims: unknown, name: string): unknown {
  return typeof claims === 'object' && claims !== null && !Array.isArray(claims)
    ? (claims as Json)[name]
    : undefined;
}

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** The posted checks and the recorded ones name the same results, in order (the ledger adds members of its own). */
function sameChecks(posted: unknown, recorded: unknown): boolean {
  if (!Array.isArray(posted) || !Array.isArray(recorded) || posted.length !== recorded.length) return false;
  return posted.every((p: Json, i) => {
    const r = recorded[i] as Json;
    return p?.name === r?.name && p?.status === r?.status && (p?.source ?? null) === (r?.source ?? null);
  });
}
