import { randomUUID } from 'node:crypto';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { EventLink, StagingTransaction } from '../ledger';
import {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  observations,
  proposals,
  refusedExecutions,
  tools,
  verifications,
} from '../schema/records';
import {
  approvalRequestCodec,
  approvalResolutionCodec,
  approvalUseCodec,
  decisionCodec,
  observationCodec,
  proposalCodec,
  refusedExecutionCodec,
  toolCodec,
  verificationCodec,
} from './codec';
import type { LogReads } from './log-reads';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalRecord,
  RecordKind,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationRecord,
} from './types';

/** The record each kind of record event carries. */
interface RecordOfKind {
  tool: ToolRecord;
  proposal: ProposalRecord;
  decision: DecisionRecord;
  approval_request: ApprovalRequestRecord;
  approval_resolution: ApprovalResolutionRecord;
  approval_use: ApprovalUseRecord;
  observation: ObservationRecord;
  execution_refused: RefusedExecutionRecord;
  verification: VerificationRecord;
}

type Storage<K extends RecordKind> = {
  table: PgTable;
  toRow(link: EventLink, record: RecordOfKind[K]): Record<string, unknown>;
};

/** Where each kind of record is stored, and its row. */
const STORAGE: { [K in RecordKind]: Storage<K> } = {
  tool: { table: tools, toRow: toolCodec.toRow },
  proposal: { table: proposals, toRow: proposalCodec.toRow },
  decision: { table: decisions, toRow: decisionCodec.toRow },
  approval_request: { table: approvalRequests, toRow: approvalRequestCodec.toRow },
  approval_resolution: { table: approvalResolutions, toRow: approvalResolutionCodec.toRow },
  approval_use: { table: approvalUses, toRow: approvalUseCodec.toRow },
  observation: { table: observations, toRow: observationCodec.toRow },
  execution_refused: { table: refusedExecutions, toRow: refusedExecutionCodec.toRow },
  verification: { table: verifications, toRow: verificationCodec.toRow },
};

/**
 * What a records operation works with inside its ledger batch: the reads of its log on the
 * batch transaction (made once per operation; the lookups of a whole wave still coalesce),
 * the time it records, and writes that stage a record with its event.
 */
export interface RecordTransaction {
  readonly log: string;
  readonly reads: LogReads;
  /** The time to record: the records clock when one is set, else the batch's time. */
  time(): string;
  /** Stage the record's event (kind, entity = the record id, payload = the record) and its row: both or neither. */
  write<K extends RecordKind>(kind: K, actor: string, record: RecordOfKind[K]): RecordOfKind[K];
  /** See {@link StagingTransaction.claim}. */
  claim(key: string): void;
}

/** A records operation's view of its staging transaction. */
export function recordTransaction(
  tx: StagingTransaction,
  reads: LogReads,
  clock: (() => Date) | undefined,
): RecordTransaction {
  return {
    log: tx.log,
    reads,
    time: () => (clock ? clock().toISOString() : tx.now),
    write(kind, actor, record) {
      const { table, toRow } = STORAGE[kind] as Storage<typeof kind>;
      tx.stage(
        { kind, entity: record.id, actor, payload: record },
        { table, values: (link) => toRow(link, record) },
      );
      return record;
    },
    claim: (key) => tx.claim(key),
  };
}

/** Record ids: a type prefix for people reading logs, 122 random bits for uniqueness. */
export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}
