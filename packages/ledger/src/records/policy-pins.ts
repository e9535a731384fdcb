import { payloadHashOf } from '@vouch/audit';
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../database';
import { LedgerError } from '../errors';
import type { IntegrityAlarm } from '../integrity-alarm';
import type { Ledger } from '../ledger';
import {
  canonicalPolicy,
  decisionSourceBreak,
  PIN_POLICY_ACTION,
  POLICY_CONFIGURED_KIND,
  POLICY_ENTITY,
  POLICY_FORMAT,
  POLICY_PINNER,
  type PolicyConfiguration,
  type PolicyConfiguredPayload,
  pinnedPolicyOf,
  samePolicy,
} from '../policy/policy-configuration';
import { auditEvents } from '../schema/core';
import { decisions } from '../schema/records';
import { judgeRecordSignature } from '../signatures/judge-record-signature';
import { keyHistoryThrough } from '../signatures/request-signature';
import type { LogReads } from './log-reads';
import type { ServerSigner } from './records-runtime';
import type { DecisionRecord } from './types';

/**
 * The policy pinned in `log` before `before` (a seq, or a SQL expression of one; default:
 * the whole log): undefined when nothing was pinned, null when the pin cannot be read (its
 * payload is not what its hash names, or pins no policy), which no decision obeys.
 */
async function pinBefore(
  db: Db,
  log: string,
  owner: object,
  before?: ReturnType<typeof sql>,
): Promise<{ seq: number; policy: PolicyConfiguration | null } | undefined> {
  const [row] = await db
    .select({
      seq: auditEvents.seq,
      payload: auditEvents.payload,
      payloadHash: auditEvents.payloadHash,
      actor: auditEvents.actor,
      at: auditEvents.recordedAt,
    })
    .from(auditEvents)
    .where(
      and(
        eq(auditEvents.logId, log),
        eq(auditEvents.entityId, POLICY_ENTITY),
        eq(auditEvents.kind, POLICY_CONFIGURED_KIND),
        before === undefined ? undefined : sql`${auditEvents.seq} < ${before}`,
      ),
    )
    .orderBy(desc(auditEvents.seq))
    .limit(1);
  if (row === undefined) return undefined;
  if (payloadHashOf(row.payload) !== row.payloadHash) return { seq: row.seq, policy: null };
  let payload: unknown;
  try {
    payload = JSON.parse(row.payload);
  } catch {
    return { seq: row.seq, policy: null };
  }
  if (typeof payload !== 'object' || payload === null) return { seq: row.seq, policy: null };
  // A pin in the server's name that its key had to sign and did not pins nothing.
  const history = await keyHistoryThrough(db, owner);
  const event = { seq: Number(row.seq), kind: POLICY_CONFIGURED_KIND, actor: row.actor, at: row.at };
  const unsigned = judgeRecordSignature(
    history,
    log,
    event as Parameters<typeof judgeRecordSignature>[2],
    payload as Record<string, unknown>,
    new Set(),
  );
  return { seq: row.seq, policy: unsigned === null ? pinnedPolicyOf(payload) : null };
}

/**
 * Why the stored `decision` is not one the policy pinned in `log` when it was recorded gives
 * (`decisionSourceBreak`), or null: what the server checks before it acts on a decision or
 * shows it. A break raises the integrity alarm.
 */
export async function unpinnedDecision(
  db: Db,
  log: string,
  alarm: IntegrityAlarm,
  decision: DecisionRecord,
): Promise<string | null> {
  const at = sql`(select ${decisions.eventSeq} from ${decisions} where ${decisions.logId} = ${log} and ${decisions.id} = ${decision.id})`;
  const pin = await pinBefore(db, log, alarm, at);
  const broken = decisionSourceBreak(pin === undefined ? undefined : pin.policy, decision);
  if (broken === null) return null;
  const message = `decision ${decision.id} in log ${log} was ${broken}: the server never wrote it and refuses to act on it; run \`vouch verify\``;
  alarm.raise({ code: 'RECORD_RULE_VIOLATION', log, table: 'decisions', message });
  return message;
}

/**
 * Refuse to show or act on a decision from another source than the policy pinned then:
 * `DECISION_SOURCE_NOT_PINNED` (the alarm is raised by the read).
 */
export async function requirePinnedDecision(
  reads: Pick<LogReads, 'unpinnedDecision'>,
  decision: DecisionRecord | null,
): Promise<void> {
  const unpinned = decision === null ? null : await reads.unpinnedDecision(decision);
  if (unpinned !== null) {
    throw new LedgerError('DECISION_SOURCE_NOT_PINNED', unpinned, {
      details: { decision_id: decision!.id, source: decision!.source, decided_by: decision!.decided_by },
    });
  }
}

/**
 * Refuse to record a decision the policy this service pins would not give (`decide`: an
 * engine posting to a server that decides with the built-in policy, or as another identity
 * or source than the engine it asks): `DECISION_SOURCE_NOT_PINNED`, nothing written.
 */
export function refuseUnpinnedSource(
  pinned: PolicyConfiguration | undefined,
  decision: Pick<DecisionRecord, 'source' | 'decided_by'>,
): void {
  const broken = decisionSourceBreak(pinned, decision);
  if (broken !== null) {
    throw new LedgerError(
      'DECISION_SOURCE_NOT_PINNED',
      `a decision ${broken}: this server does not record it`,
      {
        details: { source: decision.source, decided_by: decision.decided_by },
      },
    );
  }
}

/**
 * Pins `policy` in each log a records service decides in, before its first decision there
 * (in this process): a `policy.configured` event is appended when the log's latest pin is
 * another policy, or there is none. Two processes with the same policy may both append one;
 * the second changes nothing.
 */
export function createPolicyPinner(
  ledger: Ledger,
  policy: PolicyConfiguration,
  serverSigner: (actor: string) => Promise<ServerSigner | undefined>,
) {
  const pinned = canonicalPolicy(policy);
  const done = new Map<string, Promise<void>>();
  const pin = async (log: string) => {
    const latest = await pinBefore(ledger.database.db, log, ledger.database);
    if (latest?.policy && samePolicy(latest.policy, pinned)) return;
    const signature = (await serverSigner(POLICY_PINNER))?.({
      log,
      action: PIN_POLICY_ACTION,
      actor: POLICY_PINNER,
      claims: pinned,
    });
    const payload: PolicyConfiguredPayload = {
      format: POLICY_FORMAT,
      policy: pinned,
      ...(signature ? { signature } : {}),
    };
    await ledger.append({
      log,
      kind: POLICY_CONFIGURED_KIND,
      entity: POLICY_ENTITY,
      actor: POLICY_PINNER,
      payload,
    });
  };
  return {
    policy: pinned,
    /** Make sure `log` pins this policy (once per log and process; again after a failure). */
    ensure(log: string): Promise<void> {
      let pinning = done.get(log);
      if (pinning === undefined) {
        pinning = pin(log);
        done.set(log, pinning);
        pinning.catch(() => done.delete(log));
      }
      return pinning;
    },
  };
}

export type PolicyPinner = ReturnType<typeof createPolicyPinner>;
