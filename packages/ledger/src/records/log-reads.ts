import type { StoredEvent } from '@vouch/audit';
import type { Db } from '../database';
import { readEventsOfEntities } from '../event-store';
import type { IntegrityAlarm } from '../integrity-alarm';
import { requireProposalPayload } from './proposal-payload-check';
import {
  type ApprovalStatus,
  listLatestTools,
  listProposalRows,
  listRequests,
  listVerificationRecords,
  type ProposalColumnFilter,
  refusalsOf,
  reusableRequestCandidates,
  toolAtDecision,
  verificationsOf,
} from './queries';
import { batchedReads, openedRecords, type RecordReads } from './record-reads';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ProposalRecord,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationRecord,
} from './types';

/**
 * Every read the records operations make, within one log, through one database handle (a
 * batch transaction, or the database itself): the coalesced, checked lookups of
 * `record-reads.ts` and the lists of `queries.ts`, bound once instead of passed `db, log,
 * alarm` at every call.
 */
export interface LogReads extends RecordReads {
  /** A proposal's verifications, in chain order, each checked against its event. */
  verificationsOf(proposalId: string): Promise<VerificationRecord[]>;
  /** A proposal's refused executions, in chain order, each checked against its event. */
  refusalsOf(proposalId: string): Promise<RefusedExecutionRecord[]>;
  /** Approval requests a new proposal of this scope could wait on (see `reusableRequestCandidates`). */
  reusableRequests(
    scope: { requester: string; server_id: string; tool_name: string; payload_hash: string },
    now: string,
  ): Promise<
    Array<{ request: ApprovalRequestRecord; resolution: ApprovalResolutionRecord | null; used: boolean }>
  >;
  /** The registration of a tool in force when a decision was recorded (see `toolAtDecision`). */
  toolAtDecision(serverId: string, toolName: string, decisionId: string): Promise<ToolRecord | null>;
  /** The latest registration of every tool, by server then tool name. */
  latestTools(): Promise<ToolRecord[]>;
  /** Approval requests, oldest first, optionally of one status; keyset-paged by event seq. */
  listRequests(options: {
    status?: ApprovalStatus;
    now: string;
    after?: number;
    limit: number;
  }): Promise<
    Array<{ seq: number; request: ApprovalRequestRecord; resolution: ApprovalResolutionRecord | null }>
  >;
  /** Proposals in chain order after seq `after`, narrowed by their stored columns. */
  listProposals(
    options: ProposalColumnFilter & { after: number; limit: number },
  ): Promise<Array<{ seq: number; proposal: ProposalRecord }>>;
  /** Verification records in chain order after seq `after`, optionally of one recorded status. */
  listVerifications(options: {
    status?: VerificationRecord['status'];
    after: number;
    limit: number;
  }): Promise<Array<{ seq: number; verification: VerificationRecord }>>;
  /** The events of these entities, in chain order. */
  eventsOf(entities: readonly string[]): Promise<StoredEvent[]>;
  /** Refuse a proposal whose payload is not what its hash names (see `requireProposalPayload`). */
  requireProposalPayload(proposal: ProposalRecord): void;
  /** Raise the integrity alarm for a record of `table` that breaks a rule the server writes under. */
  raiseRuleViolation(table: string, message: string): void;
}

/** The reads of `log` through `db`; rows that fail their check raise `alarm`. */
export function logReads(db: Db, log: string, alarm: IntegrityAlarm): LogReads {
  return {
    ...batchedReads(db, log, alarm),
    verificationsOf: (proposalId) => verificationsOf(db, log, alarm, proposalId),
    refusalsOf: async (proposalId) =>
      openedRecords(db, log, alarm, 'execution_refused', await refusalsOf(db, log, alarm, proposalId)),
    reusableRequests: (scope, now) => reusableRequestCandidates(db, log, scope, now),
    toolAtDecision: (serverId, toolName, decisionId) =>
      toolAtDecision(db, log, alarm, { serverId, toolName }, decisionId),
    latestTools: () => listLatestTools(db, log),
    listRequests: (options) => listRequests(db, log, options),
    listProposals: (options) => listProposalRows(db, log, options),
    listVerifications: (options) => listVerificationRecords(db, log, alarm, options),
    eventsOf: (entities) => readEventsOfEntities(db, log, entities),
    requireProposalPayload: (proposal) => requireProposalPayload(alarm, log, proposal),
    raiseRuleViolation: (table, message) =>
      alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table, message }),
  };
}
