import { type ChainFailure, type StoredEvent, sameIdentity } from '@vouch/audit';
import { CLAIM_SWEEPER_IDENTITY, SETTLE_VERIFIER_IDENTITY } from '@vouch/records';
import { KEY_TIME_AHEAD_MS } from '../append-time';
import type { Database, Db } from '../database';
import type { KeyHistory, KeyWindow } from '../keys/key-history';
import { type LoadedKeyHistory, loadKeyHistory } from '../keys/load-key-history';
import { POLICY_CONFIGURED_KIND } from '../policy/policy-configuration';
import { createAuthorSignatureCheck } from '../signatures/author-signature-check';
import { recordOf } from '../signatures/author-signature-judge';
import { BUILT_IN_POLICY } from './built-in-decisions';
import { RECORD_TABLE_OF } from './codec';
import { isDefinitionReport } from './definition-report';
import { recordRuleFailure } from './record-rules';

/** A rule of who may write a record event, by the code verification reports it with. */
export type RecordWriterRule =
  /** The actor held no live key with a role the server requires for writing this record. */
  | 'WRITER_ROLE_FORBIDDEN'
  /** The actor's keys with that role may not use the log. */
  | 'WRITER_LOG_FORBIDDEN'
  /** The actor's keys with that role, for the log, may not act in the record's environment. */
  | 'WRITER_ENVIRONMENT_FORBIDDEN'
  /** The record names someone else as who wrote it (`registered_by`, `decided_by`). */
  | 'WRITER_MISMATCH'
  /** A gateway registered a tool it may not: not discovered, not irreversible, or over an earlier one. */
  | 'TOOL_REGISTRATION_FORBIDDEN'
  /** A tool registration's version is not the previous one's plus one. */
  | 'TOOL_VERSION_GAP';

/** What a record event must be written with: one of `roles`, in `environment` when the route asserts one. */
interface Requirement {
  roles: readonly string[];
  /** `undefined`: the route does not limit by environment; `null`: the record names none. */
  environment?: string | null;
}

type Json = Record<string, unknown>;
const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * Every record event of a log must be written by an actor the server would have let write it
 * (apps/api routes/access.ts, and each route's log and environment limits): at the event's
 * time, the actor held a live key (see `createKeyHistory`) with a role the route requires,
 * whose `logs` cover the log and, where the route asserts the record's environment, whose
 * `environments` cover it:
 *
 * - `tool`: `admin`; or `gateway` for the first registration of a discovered, irreversible
 *   tool only; `registered_by` is the actor; the version is the previous one's plus one;
 * - `proposal`, `approval_use`, `execution_claim`: `gateway`, in the proposal's environment;
 * - `decision`: by the built-in policy (`decided_by` `policy:built_in`), the proposal's
 *   requester with its `gateway` key, in the proposal's environment; otherwise `policy`, in
 *   the proposal's environment, with `decided_by` the actor;
 * - `approval_request`: `gateway` (built-in policy) or `policy` (external), in its environment;
 * - `approval_resolution`: `approver`, in the request's environment;
 * - `observation`, `execution_refused`: `gateway`; an observation by the claim sweeper
 *   (`vouch:claim-sweeper`), which the server writes as itself, passes;
 * - `verification`: `verifier`, or `gateway` (a gateway may run the server's verifiers); one
 *   by the settle verifier (`vouch:settle-verifier`), which the server writes as itself, passes
 *   when it verifies an `unknown` observation and supersedes nothing.
 *
 * Each break is a `RECORD_RULE_VIOLATION` at the event's seq with the record's table, id and
 * `actor`. A version gap is checked always; the rest only when the `system` log holds at
 * least one `api_key.created` event: a ledger used as a library, without the API, has no
 * keys and nothing that authorizes by them ({@link RecordWriterCheck.status}).
 *
 * Fed by the caller that streams the log (`verifyChain`): `add` every event in seq order,
 * `flush` after each page (the key history is read once, at the first record event).
 */
export function createRecordWriterCheck(
  database: Database,
  log: string,
  fail: (failure: ChainFailure) => void,
) {
  let loading: Promise<LoadedKeyHistory> | undefined;
  const keys = () => {
    loading ??= loadKeyHistory(database.db);
    return loading;
  };
  let page: StoredEvent[] = [];
  const proposals = new Map<string, { environment: string | null; requester: string }>();
  const requestEnvironments = new Map<string, string | null>();
  const toolVersions = new Map<string, number>();
  /** The latest version of each tool, to tell a gateway's definition report from a registration. */
  const latestTools = new Map<string, Json>();
  /** Observations with outcome `unknown`: the only ones the settle verifier verifies. */
  const unknownObservations = new Set<string>();
  const signatures = createAuthorSignatureCheck(log, fail);

  const judge = (history: KeyHistory | null, event: StoredEvent, record: Json) => {
    const report = (rule: RecordWriterRule, why: string) =>
      fail(recordRuleFailure(event, rule, why, { actor: event.actor }));
    const holds = (requirement: Requirement): boolean => {
      if (history === null) return true;
      const violation = writerViolation(history, event, log, requirement);
      if (violation !== null) report(violation.rule, violation.why);
      return violation === null;
    };
    const named = (field: string) => {
      const name = text(record[field]);
      if (history !== null && name !== null && !sameIdentity(name, event.actor)) {
        report('WRITER_MISMATCH', `names ${name} as its ${field}, but its actor is ${event.actor}`);
      }
    };
    const proposal = proposals.get(text(record.proposal_id) ?? '');
    const inProposal = (roles: readonly string[]) =>
      holds({ roles, environment: proposal?.environment ?? null });

    switch (event.kind) {
      case 'tool': {
        const key = `${text(record.server_id)}\u0000${text(record.tool_name)}`;
        const previous = toolVersions.get(key);
        if (record.version !== (previous ?? 0) + 1) {
          report(
            'TOOL_VERSION_GAP',
            `is version ${String(record.version)}, after version ${previous ?? 'none'}`,
          );
        }
        const before = latestTools.get(key);
        if (typeof record.version === 'number') {
          toolVersions.set(key, Math.max(previous ?? 0, record.version));
          if (record.version > (previous ?? 0)) latestTools.set(key, record);
        }
        named('registered_by');
        if (history === null) return;
        if (writerViolation(history, event, log, { roles: ['admin'] }) === null) return;
        if (!holds({ roles: ['admin', 'gateway'] })) return;
        if (before !== undefined && isDefinitionReport(before, record)) return;
        if (
          record.source !== 'discovery' ||
          record.side_effect !== 'irreversible' ||
          previous !== undefined
        ) {
          report(
            'TOOL_REGISTRATION_FORBIDDEN',
            `${event.actor} holds a gateway key, not admin: it may only register a tool it discovered, as irreversible, that was not registered before, or report a definition it saw`,
          );
        }
        return;
      }
      case 'proposal': {
        const target = record.target as Json | null | undefined;
        const environment = text(target?.env);
        proposals.set(text(record.id) ?? event.entity, {
          environment,
          requester: text(record.requester) ?? event.actor,
        });
        holds({ roles: ['gateway'], environment });
        return;
      }
      case 'decision': {
        if (record.decided_by === BUILT_IN_POLICY && record.source === 'built_in') {
          if (history !== null && proposal !== undefined && !sameIdentity(proposal.requester, event.actor)) {
            report(
              'WRITER_MISMATCH',
              `a built-in decision is recorded by the proposal's requester ${proposal.requester}, not ${event.actor}`,
            );
          }
          inProposal(['gateway']);
          return;
        }
        named('decided_by');
        inProposal(['policy']);
        return;
      }
      case 'approval_request': {
        const environment = text(record.environment);
        requestEnvironments.set(text(record.id) ?? event.entity, environment);
        holds({ roles: ['gateway', 'policy'], environment });
        return;
      }
      case 'approval_resolution':
        holds({
          roles: ['approver'],
          environment: requestEnvironments.get(text(record.request_id) ?? '') ?? null,
        });
        return;
      case 'approval_use':
      case 'execution_claim':
        inProposal(['gateway']);
        return;
      case 'observation':
        if (record.outcome === 'unknown') unknownObservations.add(text(record.id) ?? event.entity);
        if (sameIdentity(event.actor, CLAIM_SWEEPER_IDENTITY)) return;
        holds({ roles: ['gateway'] });
        return;
      case 'execution_refused':
        holds({ roles: ['gateway'] });
        return;
      case 'verification':
        if (sameIdentity(event.actor, SETTLE_VERIFIER_IDENTITY)) {
          // The server's own identity holds no key: what it may write is fixed instead.
          const observation = text(record.observation_id) ?? '';
          if (history !== null && !unknownObservations.has(observation)) {
            report('WRITER_ROLE_FORBIDDEN', `verifies ${observation}, which is not an unknown outcome`);
          } else if (history !== null && Array.isArray(record.supersedes)) {
            report('WRITER_ROLE_FORBIDDEN', 'supersedes a verification: the settle verifier only adds one');
          }
          return;
        }
        holds({ roles: VERIFICATION_WRITERS });
        return;
    }
  };

  return {
    add(event: StoredEvent): void {
      if (RECORD_TABLE_OF.has(event.kind) || event.kind === POLICY_CONFIGURED_KIND) page.push(event);
    },
    /** Judge the record events added since the last flush. */
    async flush(): Promise<void> {
      if (page.length === 0) return;
      const events = page;
      page = [];
      const { history, keysIssued } = await keys();
      for (const event of events) {
        const record = recordOf(event);
        if (record === null) continue;
        // A pin is the server's own: no writer role, only the server's signature to judge.
        if (event.kind !== POLICY_CONFIGURED_KIND) judge(keysIssued ? history : null, event, record);
        signatures.judgeRecord(history, event, record);
      }
    },
    /** How many records that speak for their author carry a signature, and how many do not. */
    authors: () => signatures.authors(),
    /** Whether the writers were judged: only where keys were ever issued. */
    async status(): Promise<'checked' | 'not_checked'> {
      return (await keys()).keysIssued ? 'checked' : 'not_checked';
    },
  };
}

export type RecordWriterCheck = ReturnType<typeof createRecordWriterCheck>;

/** The roles whose live key may record a verification: the verify route's, judged here and by the queue. */
export const VERIFICATION_WRITERS: readonly string[] = ['verifier', 'gateway'];

/** Whether an identity may record a verification now (see {@link verificationWriter}). */
export type VerificationWriter =
  | { refusal: { rule: RecordWriterRule; why: string } }
  | {
      refusal: null;
      /** Record it no earlier than this: the key it may record with was issued after `at`. */
      keyIssuedAt?: string;
    };

/**
 * Whether `identity` could record a verification in `log` at `at`, judged as `verifyChain`
 * will judge the record it would write (the `system` log's key events, not the key rows); it
 * may when no key was ever issued (a ledger used as a library). For work done in an
 * identity's name after the request that authenticated it, such as a queued verification
 * job, whose row says who asked but proves nothing.
 *
 * A key issued after `at` by a server whose clock runs ahead of this one (by no more than
 * `KEY_TIME_AHEAD_MS`) counts: the answer then carries its `keyIssuedAt`, for the
 * record to be written no earlier (`Caller.keyIssuedAt`).
 */
export async function verificationWriter(
  db: Db,
  log: string,
  identity: string,
  at: string,
): Promise<VerificationWriter> {
  const { history, keysIssued } = await loadKeyHistory(db);
  if (!keysIssued) return { refusal: null };
  const requirement = { roles: VERIFICATION_WRITERS };
  const refusal = writerViolation(history, { actor: identity, at }, log, requirement);
  if (refusal === null) return { refusal: null };
  const now = Date.parse(at);
  const issuedAhead = history
    .keysOf(identity)
    .map((key) => key.createdAt)
    .filter((created) => created > now && created <= now + KEY_TIME_AHEAD_MS)
    .sort((a, b) => a - b);
  for (const created of issuedAhead) {
    const keyIssuedAt = new Date(created).toISOString();
    if (writerViolation(history, { actor: identity, at: keyIssuedAt }, log, requirement) === null) {
      return { refusal: null, keyIssuedAt };
    }
  }
  return { refusal };
}

/** Why `event`'s actor could not have written it under `requirement`, or null when it could. */
function writerViolation(
  history: KeyHistory,
  event: Pick<StoredEvent, 'actor' | 'at'>,
  log: string,
  requirement: Requirement,
): { rule: RecordWriterRule; why: string } | null {
  const at = Date.parse(event.at);
  const roles = requirement.roles.join(' or ');
  const live = history
    .keysOf(event.actor)
    .filter(
      (key) =>
        key.roles.some((role) => requirement.roles.includes(role)) &&
        !Number.isNaN(at) &&
        key.createdAt <= at &&
        at < key.endsAt,
    );
  if (live.length === 0) {
    return { rule: 'WRITER_ROLE_FORBIDDEN', why: `${event.actor} held no live ${roles} key at ${event.at}` };
  }
  const forLog = live.filter((key) => key.logs === null || key.logs.includes(log));
  if (forLog.length === 0) {
    return {
      rule: 'WRITER_LOG_FORBIDDEN',
      why: `${event.actor}'s live ${roles} keys may not use log ${log}`,
    };
  }
  if (requirement.environment === undefined) return null;
  const environment = requirement.environment;
  if (!forLog.some((key) => mayActIn(key, environment))) {
    return {
      rule: 'WRITER_ENVIRONMENT_FORBIDDEN',
      why: `${event.actor}'s live ${roles} keys for log ${log} may not act in environment ${environment ?? '(none)'}`,
    };
  }
  return null;
}

/** The server's `assertEnvironment`: a key limited to environments acts only in one of them. */
function mayActIn(key: KeyWindow, environment: string | null): boolean {
  return key.environments === null || (environment !== null && key.environments.includes(environment));
}
