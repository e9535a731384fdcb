import { canonicalJson, sha256Hex } from '@vouch/audit';
import { evaluatePolicy, type PolicyResult } from '../policy/built-in-policy';
import type { DecisionRecord, ProposalRecord, Repair, ToolRecord, Verdict } from './types';

/** Who the built-in policy decides as (`decided_by`); its decisions say `source: 'built_in'`. */
export const BUILT_IN_POLICY = 'policy:built_in';

/**
 * Is this a decision of the built-in policy, by either of the two fields that say so? The
 * server writes both or neither (an external engine may not name `built_in` as its source),
 * so a record that claims one is re-derived as the built-in policy's.
 */
export function isBuiltInDecision(r: Pick<DecisionRecord, 'source' | 'decided_by'>): boolean {
  return r.source === 'built_in' || r.decided_by === BUILT_IN_POLICY;
}

/**
 * What the built-in policy decides for `proposal` under `tool`: the server's own
 * `evaluatePolicy`, fed as `propose` feeds it (the requester's scopes and environments as the
 * proposal recorded them), with the tool it names.
 */
function builtInDecisionOf(
  proposal: ProposalRecord,
  tool: ToolRecord | null,
): PolicyResult & { tool_id: string | null } {
  const result = evaluatePolicy({
    proposal,
    tool,
    caller: { scopes: proposal.requester_scopes, environments: proposal.requester_environments },
  });
  return { ...result, tool_id: tool?.id ?? null };
}

/**
 * What the record rules keep of a proposal until its decision: the built-in policy's verdict
 * and digests of the rest, not the records. `verdict` null: the policy cannot read the
 * proposal (or its tool), so no built-in decision of it can be the server's.
 */
export interface DerivedDecision {
  verdict: Verdict | null;
  /** The tool in force when the policy read the registry, by id (null: none registered). */
  toolId: string | null;
  /** Digest of the verdict, reasons, executor, tool id and whether there is a repair. */
  core: string;
  /** Digest of the repair; undefined when the proposal's arguments are not known (erased, not fetched). */
  repair: string | undefined;
}

/**
 * Re-derive `proposal`'s built-in decision with the registry as it stands (`tool`); `shown`:
 * whether its arguments are the ones its requester sent (a repair copies them).
 */
export function deriveDecision(
  proposal: ProposalRecord,
  shown: boolean,
  tool: ToolRecord | null,
): DerivedDecision {
  try {
    const derived = builtInDecisionOf(proposal, tool);
    return {
      verdict: derived.verdict,
      toolId: derived.tool_id,
      core: coreDigest(derived),
      repair: shown ? repairDigest(derived.repair) : undefined,
    };
  } catch {
    return { verdict: null, toolId: tool?.id ?? null, core: '', repair: undefined };
  }
}

/**
 * Why `recorded`, a built-in decision, is not what the policy derived (`expected`), or null
 * when it is. `repair`: the recorded repair as its requester's content, undefined when it is
 * not known (erased, not fetched); `toolNow`: the tool in force at the decision.
 */
export function decisionBreak(
  expected: DerivedDecision,
  recorded: DecisionRecord,
  repair: Repair | null | undefined,
  toolNow: string | null,
): string | null {
  const proposal = recorded.proposal_id;
  if (expected.verdict === null) {
    return `the built-in policy cannot read proposal ${proposal} or its tool, so it decided nothing`;
  }
  // `propose` reads the registry once and writes the proposal and its decision together.
  if (toolNow !== expected.toolId) {
    return `the tool registry changed between proposal ${proposal} and its decision (${expected.toolId ?? 'no tool'}, then ${toolNow ?? 'no tool'}), which the built-in policy writes from one read of it`;
  }
  const tool = expected.toolId ?? 'no registered tool';
  if (recorded.verdict !== expected.verdict) {
    return `decides ${recorded.verdict}; the built-in policy, on proposal ${proposal} and ${tool}, decides ${expected.verdict}`;
  }
  if (coreDigest(recorded) !== expected.core) {
    return `its reasons, executor, tool or repair are not the ones the built-in policy gives proposal ${proposal} under ${tool}`;
  }
  if (repair !== undefined && expected.repair !== undefined && repairDigest(repair) !== expected.repair) {
    return `its repair is not the one the built-in policy gives proposal ${proposal} under ${tool}`;
  }
  return null;
}

/**
 * Why `decision`, a stored built-in decision, is not what the policy gives `proposal` under
 * `tool` (the registration in force when it was recorded), or null when it is: what the
 * server checks before it acts on one. An erased argument or repair key leaves the repair
 * unchecked (an executable decision has none).
 */
export function builtInDecisionBreak(
  proposal: ProposalRecord & { redacted?: object },
  decision: DecisionRecord,
  tool: ToolRecord | null,
): string | null {
  const expected = deriveDecision(proposal, proposal.redacted === undefined, tool);
  const repair = decision.redacted === undefined ? decision.repair : undefined;
  return decisionBreak(expected, decision, repair, tool?.id ?? null);
}

function coreDigest(
  d: Pick<DecisionRecord, 'verdict' | 'reasons' | 'authorized_identity' | 'tool_id' | 'repair'>,
): string {
  return digest({
    verdict: d.verdict,
    // Codes and details, not the wording: rewording a message must not unprove old decisions.
    reasons: Array.isArray(d.reasons) ? d.reasons.map(withoutMessage) : d.reasons,
    authorized_identity: d.authorized_identity,
    tool_id: d.tool_id,
    repair: d.repair !== null,
  });
}

function digest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** A repair's digest without the wording of its message (as reasons are compared). */
function repairDigest(repair: unknown): string {
  return digest(withoutMessage(repair));
}

/** A reason or repair without its `message`: what the policy decided, not how it says it. */
function withoutMessage(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const { message: _, ...rest } = value as { message?: unknown };
  return rest;
}
