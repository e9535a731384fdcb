import type { StoredEvent } from '@vouch/audit';
import type { Db } from '../database';
import { readEventsOfEntities } from '../event-store';
import type { IntegrityAlarm } from '../integrity-alarm';
import { type RevokedApproverKey, revokedApproverKeys } from '../keys/revoked-approver-keys';
import { unsignedRecord } from '../signatures/signed-record-check';
import { requireOwnEvidence } from './evidence-reuse-check';
import { unpinnedDecision } from './policy-pins';
import { requireProposalPayload } from './proposal-payload-check';
import {
  type ApprovalStatus,
  firstUsesOf,
  listLatestTools,
  listProposalRows,
  listRequestIds,
  listVerificationRecords,
  type ProposalColumnFilter,
  refusalsOf,
  reusableRequestIds,
  toolAtDecision,
  verificationsOf,
} from './queries';
import { batchedReads, openedRecords, type RecordReads } from './record-reads';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalRecord,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationRecord,
} from './types';
import { requireAssessedChecks } from './verification-status';

/**
 * Every read the records operations make, within one log, through one database handle (a
 * batch transaction, or the database itself): the coalesced, checked lookups of
 * `record-reads.ts` and the lists of `queries.ts`, bound once instead of passed `db, log,
 * alarm` at every call.
 */
export interface LogReads extends RecordReads {
  /** A proposal's verifications, in chain order, each checked against its event. */
  verificationsOf(proposalId: string): Promise<VerificationRecord[]>;
  /** The verifications that first used any of these evidence references, in chain order, checked (see `firstUsesOf`). */
  firstUsesOf(refs: readonly string[]): Promise<VerificationRecord[]>;
  /** A proposal's refused executions, in chain order, each checked against its event. */
  refusalsOf(proposalId: string): Promise<RefusedExecutionRecord[]>;
  /**
   * Approval requests a new proposal of this scope could wait on (see `reusableRequestIds`),
   * each with its answer and whether it was used, all read checked; the caller decides.
   */
  reusableRequests(
    scope: { requester: string; server_id: string; tool_name: string; payload_hash: string },
    now: string,
  ): Promise<
    Array<{ request: ApprovalRequestRecord; resolution: ApprovalResolutionRecord | null; used: boolean }>
  >;
  /** The registration of a tool in force when a decision was recorded (see `toolAtDecision`). */
  toolAtDecision(serverId: string, toolName: string, decisionId: string): Promise<ToolRecord | null>;
  /** The latest registration of every tool, by server then tool name, each checked. */
  latestTools(): Promise<ToolRecord[]>;
  /**
   * Approval requests, oldest first, optionally of one status (narrowed on the stored
   * columns: derive the status again from the checked answer); keyset-paged by event seq.
   */
  listRequests(options: {
    status?: ApprovalStatus;
    now: string;
    after?: number;
    limit: number;
  }): Promise<Array<{ seq: number; request: ApprovalRequestRecord }>>;
  /** The ids of proposals in chain order after seq `after`, narrowed by their stored columns (unchecked: read each). */
  listProposals(
    options: ProposalColumnFilter & { after: number; limit: number },
  ): Promise<Array<{ seq: number; id: string; environment: string | null }>>;
  /** Verification records in chain order after seq `after`, optionally of one recorded status. */
  listVerifications(options: {
    status?: VerificationRecord['status'];
    after: number;
    limit: number;
  }): Promise<Array<{ seq: number; verification: VerificationRecord }>>;
  /** The events of these entities, in chain order. */
  eventsOf(entities: readonly string[]): Promise<StoredEvent[]>;
  /** Refuse verifications whose checks the server would not have counted (see `requireAssessedChecks`). */
  requireAssessedChecks(
    proposal: ProposalRecord,
    observation: ObservationRecord | null,
    verifications: readonly VerificationRecord[],
  ): void;
  /** Refuse a proposal's verifications that pass on another proposal's evidence (see `requireOwnEvidence`). */
  requireOwnEvidence(proposalId: string, verifications: readonly VerificationRecord[]): Promise<void>;
  /** Refuse a proposal whose payload is not what its hash names (see `requireProposalPayload`). */
  requireProposalPayload(proposal: ProposalRecord): void;
  /**
   * Why a stored decision is not one the policy pinned when it was recorded gives, or null
   * (see `unpinnedDecision`); a break raises the alarm.
   */
  unpinnedDecision(decision: DecisionRecord): Promise<string | null>;
  /**
   * Why a stored record in its actor's name lacks the signature the rule requires, or null
   * (see `unsignedRecord`); a break raises the alarm.
   */
  unsignedRecord(kind: string, record: { id: string }): Promise<string | null>;
  /** Raise the integrity alarm for a record of `table` that breaks a rule the server writes under. */
  raiseRuleViolation(table: string, message: string): void;
  /** Keys of an approver live when it answered and revoked since (see `revokedApproverKeys`). */
  revokedApproverKeys(options: {
    identity: string;
    liveAt: string;
    by: string;
  }): Promise<RevokedApproverKey[]>;
}

/** The reads of `log` through `db`; rows that fail their check raise `alarm`. */
export function logReads(db: Db, log: string, alarm: IntegrityAlarm): LogReads {
  const reads = batchedReads(db, log, alarm);
  /** The request of a row a narrowing query found, read checked (it exists: rows are never deleted). */
  const requestOf = async (id: string): Promise<ApprovalRequestRecord> => {
    const request = await reads.requestById(id);
    if (!request) throw new Error(`approval request ${id} vanished from log ${log}`);
    return request;
  };
  return {
    ...reads,
    verificationsOf: (proposalId) => verificationsOf(db, log, alarm, proposalId),
    firstUsesOf: (refs) => firstUsesOf(db, log, alarm, refs),
    refusalsOf: async (proposalId) =>
      openedRecords(db, log, alarm, 'execution_refused', await refusalsOf(db, log, alarm, proposalId)),
    reusableRequests: async (scope, now) =>
      Promise.all(
        (await reusableRequestIds(db, log, scope, now)).map(async (id) => {
          const [request, resolution, uses] = await Promise.all([
            requestOf(id),
            reads.resolutionOf(id),
            reads.usesOf(id),
          ]);
          return { request, resolution, used: uses.length > 0 };
        }),
      ),
    toolAtDecision: (serverId, toolName, decisionId) =>
      toolAtDecision(db, log, alarm, { serverId, toolName }, decisionId),
    latestTools: () => listLatestTools(db, log, alarm),
    listRequests: async (options) => {
      const rows = await listRequestIds(db, log, options);
      // A forged second answer joins a request twice; list it once.
      const unique = rows.filter((row, i) => rows.findIndex((r) => r.id === row.id) === i);
      return Promise.all(unique.map(async (row) => ({ seq: row.seq, request: await requestOf(row.id) })));
    },
    listProposals: (options) => listProposalRows(db, log, options),
    listVerifications: (options) => listVerificationRecords(db, log, alarm, options),
    eventsOf: (entities) => readEventsOfEntities(db, log, entities),
    requireProposalPayload: (proposal) => requireProposalPayload(alarm, log, proposal),
    requireOwnEvidence: (proposalId, verifications) =>
      requireOwnEvidence(db, log, alarm, proposalId, verifications),
    requireAssessedChecks: (proposal, observation, verifications) =>
      requireAssessedChecks(alarm, log, proposal, observation, verifications),
    unpinnedDecision: (decision) => unpinnedDecision(db, log, alarm, decision),
    unsignedRecord: (kind, record) =>
      unsignedRecord(db, log, alarm, kind, record as Record<string, unknown> & { id: string }),
    raiseRuleViolation: (table, message) =>
      alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table, message }),
    revokedApproverKeys: (options) => revokedApproverKeys(db, options),
  };
}
