import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  type PgColumn,
  pgTable,
  primaryKey,
  text,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { auditEvents } from './core';

/**
 * The record tables. Each row is one record and carries the log and seq of the audit event
 * whose payload is that record, written in the same transaction; a foreign key to the event
 * makes a row without its event impossible for any writer short of disabling triggers, and
 * chain verification re-checks the pairing from the other side.
 *
 * Columns that hold JSON are `text` with the canonical JSON (RFC 8785), not jsonb: jsonb
 * would refuse `\u0000` in a string and rewrite numbers, and the row must rebuild the
 * event's payload byte for byte. State changes are new rows (a resolution, a use), never
 * updates: migrations attach `vouch_refuse_change()` to every table here.
 */

// Every record table starts with these; `event_seq` links the row to its audit event.
const recordColumns = () => ({
  logId: text('log_id').notNull(),
  id: text('id').notNull(),
  eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
});

const eventLink = (name: string, t: { logId: PgColumn; eventSeq: PgColumn }) =>
  foreignKey({
    name: `${name}_event_fk`,
    columns: [t.logId, t.eventSeq],
    foreignColumns: [auditEvents.logId, auditEvents.seq],
  });

const inList = (column: PgColumn, values: readonly string[]) =>
  sql`${column} in (${sql.join(
    values.map((v) => sql.raw(`'${v}'`)),
    sql`, `,
  )})`;

const SIDE_EFFECTS = ['read_only', 'idempotent', 'compensatable', 'irreversible'] as const;

/** The tool registry of each log; a new registration of the same tool is the next version. */
export const tools = pgTable(
  'tools',
  {
    ...recordColumns(),
    serverId: text('server_id').notNull(),
    toolName: text('tool_name').notNull(),
    version: integer('version').notNull(),
    sideEffect: text('side_effect').notNull(),
    requiredScopes: text('required_scopes').notNull(),
    allowedEnvironments: text('allowed_environments').notNull(),
    dryRunTool: text('dry_run_tool'),
    compensationTool: text('compensation_tool'),
    approvalRequired: boolean('approval_required').notNull(),
    requiresTargetId: boolean('requires_target_id').notNull(),
    maxApprovalWindowSeconds: integer('max_approval_window_seconds'),
    source: text('source').notNull(),
    /** JSON array; null when the registration declared none (the field is then absent from the record). */
    writes: text('writes'),
    /**
     * JSON array of the postconditions the operator requires of every call (name, params bound
     * to the proposal, verifiers allowed to prove it); null when none (absent from the record).
     */
    postconditions: text('postconditions'),
    /** `block` or `warn`: what an unproven precondition does at authorize; null means `block` (absent). */
    unprovenPreconditions: text('unproven_preconditions'),
    /** SHA-256 of the pinned definition; null when none was reported (absent from the record). */
    definitionSha256: text('definition_sha256'),
    /** A differing definition seen since, awaiting approval; null when none (absent). */
    changedDefinitionSha256: text('changed_definition_sha256'),
    registeredBy: text('registered_by').notNull(),
    registeredAt: text('registered_at').notNull(),
    /** The registrar's author signature (`tool.register`, since 0028); null when unsigned. */
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'tools_pk', columns: [t.logId, t.id] }),
    uniqueIndex('tools_signature_once').on(t.logId, sql`md5(${t.signature})`),
    unique('tools_event').on(t.logId, t.eventSeq),
    unique('tools_version').on(t.logId, t.serverId, t.toolName, t.version),
    eventLink('tools', t),
    check('tools_side_effect', inList(t.sideEffect, SIDE_EFFECTS)),
    check('tools_source', inList(t.source, ['manual', 'discovery'])),
  ],
);

/** Proposals: one per (log, idempotency key), enforced here and not only in code. */
export const proposals = pgTable(
  'proposals',
  {
    ...recordColumns(),
    idempotencyKey: text('idempotency_key').notNull(),
    requester: text('requester').notNull(),
    requesterScopes: text('requester_scopes').notNull(),
    requesterEnvironments: text('requester_environments').notNull(),
    action: text('action').notNull(),
    serverId: text('server_id').notNull(),
    toolName: text('tool_name').notNull(),
    targetKind: text('target_kind').notNull(),
    targetId: text('target_id'),
    targetEnv: text('target_env'),
    arguments: text('arguments').notNull(),
    sideEffect: text('side_effect').notNull(),
    preconditions: text('preconditions').notNull(),
    postconditions: text('postconditions').notNull(),
    impact: text('impact').notNull(),
    payloadHash: text('payload_hash').notNull(),
    proposedAt: text('proposed_at').notNull(),
    // Added by 0025: the gateway's DSSE envelope (canonical JSON); null on unsigned records.
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'proposals_pk', columns: [t.logId, t.id] }),
    unique('proposals_event').on(t.logId, t.eventSeq),
    // Idempotency keys are the requester's own: another requester's key is not taken by this one.
    unique('proposals_requester_idempotency_key').on(t.logId, t.requester, t.idempotencyKey),
    eventLink('proposals', t),
    check('proposals_side_effect', inList(t.sideEffect, SIDE_EFFECTS)),
    check('proposals_payload_hash_length', sql`octet_length(${t.payloadHash}) = 64`),
  ],
);

/** One decision per proposal, from the built-in policy or an external engine (`source`). */
export const decisions = pgTable(
  'decisions',
  {
    ...recordColumns(),
    proposalId: text('proposal_id').notNull(),
    verdict: text('verdict').notNull(),
    reasons: text('reasons').notNull(),
    repair: text('repair').notNull(),
    authorizedIdentity: text('authorized_identity'),
    source: text('source').notNull(),
    toolId: text('tool_id'),
    approvalRequestId: text('approval_request_id'),
    decidedBy: text('decided_by').notNull(),
    decidedAt: text('decided_at').notNull(),
    // Added by 0022: the author's DSSE envelope (canonical JSON); null on unsigned records.
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'decisions_pk', columns: [t.logId, t.id] }),
    unique('decisions_event').on(t.logId, t.eventSeq),
    // One signed statement speaks for one record (0024): a replayed envelope is refused.
    uniqueIndex('decisions_signature_once').on(t.logId, sql`md5(${t.signature})`),
    unique('decisions_one_per_proposal').on(t.logId, t.proposalId),
    eventLink('decisions', t),
    foreignKey({
      name: 'decisions_proposal',
      columns: [t.logId, t.proposalId],
      foreignColumns: [proposals.logId, proposals.id],
    }),
    check('decisions_verdict', inList(t.verdict, ['allow', 'deny', 'repair', 'require_approval'])),
  ],
);

/** Approval requests, bound to one proposal's payload hash and requester + server + tool. */
export const approvalRequests = pgTable(
  'approval_requests',
  {
    ...recordColumns(),
    proposalId: text('proposal_id').notNull(),
    payloadHash: text('payload_hash').notNull(),
    requester: text('requester').notNull(),
    serverId: text('server_id').notNull(),
    toolName: text('tool_name').notNull(),
    environment: text('environment'),
    expiresAt: text('expires_at').notNull(),
    maxWindowSeconds: integer('max_window_seconds').notNull(),
    requestedAt: text('requested_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'approval_requests_pk', columns: [t.logId, t.id] }),
    unique('approval_requests_event').on(t.logId, t.eventSeq),
    eventLink('approval_requests', t),
    foreignKey({
      name: 'approval_requests_proposal',
      columns: [t.logId, t.proposalId],
      foreignColumns: [proposals.logId, proposals.id],
    }),
    index('approval_requests_scope').on(t.logId, t.requester, t.serverId, t.toolName, t.payloadHash),
  ],
);

/** The one answer to an approval request: approved (once or for a window) or denied. */
export const approvalResolutions = pgTable(
  'approval_resolutions',
  {
    ...recordColumns(),
    requestId: text('request_id').notNull(),
    resolution: text('resolution').notNull(),
    resolver: text('resolver').notNull(),
    validity: text('validity'),
    windowSeconds: integer('window_seconds'),
    windowSource: text('window_source'),
    validUntil: text('valid_until'),
    comment: text('comment'),
    resolvedAt: text('resolved_at').notNull(),
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'approval_resolutions_pk', columns: [t.logId, t.id] }),
    unique('approval_resolutions_event').on(t.logId, t.eventSeq),
    // One signed statement speaks for one record (0024): a replayed envelope is refused.
    uniqueIndex('approval_resolutions_signature_once').on(t.logId, sql`md5(${t.signature})`),
    unique('approval_resolutions_one_per_request').on(t.logId, t.requestId),
    eventLink('approval_resolutions', t),
    foreignKey({
      name: 'approval_resolutions_request',
      columns: [t.logId, t.requestId],
      foreignColumns: [approvalRequests.logId, approvalRequests.id],
    }),
    check('approval_resolutions_resolution', inList(t.resolution, ['approved', 'denied'])),
  ],
);

/** Executions under an approval; a `once` approval has at most one, enforced by a partial unique index. */
export const approvalUses = pgTable(
  'approval_uses',
  {
    ...recordColumns(),
    requestId: text('request_id').notNull(),
    resolutionId: text('resolution_id').notNull(),
    proposalId: text('proposal_id').notNull(),
    validity: text('validity').notNull(),
    usedBy: text('used_by').notNull(),
    usedAt: text('used_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'approval_uses_pk', columns: [t.logId, t.id] }),
    unique('approval_uses_event').on(t.logId, t.eventSeq),
    unique('approval_uses_one_per_proposal').on(t.logId, t.requestId, t.proposalId),
    uniqueIndex('approval_uses_single_use').on(t.logId, t.requestId).where(sql`${t.validity} = 'once'`),
    eventLink('approval_uses', t),
    foreignKey({
      name: 'approval_uses_resolution',
      columns: [t.logId, t.resolutionId],
      foreignColumns: [approvalResolutions.logId, approvalResolutions.id],
    }),
    check('approval_uses_validity', inList(t.validity, ['once', 'window'])),
  ],
);

/**
 * Execution claims, written by `authorize`: one per proposal. A claim with no observation
 * after its deadline is swept into an `unknown` observation (`deadline` is ISO 8601 UTC text,
 * so it orders as a string; the index serves the sweep's scan).
 */
export const executionClaims = pgTable(
  'execution_claims',
  {
    ...recordColumns(),
    proposalId: text('proposal_id').notNull(),
    decisionId: text('decision_id').notNull(),
    approvalUseId: text('approval_use_id'),
    claimedBy: text('claimed_by').notNull(),
    claimedAt: text('claimed_at').notNull(),
    deadline: text('deadline').notNull(),
    /** JSON: the precondition checks run at authorize and the status derived from them; null when none ran (absent). */
    preconditions: text('preconditions'),
    // Added by 0025: the gateway's DSSE envelope (canonical JSON); null on unsigned records.
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'execution_claims_pk', columns: [t.logId, t.id] }),
    unique('execution_claims_event').on(t.logId, t.eventSeq),
    unique('execution_claims_one_per_proposal').on(t.logId, t.proposalId),
    eventLink('execution_claims', t),
    foreignKey({
      name: 'execution_claims_decision',
      columns: [t.logId, t.decisionId],
      foreignColumns: [decisions.logId, decisions.id],
    }),
    index('execution_claims_deadline').on(t.deadline),
  ],
);

/** What the tool returned; one per proposal, so an execution is never recorded twice. */
export const observations = pgTable(
  'observations',
  {
    ...recordColumns(),
    proposalId: text('proposal_id').notNull(),
    decisionId: text('decision_id').notNull(),
    approvalUseId: text('approval_use_id'),
    serverId: text('server_id').notNull(),
    toolName: text('tool_name').notNull(),
    executedBy: text('executed_by').notNull(),
    outcome: text('outcome').notNull(),
    result: text('result').notNull(),
    transportStatus: integer('transport_status'),
    toolError: boolean('tool_error'),
    startedAt: text('started_at'),
    finishedAt: text('finished_at'),
    observedAt: text('observed_at').notNull(),
    /** Null when the result is the tool's own answer (the field is then absent from the record). */
    resultSource: text('result_source'),
    // Added by 0025: the gateway's DSSE envelope (canonical JSON); null on unsigned records.
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'observations_pk', columns: [t.logId, t.id] }),
    unique('observations_event').on(t.logId, t.eventSeq),
    unique('observations_one_per_proposal').on(t.logId, t.proposalId),
    eventLink('observations', t),
    foreignKey({
      name: 'observations_decision',
      columns: [t.logId, t.decisionId],
      foreignColumns: [decisions.logId, decisions.id],
    }),
    check('observations_outcome', inList(t.outcome, ['succeeded', 'failed', 'unknown'])),
  ],
);

/** Execution attempts the ledger refused; the attempt is evidence and is kept. */
export const refusedExecutions = pgTable(
  'refused_executions',
  {
    ...recordColumns(),
    proposalId: text('proposal_id').notNull(),
    code: text('code').notNull(),
    message: text('message').notNull(),
    attemptedBy: text('attempted_by').notNull(),
    attempted: text('attempted').notNull(),
    refusedAt: text('refused_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'refused_executions_pk', columns: [t.logId, t.id] }),
    unique('refused_executions_event').on(t.logId, t.eventSeq),
    eventLink('refused_executions', t),
    index('refused_executions_proposal').on(t.logId, t.proposalId),
  ],
);

/** Verifications of an observation; the status is derived from the checks by the ledger. */
export const verifications = pgTable(
  'verifications',
  {
    ...recordColumns(),
    observationId: text('observation_id').notNull(),
    proposalId: text('proposal_id').notNull(),
    checks: text('checks').notNull(),
    status: text('status').notNull(),
    verifier: text('verifier').notNull(),
    verifiedAt: text('verified_at').notNull(),
    // Added by 0006; null on older rows (whose payloads have no such keys). JSON as canonical text.
    undeclared: text('undeclared'),
    held: text('held'),
    supersedes: text('supersedes'),
    reason: text('reason'),
    signature: text('signature'),
  },
  (t) => [
    primaryKey({ name: 'verifications_pk', columns: [t.logId, t.id] }),
    unique('verifications_event').on(t.logId, t.eventSeq),
    // One signed statement speaks for one record (0024): a replayed envelope is refused.
    uniqueIndex('verifications_signature_once').on(t.logId, sql`md5(${t.signature})`),
    eventLink('verifications', t),
    foreignKey({
      name: 'verifications_observation',
      columns: [t.logId, t.observationId],
      foreignColumns: [observations.logId, observations.id],
    }),
    index('verifications_proposal').on(t.logId, t.proposalId),
    check('verifications_status', inList(t.status, ['passed', 'failed', 'inconclusive'])),
    check('verifications_held', sql`${t.held} is null or ${inList(t.held, ['OUTCOME_UNKNOWN'])}`),
    check('verifications_supersession', sql`(${t.supersedes} is null) = (${t.reason} is null)`),
  ],
);

/**
 * The proposal each evidence reference proved first, per log: a `pass` check's `evidence_ref`
 * (docs/verification.md, "Evidence is bound"), written with the verification that used it
 * first and pointing at that verification's event. A later pass naming the same reference for
 * another proposal is recorded as `EVIDENCE_REUSED`. An index of the chain, not a record:
 * `verifyChain` derives the same first uses from the events alone.
 */
export const evidenceRefs = pgTable(
  'evidence_refs',
  {
    logId: text('log_id').notNull(),
    ref: text('ref').notNull(),
    proposalId: text('proposal_id').notNull(),
    verificationId: text('verification_id').notNull(),
    eventSeq: bigint('event_seq', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'evidence_refs_pk', columns: [t.logId, t.ref] }), eventLink('evidence_refs', t)],
);
