import type { ApprovalStatus } from '@vouch/records';
import { and, asc, desc, eq, gt, gte, isNull, lt, or, type SQL, sql } from 'drizzle-orm';
import { anyOf } from '../batched-sql';
import type { Db } from '../database';
import type { IntegrityAlarm } from '../integrity-alarm';
import {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  evidenceRefs,
  executionClaims,
  observations,
  proposals,
  refusedExecutions,
  tools,
  verifications,
} from '../schema/records';
import { refusedExecutionCodec, toolCodec, verificationCodec } from './codec';
import { checkedRecords } from './record-reads';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationRecord,
} from './types';

/**
 * The reads of record tables that are lists and searches, each scoped to one log. They take a
 * `Db` so the same query runs inside a ledger transaction (under the log's lock) or on the
 * plain database. Lookups of one record by id or key are in `record-reads.ts`, coalesced.
 */

/**
 * The latest registration of every tool in a log, by server then tool name, each checked
 * against its event: the registry decides what a proposal needs, so a row inserted behind
 * the ledger's back (a higher version, say) must refuse, not be listed or acted on.
 */
export function listLatestTools(db: Db, log: string, alarm: IntegrityAlarm): Promise<ToolRecord[]> {
  const latest = sql`${tools.version} = (select max(${sql.raw('"newer"."version"')}) from ${tools} as "newer"
    where "newer"."log_id" = ${tools.logId} and "newer"."server_id" = ${tools.serverId}
    and "newer"."tool_name" = ${tools.toolName})`;
  return checkedRecords(
    db,
    log,
    alarm,
    tools,
    toolCodec.toRecord,
    sql`${tools.logId} = ${log} and ${latest}`,
    sql`order by ${tools.serverId}, ${tools.toolName}`,
  );
}

/**
 * The ids of approval requests that a new proposal with this payload, requester, server and
 * tool could wait on (pending, approved for a window still open, or approved once and
 * unused), newest first. This query only narrows the search, on the stored columns: the
 * caller reads each request, its answer and its uses through the checked reads and decides
 * with `isReusableRequest`, so a row inserted or edited behind the ledger's back can at most
 * hide a candidate (a new request is then opened), never make one reusable.
 */
export async function reusableRequestIds(
  db: Db,
  log: string,
  scope: { requester: string; server_id: string; tool_name: string; payload_hash: string },
  now: string,
): Promise<string[]> {
  const rows = await db
    .select({ id: approvalRequests.id })
    .from(approvalRequests)
    .leftJoin(
      approvalResolutions,
      and(
        eq(approvalResolutions.logId, approvalRequests.logId),
        eq(approvalResolutions.requestId, approvalRequests.id),
      ),
    )
    .where(
      and(
        eq(approvalRequests.logId, log),
        eq(approvalRequests.requester, scope.requester),
        eq(approvalRequests.serverId, scope.server_id),
        eq(approvalRequests.toolName, scope.tool_name),
        eq(approvalRequests.payloadHash, scope.payload_hash),
        or(
          and(isNull(approvalResolutions.id), gt(approvalRequests.expiresAt, now)),
          and(
            eq(approvalResolutions.resolution, 'approved'),
            or(eq(approvalResolutions.validity, 'window'), sql`not ${usedOnce}`),
            gt(approvalResolutions.validUntil, now),
          ),
        ),
      ),
    )
    .orderBy(desc(approvalRequests.eventSeq))
    .limit(10);
  return [...new Set(rows.map((row) => row.id))];
}

/**
 * The registration of a tool that was in force when decision `decisionId` was recorded: its
 * latest version among those recorded before the decision's event (what `propose` read),
 * checked against its event. Null when none was.
 */
export async function toolAtDecision(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  tool: { serverId: string; toolName: string },
  decisionId: string,
): Promise<ToolRecord | null> {
  const [inForce] = await checkedRecords(
    db,
    log,
    alarm,
    tools,
    toolCodec.toRecord,
    sql`${tools.logId} = ${log} and ${tools.serverId} = ${tool.serverId} and ${tools.toolName} = ${tool.toolName}
      and ${tools.eventSeq} < (select ${decisions.eventSeq} from ${decisions}
        where ${decisions.logId} = ${log} and ${decisions.id} = ${decisionId})`,
    sql`order by ${tools.version} desc limit 1`,
  );
  return inForce ?? null;
}

/** A proposal's refused executions, in chain order, each checked against its event. */
export function refusalsOf(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  proposalId: string,
): Promise<RefusedExecutionRecord[]> {
  return checkedRecords(
    db,
    log,
    alarm,
    refusedExecutions,
    refusedExecutionCodec.toRecord,
    sql`${refusedExecutions.logId} = ${log} and ${refusedExecutions.proposalId} = ${proposalId}`,
    sql`order by ${refusedExecutions.eventSeq}`,
  );
}

/**
 * A proposal's verifications, in chain order, each checked against its event: its status is
 * derived from them, so an edited row must not change what a reviewer reads.
 */
export function verificationsOf(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  proposalId: string,
): Promise<VerificationRecord[]> {
  return checkedRecords(
    db,
    log,
    alarm,
    verifications,
    verificationCodec.toRecord,
    sql`${verifications.logId} = ${log} and ${verifications.proposalId} = ${proposalId}`,
    sql`order by ${verifications.eventSeq}`,
  );
}

/**
 * The verifications that first used any of `refs` as proof (the `evidence_refs` index), in
 * chain order, each checked against its event: the caller reads each reference's owner from
 * the records themselves (`ownersIn`), so an index row the chain does not account for
 * decides nothing.
 */
export function firstUsesOf(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  refs: readonly string[],
): Promise<VerificationRecord[]> {
  if (refs.length === 0) return Promise.resolve([]);
  const indexed = sql`select ${evidenceRefs.eventSeq} from ${evidenceRefs} where ${evidenceRefs.logId} = ${log} and ${anyOf(evidenceRefs.ref, refs)}`;
  return checkedRecords(
    db,
    log,
    alarm,
    verifications,
    verificationCodec.toRecord,
    sql`${verifications.logId} = ${log} and ${verifications.eventSeq} in (${indexed})`,
    sql`order by ${verifications.eventSeq}`,
  );
}

/** Where an approval request stands (declared with the records). */
export type { ApprovalStatus } from '@vouch/records';

const usedOnce = sql`(${approvalResolutions.validity} = 'once' and exists (select 1 from ${approvalUses} where ${approvalUses.logId} = ${approvalRequests.logId} and ${approvalUses.requestId} = ${approvalRequests.id}))`;

/** The SQL condition for each approval status at `now`; the same rules as {@link approvalStatusOf}. */
function statusCondition(status: ApprovalStatus, now: string): SQL {
  switch (status) {
    case 'pending':
      return sql`(${approvalResolutions.id} is null and ${approvalRequests.expiresAt} > ${now})`;
    case 'denied':
      return sql`(${approvalResolutions.resolution} = 'denied')`;
    case 'used':
      return sql`(${approvalResolutions.resolution} = 'approved' and ${usedOnce})`;
    case 'approved':
      return sql`(${approvalResolutions.resolution} = 'approved' and not ${usedOnce} and ${approvalResolutions.validUntil} > ${now})`;
    case 'expired':
      return sql`((${approvalResolutions.id} is null and ${approvalRequests.expiresAt} <= ${now}) or (${approvalResolutions.resolution} = 'approved' and not ${usedOnce} and ${approvalResolutions.validUntil} <= ${now}))`;
  }
}

/** The status of one request from its resolution and uses at `now`. */
export function approvalStatusOf(
  request: ApprovalRequestRecord,
  resolution: ApprovalResolutionRecord | null,
  uses: readonly ApprovalUseRecord[],
  now: string,
): ApprovalStatus {
  // ISO 8601 UTC strings of one format order like the times they name.
  if (resolution === null) return request.expires_at > now ? 'pending' : 'expired';
  if (resolution.resolution === 'denied') return 'denied';
  if (resolution.validity === 'once' && uses.length > 0) return 'used';
  return resolution.valid_until !== null && resolution.valid_until > now ? 'approved' : 'expired';
}

/**
 * Approval requests of a log, oldest first, optionally of one status; keyset-paged by event
 * seq. The status narrows on the stored columns; each request listed is read through the
 * checked reads, and its status derived again from its checked answer and uses, by the caller.
 */
export async function listRequestIds(
  db: Db,
  log: string,
  options: { status?: ApprovalStatus; now: string; after?: number; limit: number },
): Promise<Array<{ seq: number; id: string }>> {
  const rows = await db
    .select({ seq: approvalRequests.eventSeq, id: approvalRequests.id })
    .from(approvalRequests)
    .leftJoin(
      approvalResolutions,
      and(
        eq(approvalResolutions.logId, approvalRequests.logId),
        eq(approvalResolutions.requestId, approvalRequests.id),
      ),
    )
    .where(
      and(
        eq(approvalRequests.logId, log),
        gt(approvalRequests.eventSeq, options.after ?? 0),
        options.status ? statusCondition(options.status, options.now) : undefined,
      ),
    )
    .orderBy(asc(approvalRequests.eventSeq))
    .limit(options.limit);
  return rows;
}

/**
 * Execution claims past their deadline with no observation, oldest deadline first, in every
 * log (`log` given: in that one): what the claim sweep records as `unknown`. Only narrows
 * the search; the sweep re-reads each under its log's lock before it writes.
 */
export async function lapsedClaims(
  db: Db,
  options: { now: string; limit: number; log?: string | undefined },
): Promise<Array<{ log: string; proposalId: string }>> {
  const unobserved = sql`not exists (select 1 from ${observations} where ${observations.logId} = ${executionClaims.logId} and ${observations.proposalId} = ${executionClaims.proposalId})`;
  return db
    .select({ log: executionClaims.logId, proposalId: executionClaims.proposalId })
    .from(executionClaims)
    .where(
      and(
        // ISO 8601 UTC text (toISOString) orders as time does.
        sql`${executionClaims.deadline} <= ${options.now}`,
        options.log === undefined ? undefined : eq(executionClaims.logId, options.log),
        unobserved,
      ),
    )
    .orderBy(asc(executionClaims.deadline))
    .limit(options.limit);
}

/**
 * Proposals with no decision, in log then chain order after `after` (a keyset cursor, so a
 * caller walks them all in pages, however many stay undecided), in every log or one: what an
 * external engine the server asks has not answered yet. Only narrows the search; a decision
 * is written under the proposal's lock, and one already there is `DECISION_EXISTS`.
 */
export async function undecidedProposals(
  db: Db,
  options: { limit: number; log?: string | undefined; after?: { log: string; seq: number } | undefined },
): Promise<Array<{ log: string; seq: number; proposalId: string }>> {
  const undecided = sql`not exists (select 1 from ${decisions} where ${decisions.logId} = ${proposals.logId} and ${decisions.proposalId} = ${proposals.id})`;
  const after = options.after;
  return db
    .select({ log: proposals.logId, seq: proposals.eventSeq, proposalId: proposals.id })
    .from(proposals)
    .where(
      and(
        options.log === undefined ? undefined : eq(proposals.logId, options.log),
        after === undefined
          ? undefined
          : sql`(${proposals.logId}, ${proposals.eventSeq}) > (${after.log}, ${after.seq})`,
        undecided,
      ),
    )
    .orderBy(asc(proposals.logId), asc(proposals.eventSeq))
    .limit(options.limit);
}

/** What a proposal list can be narrowed to by the stored columns; times are ISO 8601 UTC. */
export interface ProposalColumnFilter {
  tool_name?: string;
  server_id?: string;
  requester?: string;
  environment?: string;
  /** `proposed_at` at or after this time. */
  since?: string;
  /** `proposed_at` before this time. */
  until?: string;
}

/**
 * The ids of a log's proposals in chain order after seq `after`, narrowed by their stored
 * columns; keyset-paged by event seq, so a page never shifts when new proposals arrive. Only
 * narrows: the caller reads each proposal through the checked reads.
 */
export async function listProposalRows(
  db: Db,
  log: string,
  options: ProposalColumnFilter & { after: number; limit: number },
): Promise<Array<{ seq: number; id: string; environment: string | null }>> {
  return db
    .select({ seq: proposals.eventSeq, id: proposals.id, environment: proposals.targetEnv })
    .from(proposals)
    .where(
      and(
        eq(proposals.logId, log),
        gt(proposals.eventSeq, options.after),
        options.tool_name !== undefined ? eq(proposals.toolName, options.tool_name) : undefined,
        options.server_id !== undefined ? eq(proposals.serverId, options.server_id) : undefined,
        options.requester !== undefined ? eq(proposals.requester, options.requester) : undefined,
        options.environment !== undefined ? eq(proposals.targetEnv, options.environment) : undefined,
        options.since !== undefined ? gte(proposals.proposedAt, options.since) : undefined,
        options.until !== undefined ? lt(proposals.proposedAt, options.until) : undefined,
      ),
    )
    .orderBy(asc(proposals.eventSeq))
    .limit(options.limit);
}

/**
 * Verification records of a log in chain order after seq `after`, optionally of one recorded
 * status; keyset-paged by event seq, each record checked against its event.
 */
export async function listVerificationRecords(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  options: { status?: VerificationRecord['status']; after: number; limit: number },
): Promise<Array<{ seq: number; verification: VerificationRecord }>> {
  const page = await db
    .select({ seq: verifications.eventSeq, id: verifications.id })
    .from(verifications)
    .where(
      and(
        eq(verifications.logId, log),
        gt(verifications.eventSeq, options.after),
        options.status !== undefined ? eq(verifications.status, options.status) : undefined,
      ),
    )
    .orderBy(asc(verifications.eventSeq))
    .limit(options.limit);
  if (page.length === 0) return [];
  const ids = page.map((row) => row.id);
  const records = await checkedRecords(
    db,
    log,
    alarm,
    verifications,
    verificationCodec.toRecord,
    sql`${verifications.logId} = ${log} and ${anyOf(verifications.id, ids)}`,
  );
  const byId = new Map(records.map((record) => [record.id, record]));
  return page.flatMap((row) => {
    const verification = byId.get(row.id);
    return verification ? [{ seq: row.seq, verification }] : [];
  });
}
