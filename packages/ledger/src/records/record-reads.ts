import DataLoader from 'dataloader';
import { type SQL, sql } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { anyOf, selectRows } from '../batched-sql';
import type { Db } from '../database';
import {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  observations,
  proposals,
  tools,
} from '../schema/records';
import {
  approvalRequestCodec,
  approvalResolutionCodec,
  approvalUseCodec,
  decisionCodec,
  observationCodec,
  proposalCodec,
  toolCodec,
} from './codec';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalRecord,
  ToolRecord,
} from './types';

/** The reads the records operations make, each within one log. */
export interface RecordReads {
  proposalById(id: string): Promise<ProposalRecord | null>;
  proposalByKey(idempotencyKey: string): Promise<ProposalRecord | null>;
  decisionOf(proposalId: string): Promise<DecisionRecord | null>;
  latestTool(serverId: string, toolName: string): Promise<ToolRecord | null>;
  requestById(id: string): Promise<ApprovalRequestRecord | null>;
  resolutionOf(requestId: string): Promise<ApprovalResolutionRecord | null>;
  usesOf(requestId: string): Promise<ApprovalUseRecord[]>;
  observationOf(proposalId: string): Promise<ObservationRecord | null>;
  observationById(id: string): Promise<ObservationRecord | null>;
}

/**
 * Reads that many operations make at once, one query for all of them: the work of a ledger
 * wave runs side by side, so its operations ask for their proposals (decisions, tools, ...)
 * in the same tick, and DataLoader turns those into one `= any($keys)` query per kind of
 * read; so do the read-only routes of requests that arrive together (`db` = the database).
 * Nothing is cached (`cache: false`): a read after a write sees it.
 */
export function batchedReads(db: Db, log: string): RecordReads {
  let byLog = loaders.get(db);
  if (!byLog) {
    byLog = new Map();
    loaders.set(db, byLog);
  }
  let reads = byLog.get(log);
  if (!reads) {
    // Loaders cache nothing, so forgetting them is always safe: it bounds the readers kept
    // for the database itself (one per log ever read) on a server with many logs.
    if (byLog.size >= MAX_LOGS_KEPT) byLog.clear();
    reads = createBatchedReads(db, log);
    byLog.set(log, reads);
  }
  return reads;
}

const loaders = new WeakMap<Db, Map<string, RecordReads>>();
const MAX_LOGS_KEPT = 1_000;

/** A record table: every one is scoped by log. */
type RecordTable = PgTable & { logId: PgColumn };

/** A DataLoader of the rows matching each key; `fetch` gets every distinct key once. */
function rowsLoader<R>(fetch: (keys: string[]) => Promise<R[]>, keyOf: (row: R) => string) {
  return new DataLoader<string, R[]>(
    async (keys) => {
      // Text with NUL cannot be stored, so no row has it; sent along, it would make the
      // server refuse the whole array, and with it every other caller's read in this batch.
      const storable = [...new Set(keys)].filter((k) => !k.includes('\0'));
      const rows = storable.length > 0 ? await fetch(storable) : [];
      const grouped = new Map<string, R[]>();
      for (const row of rows) {
        const k = keyOf(row);
        const list = grouped.get(k);
        if (list) list.push(row);
        else grouped.set(k, [row]);
      }
      return keys.map((k) => grouped.get(k) ?? []);
    },
    { cache: false },
  );
}

function createBatchedReads(db: Db, log: string): RecordReads {
  /** The rows of `table` in this log whose `property` is one of the keys, one query per tick. */
  const by = <T extends RecordTable, K extends keyof T['$inferSelect'] & keyof T>(
    table: T,
    property: K,
    order?: SQL,
  ) =>
    rowsLoader(
      (keys) =>
        selectRows(
          db,
          table,
          sql`${table.logId} = ${log} and ${anyOf(table[property] as PgColumn, keys)}`,
          order,
        ),
      (row) => row[property] as string,
    );
  const proposalsById = by(proposals, 'id');
  const proposalsByKey = by(proposals, 'idempotencyKey');
  const decisionsByProposal = by(decisions, 'proposalId');
  const requestsById = by(approvalRequests, 'id');
  const resolutionsByRequest = by(approvalResolutions, 'requestId');
  const usesByRequest = by(approvalUses, 'requestId', sql`order by ${approvalUses.eventSeq}`);
  const observationsByProposal = by(observations, 'proposalId');
  const observationsById = by(observations, 'id');
  const toolKey = (serverId: string, toolName: string) => JSON.stringify([serverId, toolName]);
  const latestTools = rowsLoader(
    (keys) => {
      const pairs = keys.map((k) => JSON.parse(k) as [string, string]);
      // Every version of the asked tools, newest first: the first row per tool is its latest.
      return selectRows(
        db,
        tools,
        sql`${tools.logId} = ${log} and ${anyOf(tools.serverId, [...new Set(pairs.map((p) => p[0]))])}
          and ${anyOf(tools.toolName, [...new Set(pairs.map((p) => p[1]))])}`,
        sql`order by ${tools.version} desc`,
      );
    },
    (row) => toolKey(row.serverId, row.toolName),
  );

  const one = async <Row, R>(rows: Promise<Row[]>, toRecord: (row: Row) => R): Promise<R | null> => {
    const [row] = await rows;
    return row ? toRecord(row) : null;
  };
  return {
    proposalById: (id) => one(proposalsById.load(id), proposalCodec.toRecord),
    proposalByKey: (key) => one(proposalsByKey.load(key), proposalCodec.toRecord),
    decisionOf: (proposalId) => one(decisionsByProposal.load(proposalId), decisionCodec.toRecord),
    latestTool: (serverId, toolName) =>
      one(latestTools.load(toolKey(serverId, toolName)), toolCodec.toRecord),
    requestById: (id) => one(requestsById.load(id), approvalRequestCodec.toRecord),
    resolutionOf: (requestId) => one(resolutionsByRequest.load(requestId), approvalResolutionCodec.toRecord),
    usesOf: async (requestId) => (await usesByRequest.load(requestId)).map(approvalUseCodec.toRecord),
    observationOf: (proposalId) => one(observationsByProposal.load(proposalId), observationCodec.toRecord),
    observationById: (id) => one(observationsById.load(id), observationCodec.toRecord),
  };
}
