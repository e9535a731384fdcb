import { sameIdentity } from '@vouch/audit';
import DataLoader from 'dataloader';
import { getTableName, type SQL, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import {
  anyOf,
  type EventColumns,
  type EventLinkedTable,
  selectRows,
  selectRowsWithEvents,
} from '../batched-sql';
import type { Db } from '../database';
import type { IntegrityAlarm } from '../integrity-alarm';
import {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  executionClaims,
  observations,
  proposals,
  tools,
} from '../schema/records';
import {
  approvalRequestCodec,
  approvalResolutionCodec,
  approvalUseCodec,
  decisionCodec,
  executionClaimCodec,
  observationCodec,
  proposalCodec,
  RECORD_TABLES,
  toolCodec,
} from './codec';
import { type EventWithoutRow, eventsWithoutRows, type SubjectKind } from './event-subjects';
import { contentKey, openRecord, type RecordContent, readRecordContent } from './record-fields';
import {
  type CheckedTable,
  checkedRecord,
  integrityViolation,
  integrityViolationOf,
  raiseViolation,
} from './record-integrity';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ExecutionClaimRecord,
  ObservationRecord,
  ProposalRecord,
  ToolRecord,
} from './types';

/** The reads the records operations make, each within one log. */
export interface RecordReads {
  proposalById(id: string): Promise<ProposalRecord | null>;
  /** The requester's proposal under its idempotency key (keys are each requester's own). */
  proposalByKey(requester: string, idempotencyKey: string): Promise<ProposalRecord | null>;
  decisionOf(proposalId: string): Promise<DecisionRecord | null>;
  latestTool(serverId: string, toolName: string): Promise<ToolRecord | null>;
  /** One registration of a tool, by its id (what a decision cites as `tool_id`). */
  toolById(id: string): Promise<ToolRecord | null>;
  requestById(id: string): Promise<ApprovalRequestRecord | null>;
  resolutionOf(requestId: string): Promise<ApprovalResolutionRecord | null>;
  usesOf(requestId: string): Promise<ApprovalUseRecord[]>;
  observationOf(proposalId: string): Promise<ObservationRecord | null>;
  claimOf(proposalId: string): Promise<ExecutionClaimRecord | null>;
  observationById(id: string): Promise<ObservationRecord | null>;
}

/**
 * Reads that many operations make at once, one query for all of them: the work of a ledger
 * wave runs side by side, so its operations ask for their proposals (decisions, tools, ...)
 * in the same tick, and DataLoader turns those into one `= any($keys)` query per kind of
 * read; so do the read-only routes of requests that arrive together (`db` = the database).
 * Nothing is cached (`cache: false`): a read after a write sees it.
 *
 * Every row is checked against the event that recorded it, in the same query, before it
 * becomes a record: a row edited (or inserted) in the database behind the ledger's back
 * rejects the read of its key with `RECORD_INTEGRITY_VIOLATION`, so no operation acts on it,
 * and raises `alarm` (`RECORD_MISMATCH`) there and then, inside a batch or not: a tampered
 * row found by a read-only route makes the server not ready as surely as one found by a write.
 */
export function batchedReads(db: Db, log: string, alarm: IntegrityAlarm): RecordReads {
  let byDb = loaders.get(alarm);
  if (!byDb) {
    byDb = new WeakMap();
    loaders.set(alarm, byDb);
  }
  let byLog = byDb.get(db);
  if (!byLog) {
    byLog = new Map();
    byDb.set(db, byLog);
  }
  let reads = byLog.get(log);
  if (!reads) {
    // Loaders cache nothing, so forgetting them is always safe: it bounds the readers kept
    // for the database itself (one per log ever read) on a server with many logs.
    if (byLog.size >= MAX_LOGS_KEPT) byLog.clear();
    reads = createBatchedReads(db, log, alarm);
    byLog.set(log, reads);
  }
  return reads;
}

/** Per alarm (one per server), per database handle, per log. */
const loaders = new WeakMap<IntegrityAlarm, WeakMap<Db, Map<string, RecordReads>>>();
const MAX_LOGS_KEPT = 1_000;

/**
 * A DataLoader of the records matching each key; `fetch` gets every distinct key once. A
 * key whose rows fail their check rejects with the violation, raised on `alarm` once.
 */
function recordsLoader<Row, R>(
  alarm: IntegrityAlarm,
  fetch: (keys: string[]) => Promise<Row[]>,
  keyOf: (row: Row) => string,
  toRecords: (rows: Row[]) => R[],
) {
  return new DataLoader<string, R[]>(
    async (keys) => {
      // Text with NUL cannot be stored, so no row has it; sent along, it would make the
      // server refuse the whole array, and with it every other caller's read in this batch.
      const storable = [...new Set(keys)].filter((k) => !k.includes('\0'));
      const rows = storable.length > 0 ? await fetch(storable) : [];
      const grouped = new Map<string, Row[]>();
      for (const row of rows) {
        const k = keyOf(row);
        const list = grouped.get(k);
        if (list) list.push(row);
        else grouped.set(k, [row]);
      }
      // A row that fails its check fails the reads of its own key only, not the others
      // that shared the query.
      const results = new Map<string, R[] | Error>();
      for (const [k, list] of grouped) {
        try {
          results.set(k, toRecords(list));
        } catch (error) {
          const violation = integrityViolationOf(error);
          if (violation) raiseViolation(alarm, violation);
          results.set(k, error as Error);
        }
      }
      return keys.map((k) => results.get(k) ?? []);
    },
    { cache: false },
  );
}

/**
 * Whether reads check each row against its event (see `checkedRecord`). Always, except in
 * the benchmark that measures what the check costs (`@vouch/ledger/internal/benchmark`).
 */
let checkRows = true;

/** For the benchmark only: read without checking rows against their events. Never in a server. */
export function setRecordReadChecks(enabled: boolean): void {
  checkRows = enabled;
}

/** Each record table's event kind, from the codec's table list. */
const kindOfTable = new Map<PgTable, string>(RECORD_TABLES.map(({ kind, table }) => [table, kind]));

/**
 * The records of `table` in `log` matching `where`, each checked against its event in the
 * same statement (as every lookup in {@link batchedReads} is): for the lists a reviewer reads
 * and the ledger derives from, a proposal's verifications and refused executions.
 *
 * @throws LedgerError `RECORD_INTEGRITY_VIOLATION` for a row its event does not account for,
 * after raising `alarm` with it.
 */
export async function checkedRecords<T extends EventLinkedTable, R>(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  table: T,
  toRecord: (row: T['$inferSelect']) => R,
  where: SQL,
  order?: SQL,
): Promise<R[]> {
  if (!checkRows) return (await selectRows(db, table, where, order)).map(toRecord);
  type Row = T['$inferSelect'] & { id: string; eventSeq: number };
  const checked: CheckedTable<Row, R> = {
    name: getTableName(table),
    kind: kindOfTable.get(table)!,
    toRecord,
  };
  const rows = await selectRowsWithEvents(db, table, where, order);
  try {
    return rows.map((row) => checkedRecord(checked, log, row as Row & EventColumns));
  } catch (error) {
    const violation = integrityViolationOf(error);
    if (violation) raiseViolation(alarm, violation);
    throw error;
  }
}

/** The kinds of record read with their erasable member opened. */
type OpenedKind = 'proposal' | 'observation' | 'decision' | 'execution_refused';

/**
 * `records` of `kind` (checked rows of one log) with their erasable member opened (see
 * `openRecord`): one query for all of them.
 *
 * @throws LedgerError `RECORD_INTEGRITY_VIOLATION` for content its record did not commit to,
 * after raising `alarm` with it.
 */
export async function openedRecords<R extends { id: string }>(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  kind: OpenedKind,
  records: R[],
): Promise<R[]> {
  if (records.length === 0) return records;
  const content = await readRecordContent(
    db,
    log,
    [kind],
    records.map((r) => r.id),
  );
  try {
    return records.map((record) => openRecord(kind, log, record, content.get(contentKey(kind, record.id))));
  } catch (error) {
    const violation = integrityViolationOf(error);
    if (violation) raiseViolation(alarm, violation);
    throw error;
  }
}

function createBatchedReads(db: Db, log: string, alarm: IntegrityAlarm): RecordReads {
  /**
   * The rows of `table` in this log matching `where`, each checked against its event in the
   * same statement before it becomes a record: every lookup the records operations act on
   * (the decision, the approval request, its resolution and uses, the tool the policy reads,
   * the proposal) refuses a row edited behind the ledger's back.
   */
  const load = <T extends EventLinkedTable>(table: T, where: SQL, order?: SQL) =>
    checkRows ? selectRowsWithEvents(db, table, where, order) : selectRows(db, table, where, order);
  const checker = <T extends EventLinkedTable, R>(table: T, toRecord: (row: T['$inferSelect']) => R) => {
    type Row = T['$inferSelect'] & { id: string; eventSeq: number };
    const checked: CheckedTable<Row, R> = {
      name: getTableName(table),
      kind: kindOfTable.get(table)!,
      toRecord,
    };
    return (row: T['$inferSelect']): R =>
      checkRows ? checkedRecord(checked, log, row as Row & EventColumns) : toRecord(row);
  };

  /** The records of `table` in this log whose `property` is one of the keys, one query per tick. */
  const by = <T extends EventLinkedTable, K extends keyof T['$inferSelect'] & keyof T, R>(
    table: T,
    property: K,
    toRecord: (row: T['$inferSelect']) => R,
    order?: SQL,
  ) => {
    const check = checker(table, toRecord);
    return recordsLoader(
      alarm,
      (keys) =>
        load(table, sql`${table.logId} = ${log} and ${anyOf(table[property] as PgColumn, keys)}`, order),
      (row) => row[property] as string,
      (rows) => rows.map(check),
    );
  };
  const proposalsById = by(proposals, 'id', proposalCodec.toRecord);
  const proposalsByKey = by(proposals, 'idempotencyKey', proposalCodec.toRecord);
  const decisionsByProposal = by(decisions, 'proposalId', decisionCodec.toRecord);
  const requestsById = by(approvalRequests, 'id', approvalRequestCodec.toRecord);
  const resolutionsByRequest = by(approvalResolutions, 'requestId', approvalResolutionCodec.toRecord);
  const usesByRequest = by(
    approvalUses,
    'requestId',
    approvalUseCodec.toRecord,
    sql`order by ${approvalUses.eventSeq}`,
  );
  const observationsByProposal = by(observations, 'proposalId', observationCodec.toRecord);
  const observationsById = by(observations, 'id', observationCodec.toRecord);
  const claimsByProposal = by(executionClaims, 'proposalId', executionClaimCodec.toRecord);
  const toolsById = by(tools, 'id', toolCodec.toRecord);
  const toolKey = (serverId: string, toolName: string) => JSON.stringify([serverId, toolName]);
  const checkTool = checker(tools, toolCodec.toRecord);
  const latestTools = recordsLoader(
    alarm,
    (keys) => {
      const pairs = keys.map((k) => JSON.parse(k) as [string, string]);
      // Every version of the asked tools, newest first: the first row per tool is its latest.
      return load(
        tools,
        sql`${tools.logId} = ${log} and ${anyOf(tools.serverId, [...new Set(pairs.map((p) => p[0]))])}
          and ${anyOf(tools.toolName, [...new Set(pairs.map((p) => p[1]))])}`,
        sql`order by ${tools.version} desc`,
      );
    },
    (row) => toolKey(row.serverId, row.toolName),
    // Only the latest version is read by anyone: only it is checked.
    (rows) => rows.slice(0, 1).map(checkTool),
  );

  const one = async <R>(records: Promise<R[]>): Promise<R | null> => (await records)[0] ?? null;
  /** The events of each (kind, subject) asked for whose rows are gone: one query per tick. */
  const eventsWithoutRow = new DataLoader<string, EventWithoutRow[]>(
    async (keys) => {
      const pairs = keys.map((k) => JSON.parse(k) as [SubjectKind, string]);
      const subjects = [...new Set(pairs.map(([, subject]) => subject))].filter((s) => !s.includes('\0'));
      const found = await eventsWithoutRows(db, log, subjects);
      return pairs.map(([kind, subject]) => found.filter((e) => e.kind === kind && e.subject === subject));
    },
    { cache: false },
  );
  /**
   * `records` of `kind` about `subject` (a proposal, an approval request), refused when an
   * event of that kind about it has lost its row: these reads decide whether an execution
   * or a single-use approval already happened, and a deleted row must not make it look as
   * if it had not (see `event-subjects.ts`).
   */
  const withEveryRow = async <R>(kind: SubjectKind, subject: string, records: Promise<R[]>): Promise<R[]> => {
    if (!checkRows) return records;
    const [found, gone] = await Promise.all([
      records,
      eventsWithoutRow.load(JSON.stringify([kind, subject])),
    ]);
    const first = gone[0];
    if (first === undefined) return found;
    const violation = {
      log,
      table: first.table,
      id: first.entity,
      seq: first.seq,
      reason: 'RECORD_MISSING',
    } as const;
    raiseViolation(alarm, violation);
    throw integrityViolation(violation);
  };
  /**
   * The content of committed records' erasable members (see `openRecord`): one query per
   * tick for every kind, keyed by kind and record id.
   */
  const contents = new DataLoader<string, RecordContent | undefined>(
    async (keys) => {
      const pairs = keys.map((k) => k.split('\0') as [OpenedKind, string]);
      const content = await readRecordContent(
        db,
        log,
        [...new Set(pairs.map(([kind]) => kind))],
        pairs.map(([, id]) => id),
      );
      return keys.map((k) => content.get(k));
    },
    { cache: false },
  );
  const opened = async <R extends { id: string }>(
    kind: OpenedKind,
    records: Promise<R[]>,
  ): Promise<R | null> => {
    const record = await one(records);
    if (record === null) return null;
    const content = await contents.load(contentKey(kind, record.id));
    try {
      return openRecord(kind, log, record, content);
    } catch (error) {
      const violation = integrityViolationOf(error);
      if (violation) raiseViolation(alarm, violation);
      throw error;
    }
  };
  return {
    proposalById: (id) => opened('proposal', proposalsById.load(id)),
    proposalByKey: (requester, key) =>
      opened(
        'proposal',
        proposalsByKey.load(key).then((found) => found.filter((p) => sameIdentity(p.requester, requester))),
      ),
    decisionOf: (proposalId) => opened('decision', decisionsByProposal.load(proposalId)),
    latestTool: (serverId, toolName) => one(latestTools.load(toolKey(serverId, toolName))),
    toolById: (id) => one(toolsById.load(id)),
    requestById: (id) => one(requestsById.load(id)),
    resolutionOf: (requestId) => one(resolutionsByRequest.load(requestId)),
    usesOf: (requestId) => withEveryRow('approval_use', requestId, usesByRequest.load(requestId)),
    observationOf: (proposalId) =>
      opened('observation', withEveryRow('observation', proposalId, observationsByProposal.load(proposalId))),
    observationById: (id) => opened('observation', observationsById.load(id)),
    claimOf: (proposalId) =>
      one(withEveryRow('execution_claim', proposalId, claimsByProposal.load(proposalId))),
  };
}
