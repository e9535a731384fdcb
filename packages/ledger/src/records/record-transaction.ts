import { randomUUID } from 'node:crypto';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { EventLink, StagingTransaction } from '../ledger';
import {
  approvalRequestCodec,
  approvalResolutionCodec,
  approvalUseCodec,
  decisionCodec,
  executionClaimCodec,
  observationCodec,
  proposalCodec,
  RECORD_TABLE_OF,
  refusedExecutionCodec,
  toolCodec,
  verificationCodec,
} from './codec';
import type { LogReads } from './log-reads';
import { commitRecord, committedFieldRows } from './record-fields';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ExecutionClaimRecord,
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
  execution_claim: ExecutionClaimRecord;
  observation: ObservationRecord;
  execution_refused: RefusedExecutionRecord;
  verification: VerificationRecord;
}

type ToRow<K extends RecordKind> = (link: EventLink, record: RecordOfKind[K]) => Record<string, unknown>;

/** Each kind of record's row, pointing at its event. */
const TO_ROW: { [K in RecordKind]: ToRow<K> } = {
  tool: toolCodec.toRow,
  proposal: proposalCodec.toRow,
  decision: decisionCodec.toRow,
  approval_request: approvalRequestCodec.toRow,
  approval_resolution: approvalResolutionCodec.toRow,
  approval_use: approvalUseCodec.toRow,
  execution_claim: executionClaimCodec.toRow,
  observation: observationCodec.toRow,
  execution_refused: refusedExecutionCodec.toRow,
  verification: verificationCodec.toRow,
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
  /**
   * Stage the record's event (kind, entity = the record id, payload = the record) and its row:
   * both or neither. A proposal's arguments, an observation's result, a decision's repair and
   * a refused execution's body are committed key by key (`commitRecord`): the event and row hold their field hashes,
   * `event_fields` the content.
   */
  write<K extends RecordKind>(
    kind: K,
    actor: string,
    record: RecordOfKind[K],
    /** Rows of other tables written with it, linked to its event (a verification's `evidence_refs`). */
    more?: (link: EventLink) => Array<{ table: PgTable; values: Record<string, unknown> }>,
  ): RecordOfKind[K];
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
    write(kind, actor, record, more) {
      const toRow = TO_ROW[kind] as ToRow<typeof kind>;
      const table: PgTable = RECORD_TABLE_OF.get(kind)!.table;
      const committed = commitRecord(kind, record);
      if (committed === null) {
        tx.stage(
          { kind, entity: record.id, actor, payload: record },
          { table, values: (link) => toRow(link, record), ...(more ? { more } : {}) },
        );
        return record;
      }
      // The event and the row hold the field hashes; the content goes to event_fields.
      tx.stage(
        { kind, entity: record.id, actor, payload: committed.stored, commitment: committed.commitment },
        {
          table,
          values: (link) => toRow(link, committed.stored),
          more: (link) => [...committedFieldRows(link, committed.fields), ...(more?.(link) ?? [])],
        },
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
