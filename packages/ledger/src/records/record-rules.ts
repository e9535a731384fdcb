import { type ChainFailure, type StoredEvent, sameIdentity } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY } from '@vouch/records';
import type { DeclaredCondition } from '@vouch/verifier-sdk';
import { getTableName } from 'drizzle-orm';
import type { KeyAuthorityRule } from '../keys/key-history';
import { approvalBoundsBreak } from '../policy/approval-validity';
import { type DerivedDecision, decisionBreak, deriveDecision, isBuiltInDecision } from './built-in-decisions';
import { RECORD_TABLE_OF } from './codec';
import { type EvidenceOwner, ownersIn, passingRefsOf, reusedOwner } from './evidence-refs';
import { proposalPayloadHolds } from './payload-hash';
import { preconditionBlock, preconditionStatus, unprovenModeOf } from './preconditions';
import { requiredPostconditionsBreak } from './required-postconditions';
import { shownRecord } from './shown-record';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ExecutionClaimRecord,
  ObservationRecord,
  ProposalRecord,
  ToolRecord,
  VerificationRecord,
} from './types';
import {
  declaredConditions,
  independenceOf,
  isAuditedParty,
  legacyRecordStatus,
  recordProof,
  unassessedCheck,
} from './verification-status';

/**
 * The rules of docs/design.md ("Invariants") that a record must have obeyed when it was
 * written, each named by the error code the server refuses it with.
 */
export type RecordRule =
  /** The payload is not a record of its kind the rules can read. */
  | 'RECORD_MALFORMED'
  | 'REFERENCE_MISSING'
  | 'ACTOR_MISMATCH'
  | 'DECISION_EXISTS'
  /** A built-in decision that is not what the built-in policy (`evaluatePolicy`) gives its proposal. */
  | 'DECISION_NOT_DERIVED'
  | 'IDENTITY_MISMATCH'
  | 'APPROVAL_PAYLOAD_MISMATCH'
  /** A proposal's `payload_hash` is not the hash of the payload it shows (`proposalPayloadHash`). */
  | 'PROPOSAL_PAYLOAD_MISMATCH'
  /**
   * A proposal's postconditions are not the agent's plus those the tool registration in force
   * required, bound to its payload (`requiredPostconditionsBreak`).
   */
  | 'POSTCONDITIONS_NOT_APPLIED'
  /** An approval answer beyond the bounds the server writes (`approvalBoundsBreak`). */
  | 'APPROVAL_BOUNDS_VIOLATED'
  | 'APPROVAL_RESOLVED'
  | 'SELF_APPROVAL'
  | 'APPROVAL_NOT_GRANTED'
  | 'APPROVAL_SCOPE_MISMATCH'
  | 'APPROVAL_EXPIRED'
  | 'APPROVAL_CONSUMED'
  | 'EXECUTION_NOT_AUTHORIZED'
  | 'OBSERVATION_EXISTS'
  /** A second execution claim of one proposal (`authorize` answers the first one again). */
  | 'EXECUTION_CLAIM_EXISTS'
  /** An `unknown` observation by the claim sweeper that no lapsed claim accounts for. */
  | 'EXECUTION_CLAIM_LAPSED'
  /** A claim whose precondition checks do not let it run (a failed one, or an unproven one the tool blocks). */
  | 'PRECONDITION_FAILED'
  | 'PRECONDITION_UNPROVEN'
  | 'STATUS_NOT_DERIVED'
  /**
   * A verification's check counted as independent that reads from the tool itself or its
   * result's channel (or lacks a `readsWrittenSystem` mark the server sets): not as the server
   * assesses it (`assessIndependence`).
   */
  | 'INDEPENDENCE_NOT_ASSESSED'
  /**
   * A verification's check counted as a pass on an evidence reference that an earlier
   * verification of another proposal of the log passed on first (`evidence-refs.ts`).
   */
  | 'EVIDENCE_REUSED'
  /** An observation of a proposal that names another server or tool than the proposal's. */
  | 'OBSERVATION_SCOPE_MISMATCH'
  | 'SUPERSESSION_FORBIDDEN'
  | 'SUPERSESSION_INVALID'
  // The rules of a redaction (`event.redacted`), checked by check-redaction-rules.ts.
  | 'REDACTION_INVALID'
  | 'EVENT_NOT_FOUND'
  | 'EVENT_NOT_REDACTABLE'
  | 'FIELD_NOT_FOUND'
  | 'FIELD_ALREADY_REDACTED'
  | 'SELF_REDACTION'
  /** The redaction's actor held no live key with the `redactor` role when it was recorded. */
  | 'ROLE_FORBIDDEN'
  /** The actor's `redactor` keys may not use the log. */
  | 'LOG_FORBIDDEN'
  // Who may write a key event of the `system` log, checked by keys/check-key-authority.ts.
  | KeyAuthorityRule;

/** What the rules remember of each proposal: a few ids and identities, not the records. */
interface ProposalState {
  requester: string;
  payloadHash: string;
  serverId: string;
  toolName: string;
  declared: DeclaredCondition[];
  /** The names of its preconditions: what a claim's precondition checks are counted against. */
  preconditions: string[];
  decision?: { verdict: DecisionRecord['verdict']; authorized: string | null };
  /** Until it is decided: what the built-in policy decides for it (see `deriveDecision`). */
  derived?: DerivedDecision;
  /** Ids of the approval uses recorded for this proposal. */
  uses: string[];
  observation?: { id: string; executedBy: string; resultSource: string | null };
  claim?: { id: string; deadline: string };
  /** Verification ids of its observation, with whether each was definitive and who superseded it. */
  verifications: Map<string, { definitive: boolean; supersededBy?: string }>;
}

/**
 * Re-checks, from the events alone and in chain order, that every record obeyed the rules
 * the server enforces when it writes one: nobody approves their own request, one decision
 * per proposal, an execution only under an allow or an approval used for it, by the
 * authorized identity, a single-use approval used once, a verification status derived from
 * its checks, supersession only by someone other than the audited party, and every decision
 * of the built-in policy the one its `evaluatePolicy` gives the proposal under the tool
 * registered then (an external engine's decisions are not re-derived). The chain proves
 * the events were not changed; this proves they could have been written by the server: a
 * database role that can insert well-formed events and rows (the runtime role can) gets no
 * further than a failure here.
 *
 * Memory: a few strings per proposal, approval request and resolution of the log, the
 * latest registration of each tool, and two ids per evidence reference that proved something.
 */
export function createRecordRuleCheck(fail: (failure: ChainFailure) => void) {
  const proposals = new Map<string, ProposalState>();
  const requests = new Map<
    string,
    Pick<
      ApprovalRequestRecord,
      | 'id'
      | 'proposal_id'
      | 'requester'
      | 'payload_hash'
      | 'server_id'
      | 'tool_name'
      | 'expires_at'
      | 'max_window_seconds'
    > & {
      resolved: boolean;
    }
  >();
  const resolutions = new Map<
    string,
    Pick<ApprovalResolutionRecord, 'request_id' | 'resolution' | 'validity' | 'valid_until'> & {
      uses: number;
    }
  >();
  const useProposal = new Map<string, string>();
  /** The latest version of each tool, by server and name: what `latestTool` reads at this point. */
  const tools = new Map<string, ToolRecord>();
  const toolKey = (serverId: string, toolName: string) => `${serverId}\u0000${toolName}`;
  /** The first proposal each evidence reference proved, as `recordVerification` reads it. */
  const evidenceOwners = new Map<string, EvidenceOwner>();

  const report = (event: StoredEvent, rule: RecordRule, message: string) =>
    fail(recordRuleFailure(event, rule, message));

  const proposalOf = (event: StoredEvent, id: string): ProposalState | undefined => {
    const proposal = proposals.get(id);
    if (!proposal) report(event, 'REFERENCE_MISSING', `names proposal ${id}, which no earlier event records`);
    return proposal;
  };

  const actorIs = (event: StoredEvent, identity: string, what: string) => {
    if (!sameIdentity(event.actor, identity)) {
      report(event, 'ACTOR_MISMATCH', `the event's actor ${event.actor} is not its ${what} ${identity}`);
    }
  };

  /** An execution (claimed or observed) only under an allow or an approval used for it, by the authorized identity. */
  const mayExecute = (
    event: StoredEvent,
    proposal: ProposalState & { id: string },
    useId: string | null,
    by: string,
  ) => {
    const decision = proposal.decision;
    const approved =
      decision?.verdict === 'require_approval' && useId !== null && proposal.uses.includes(useId);
    if (!decision || !(decision.verdict === 'allow' || approved)) {
      report(
        event,
        'EXECUTION_NOT_AUTHORIZED',
        decision
          ? `executes proposal ${proposal.id} under a ${decision.verdict} decision${decision.verdict === 'require_approval' ? ' without an approval used for it' : ''}`
          : `executes proposal ${proposal.id}, which has no decision`,
      );
    } else if (decision.authorized === null || !sameIdentity(by, decision.authorized)) {
      report(event, 'IDENTITY_MISMATCH', `executed by ${by}, authorized ${decision.authorized ?? 'nobody'}`);
    }
  };

  const rules: {
    tool(event: StoredEvent, r: ToolRecord): void;
    proposal(event: StoredEvent, r: ProposalRecord): void;
    decision(event: StoredEvent, r: DecisionRecord): void;
    approval_request(event: StoredEvent, r: ApprovalRequestRecord): void;
    approval_resolution(event: StoredEvent, r: ApprovalResolutionRecord): void;
    approval_use(event: StoredEvent, r: ApprovalUseRecord): void;
    execution_claim(event: StoredEvent, r: ExecutionClaimRecord): void;
    observation(event: StoredEvent, r: ObservationRecord): void;
    verification(event: StoredEvent, r: VerificationRecord): void;
  } = {
    tool(_event, r: ToolRecord) {
      const key = toolKey(r.server_id, r.tool_name);
      const current = tools.get(key);
      if (typeof r.version === 'number' && (current === undefined || r.version > current.version)) {
        tools.set(key, r);
      }
    },
    proposal(event, r: ProposalRecord) {
      actorIs(event, r.requester, 'requester');
      const shown = shownRecord(event, r, 'arguments');
      if (shown !== null && !proposalPayloadHolds(shown)) {
        report(
          event,
          'PROPOSAL_PAYLOAD_MISMATCH',
          `carries payload hash ${r.payload_hash}, which is not the hash of the payload it shows`,
        );
      }
      const tool = tools.get(toolKey(r.server_id, r.tool_name)) ?? null;
      // What must be proven is the operator's: rebound from the payload it shows (an erased
      // argument leaves nothing to bind, and such a proposal never runs).
      const unapplied = shown === null ? null : requiredPostconditionsBreak(shown, tool);
      if (unapplied !== null) report(event, 'POSTCONDITIONS_NOT_APPLIED', unapplied);
      proposals.set(r.id, {
        requester: r.requester,
        payloadHash: r.payload_hash,
        serverId: r.server_id,
        toolName: r.tool_name,
        declared: declaredConditions(r),
        preconditions: (r.preconditions ?? []).map((condition) => condition.name),
        derived: deriveDecision(shown ?? r, shown !== null, tool),
        uses: [],
        verifications: new Map(),
      });
    },
    decision(event, r: DecisionRecord) {
      const proposal = proposalOf(event, r.proposal_id);
      if (!proposal) return;
      if (proposal.decision)
        report(event, 'DECISION_EXISTS', `proposal ${r.proposal_id} was already decided`);
      // The requester, unless an external engine named another executor; nobody otherwise.
      const mayExecute = r.verdict === 'allow' || r.verdict === 'require_approval';
      if (mayExecute !== (r.authorized_identity !== null)) {
        report(
          event,
          'IDENTITY_MISMATCH',
          `a ${r.verdict} decision authorizes ${r.authorized_identity ?? 'nobody'}`,
        );
      }
      if (!proposal.decision && proposal.derived && isBuiltInDecision(r)) {
        const repair = r.repair === null ? null : shownRecord(event, r, 'repair')?.repair;
        const toolNow = tools.get(toolKey(proposal.serverId, proposal.toolName))?.id ?? null;
        const broken = decisionBreak(proposal.derived, r, repair, toolNow);
        if (broken !== null) report(event, 'DECISION_NOT_DERIVED', broken);
      }
      proposal.derived = undefined;
      proposal.decision ??= { verdict: r.verdict, authorized: r.authorized_identity };
    },
    approval_request(event, r: ApprovalRequestRecord) {
      const proposal = proposalOf(event, r.proposal_id);
      if (proposal && r.payload_hash !== proposal.payloadHash) {
        report(
          event,
          'APPROVAL_PAYLOAD_MISMATCH',
          `asks approval of another payload than proposal ${r.proposal_id}'s`,
        );
      }
      if (proposal && !sameIdentity(r.requester, proposal.requester)) {
        report(
          event,
          'IDENTITY_MISMATCH',
          `names requester ${r.requester}, not the proposal's ${proposal.requester}`,
        );
      }
      requests.set(r.id, { ...r, resolved: false });
    },
    approval_resolution(event, r: ApprovalResolutionRecord) {
      actorIs(event, r.resolver, 'resolver');
      const request = requests.get(r.request_id);
      if (!request) {
        report(
          event,
          'REFERENCE_MISSING',
          `answers approval request ${r.request_id}, which no earlier event records`,
        );
        return;
      }
      if (request.resolved)
        report(event, 'APPROVAL_RESOLVED', `approval request ${r.request_id} was already answered`);
      if (sameIdentity(r.resolver, request.requester)) {
        report(event, 'SELF_APPROVAL', `${r.resolver} answered their own approval request ${r.request_id}`);
      }
      const broken = approvalBoundsBreak(request, r);
      if (broken !== null) report(event, 'APPROVAL_BOUNDS_VIOLATED', broken);
      request.resolved = true;
      resolutions.set(r.id, { ...r, uses: 0 });
    },
    approval_use(event, r: ApprovalUseRecord) {
      actorIs(event, r.used_by, 'user');
      const resolution = resolutions.get(r.resolution_id);
      const request = requests.get(r.request_id);
      const proposal = proposalOf(event, r.proposal_id);
      if (!resolution || !request) {
        report(
          event,
          'REFERENCE_MISSING',
          `uses approval ${r.resolution_id} of request ${r.request_id}, which no earlier events record`,
        );
        return;
      }
      if (resolution.request_id !== r.request_id || resolution.resolution !== 'approved') {
        report(
          event,
          'APPROVAL_NOT_GRANTED',
          `approval ${r.resolution_id} does not approve request ${r.request_id}`,
        );
      }
      if (proposal) {
        if (request.payload_hash !== proposal.payloadHash) {
          report(
            event,
            'APPROVAL_PAYLOAD_MISMATCH',
            `request ${r.request_id} approved another payload than proposal ${r.proposal_id}'s`,
          );
        }
        if (
          !sameIdentity(request.requester, proposal.requester) ||
          request.server_id !== proposal.serverId ||
          request.tool_name !== proposal.toolName
        ) {
          report(
            event,
            'APPROVAL_SCOPE_MISMATCH',
            `request ${r.request_id} was for another requester, server or tool`,
          );
        }
        const authorized = proposal.decision?.authorized ?? null;
        if (authorized === null || !sameIdentity(r.used_by, authorized)) {
          report(event, 'IDENTITY_MISMATCH', `used by ${r.used_by}, authorized ${authorized ?? 'nobody'}`);
        }
        proposal.uses.push(r.id);
      }
      if (resolution.validity !== r.validity) {
        report(
          event,
          'APPROVAL_SCOPE_MISMATCH',
          `records validity ${r.validity}, the approval says ${resolution.validity}`,
        );
      }
      if (resolution.validity === 'once' && resolution.uses > 0) {
        report(event, 'APPROVAL_CONSUMED', `single-use approval ${r.resolution_id} was already used`);
      }
      if (
        // The server's own clock, as it recorded the use, against the end it set (isPast).
        resolution.valid_until !== null &&
        Date.parse(r.used_at) >= Date.parse(resolution.valid_until)
      ) {
        report(
          event,
          'APPROVAL_EXPIRED',
          `used at ${r.used_at}, after approval ${r.resolution_id} ended at ${resolution.valid_until}`,
        );
      }
      resolution.uses++;
      useProposal.set(r.id, r.proposal_id);
    },
    execution_claim(event, r: ExecutionClaimRecord) {
      actorIs(event, r.claimed_by, 'claimant');
      const proposal = proposalOf(event, r.proposal_id);
      if (!proposal) return;
      if (proposal.claim)
        report(event, 'EXECUTION_CLAIM_EXISTS', `proposal ${r.proposal_id} was already claimed`);
      if (proposal.observation)
        report(event, 'OBSERVATION_EXISTS', `proposal ${r.proposal_id} was already observed`);
      mayExecute(event, { ...proposal, id: r.proposal_id }, r.approval_use_id, r.claimed_by);
      if (r.preconditions !== undefined) {
        // As `authorize` derived it, under the tool's registration in force then.
        const status = preconditionStatus(r.preconditions.checks, proposal.preconditions);
        if (status !== r.preconditions.status) {
          report(
            event,
            'STATUS_NOT_DERIVED',
            `states preconditions ${r.preconditions.status}, its checks give ${status}`,
          );
        }
        const tool = tools.get(toolKey(proposal.serverId, proposal.toolName)) ?? null;
        const blocked = preconditionBlock(r.proposal_id, { status, checks: [] }, unprovenModeOf(tool));
        if (blocked) report(event, blocked.code, blocked.message);
      }
      proposal.claim ??= { id: r.id, deadline: r.deadline };
    },
    observation(event, r: ObservationRecord) {
      actorIs(event, r.executed_by, 'executing identity');
      const proposal = proposalOf(event, r.proposal_id);
      if (!proposal) return;
      if (proposal.observation)
        report(event, 'OBSERVATION_EXISTS', `proposal ${r.proposal_id} was already observed`);
      if (sameIdentity(r.executed_by, CLAIM_SWEEPER_IDENTITY)) {
        // The server's record that a claim lapsed: only for a claim past its deadline, as unknown.
        const claim = proposal.claim;
        const result = r.result as { claim_id?: unknown } | null;
        if (
          !claim ||
          r.outcome !== 'unknown' ||
          result?.claim_id !== claim.id ||
          Date.parse(r.observed_at) < Date.parse(claim.deadline)
        ) {
          report(
            event,
            'EXECUTION_CLAIM_LAPSED',
            `records proposal ${r.proposal_id} as swept, but no claim of it had lapsed unobserved`,
          );
        }
      } else {
        mayExecute(event, { ...proposal, id: r.proposal_id }, r.approval_use_id, r.executed_by);
      }
      if (r.server_id !== proposal.serverId || r.tool_name !== proposal.toolName) {
        report(
          event,
          'OBSERVATION_SCOPE_MISMATCH',
          `observes ${r.server_id}/${r.tool_name}, but proposal ${r.proposal_id} is for ${proposal.serverId}/${proposal.toolName}`,
        );
      }
      proposal.observation ??= {
        id: r.id,
        executedBy: r.executed_by,
        resultSource: r.result_source ?? null,
      };
    },
    verification(event, r: VerificationRecord) {
      actorIs(event, r.verifier, 'verifier');
      const proposal = proposalOf(event, r.proposal_id);
      if (!proposal) return;
      if (proposal.observation?.id !== r.observation_id) {
        report(
          event,
          'REFERENCE_MISSING',
          `verifies observation ${r.observation_id}, which is not proposal ${r.proposal_id}'s`,
        );
        return;
      }
      // As `recordVerification` assessed each check, with the registration in force then.
      const unassessed = unassessedCheck(
        r.checks,
        independenceOf(
          { server_id: proposal.serverId },
          tools.get(toolKey(proposal.serverId, proposal.toolName))?.writes,
        ),
        'whole',
      );
      if (unassessed !== null) {
        report(
          event,
          'INDEPENDENCE_NOT_ASSESSED',
          `check ${String(unassessed.name)} (source ${String(unassessed.source)}) is not counted as the server counts it`,
        );
      }
      for (const check of r.checks) {
        const owner = reusedOwner(check, evidenceOwners, r.proposal_id);
        if (owner === null) continue;
        report(
          event,
          'EVIDENCE_REUSED',
          `check ${String(check.name)} counts evidence ${String(check.evidence_ref)} as a pass, which proved proposal ${owner.proposal_id} first (verification ${owner.verification_id})`,
        );
        break;
      }
      for (const [ref, owner] of ownersIn([r], passingRefsOf(r.checks))) {
        if (!evidenceOwners.has(ref)) evidenceOwners.set(ref, owner);
      }
      const proof = recordProof(r, proposal.declared);
      // A record written before a failure always counted may state the status of that rule;
      // every read counts it by the current one (see `legacyRecordStatus`).
      if (proof.status !== r.status && legacyRecordStatus(r, proposal.declared) !== r.status) {
        report(event, 'STATUS_NOT_DERIVED', `states ${r.status}, its checks give ${proof.status}`);
      }
      const supersedes = r.supersedes ?? [];
      if (supersedes.length > 0) {
        const audited = isAuditedParty(
          r.verifier,
          { requester: proposal.requester } as ProposalRecord,
          { executed_by: proposal.observation.executedBy } as ObservationRecord,
        );
        if (audited)
          report(
            event,
            'SUPERSESSION_FORBIDDEN',
            `${r.verifier} is the audited party of proposal ${r.proposal_id}`,
          );
        for (const id of supersedes) {
          const target = proposal.verifications.get(id);
          if (
            !target ||
            target.supersededBy !== undefined ||
            !target.definitive ||
            proof.status === 'inconclusive'
          ) {
            report(event, 'SUPERSESSION_INVALID', `cannot supersede verification ${id}`);
          }
          if (target) target.supersededBy ??= r.id;
        }
      }
      proposal.verifications.set(r.id, { definitive: proof.status !== 'inconclusive' });
    },
  };

  return {
    /** The next event of the log, in seq order; events that are not records are passed over. */
    add(event: StoredEvent): void {
      if (!Object.hasOwn(rules, event.kind)) return;
      // The payload is JSON the chain check vouches for, read as the record its kind names;
      // a field that is not there throws below and is reported as RECORD_MALFORMED.
      const rule = rules[event.kind as keyof typeof rules] as (event: StoredEvent, record: unknown) => void;
      let record: unknown;
      try {
        record = JSON.parse(event.payload);
      } catch {
        return; // the chain check reports a payload that is not what was hashed
      }
      if (typeof record !== 'object' || record === null || Array.isArray(record)) {
        report(event, 'RECORD_MALFORMED', `its payload is not a ${event.kind} record`);
        return;
      }
      try {
        rule(event, record);
      } catch (cause) {
        report(
          event,
          'REFERENCE_MISSING',
          `is not a well-formed ${event.kind} record (${(cause as Error).message})`,
        );
      }
    },
  };
}

export type RecordRuleCheck = ReturnType<typeof createRecordRuleCheck>;

/**
 * A record event that breaks `rule`: `RECORD_RULE_VIOLATION` at its seq, naming its table and
 * record id (and whatever `more` adds), for every rule over records.
 */
export function recordRuleFailure(
  event: StoredEvent,
  rule: string,
  message: string,
  more: Record<string, unknown> = {},
): ChainFailure {
  return {
    seq: event.seq,
    code: 'RECORD_RULE_VIOLATION',
    rule,
    table: tableNameOf(event.kind),
    id: event.entity,
    ...more,
    message: `${event.kind} ${event.entity}: ${message}`,
  };
}

/** The table a record kind is stored in, for a failure's `table`. */
export function tableNameOf(kind: string): string {
  const entry = RECORD_TABLE_OF.get(kind);
  return entry === undefined ? kind : getTableName(entry.table);
}
