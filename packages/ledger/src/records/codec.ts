import { canonicalJson, type DsseEnvelope } from '@vouch/audit';
import type { EventLink } from '../ledger';
import {
  approvalRequests,
  approvalResolutions,
  approvalUses,
  decisions,
  executionClaims,
  observations,
  proposals,
  refusedExecutions,
  tools,
  verifications,
} from '../schema/records';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  DecisionRecord,
  ExecutionClaimRecord,
  JsonValue,
  ObservationRecord,
  ProposalRecord,
  RecordKind,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationRecord,
} from './types';

/**
 * Record <-> row, one pair per table. A row must rebuild its record exactly: chain
 * verification canonicalizes `toRecord(row)` and compares it byte for byte with the event
 * payload, so every column is mapped here and nowhere else.
 */

// JSON columns hold canonical JSON text (never jsonb): what is parsed back is what was hashed.
const json = (value: unknown): string => canonicalJson(value);
/**
 * A JSON column's value, refused (thrown) unless the text is exactly the canonical JSON the
 * ledger wrote: text respelled to the same parsed value (keys reordered, whitespace, `5.0`,
 * a duplicate key) rebuilds the same record, but is not what the chain holds, and a reader
 * of the table (psql, an export, another language's parser) may read it otherwise.
 */
const parse = <T = JsonValue>(text: string): T => {
  const value = JSON.parse(text) as T;
  if (canonicalJson(value) !== text) throw new Error('a JSON column is not canonical JSON');
  return value;
};

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect'];

// An author's signature (since 0022; proposals, observations, execution claims since 0025) is a payload member only when there is one, so every
// record written before rebuilds its payload byte for byte.
const signatureColumn = (envelope: DsseEnvelope | undefined): string | null =>
  envelope === undefined ? null : json(envelope);
const signatureMember = (text: string | null): { signature?: DsseEnvelope } =>
  text === null ? {} : { signature: parse<DsseEnvelope>(text) };

export const toolCodec = {
  toRow: (link: EventLink, r: ToolRecord): Row<typeof tools> => ({
    ...link,
    id: r.id,
    serverId: r.server_id,
    toolName: r.tool_name,
    version: r.version,
    sideEffect: r.side_effect,
    requiredScopes: json(r.required_scopes),
    allowedEnvironments: json(r.allowed_environments),
    dryRunTool: r.dry_run_tool,
    compensationTool: r.compensation_tool,
    approvalRequired: r.approval_required,
    requiresTargetId: r.requires_target_id,
    maxApprovalWindowSeconds: r.max_approval_window_seconds,
    source: r.source,
    writes: r.writes === undefined ? null : json(r.writes),
    postconditions: r.postconditions === undefined ? null : json(r.postconditions),
    unprovenPreconditions: r.unproven_preconditions ?? null,
    definitionSha256: r.definition_sha256 ?? null,
    changedDefinitionSha256: r.changed_definition_sha256 ?? null,
    registeredBy: r.registered_by,
    registeredAt: r.registered_at,
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof tools>): ToolRecord => ({
    id: row.id,
    server_id: row.serverId,
    tool_name: row.toolName,
    version: row.version,
    side_effect: row.sideEffect as ToolRecord['side_effect'],
    required_scopes: parse(row.requiredScopes),
    allowed_environments: parse(row.allowedEnvironments),
    dry_run_tool: row.dryRunTool,
    compensation_tool: row.compensationTool,
    approval_required: row.approvalRequired,
    requires_target_id: row.requiresTargetId,
    max_approval_window_seconds: row.maxApprovalWindowSeconds,
    source: row.source as ToolRecord['source'],
    ...(row.writes === null ? {} : { writes: parse(row.writes) as string[] }),
    ...(row.postconditions === null
      ? {}
      : { postconditions: parse<NonNullable<ToolRecord['postconditions']>>(row.postconditions) }),
    ...(row.unprovenPreconditions === null
      ? {}
      : { unproven_preconditions: row.unprovenPreconditions as ToolRecord['unproven_preconditions'] }),
    ...(row.definitionSha256 === null ? {} : { definition_sha256: row.definitionSha256 }),
    ...(row.changedDefinitionSha256 === null
      ? {}
      : { changed_definition_sha256: row.changedDefinitionSha256 }),
    registered_by: row.registeredBy,
    registered_at: row.registeredAt,
    ...signatureMember(row.signature),
  }),
};

export const proposalCodec = {
  toRow: (link: EventLink, r: ProposalRecord): Row<typeof proposals> => ({
    ...link,
    id: r.id,
    idempotencyKey: r.idempotency_key,
    requester: r.requester,
    requesterScopes: json(r.requester_scopes),
    requesterEnvironments: json(r.requester_environments),
    action: r.action,
    serverId: r.server_id,
    toolName: r.tool_name,
    targetKind: r.target.kind,
    targetId: r.target.id,
    targetEnv: r.target.env,
    arguments: json(r.arguments),
    sideEffect: r.side_effect,
    preconditions: json(r.preconditions),
    postconditions: json(r.postconditions),
    impact: json(r.impact),
    payloadHash: r.payload_hash,
    proposedAt: r.proposed_at,
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof proposals>): ProposalRecord => ({
    id: row.id,
    idempotency_key: row.idempotencyKey,
    requester: row.requester,
    requester_scopes: parse(row.requesterScopes),
    requester_environments: parse(row.requesterEnvironments),
    action: row.action,
    server_id: row.serverId,
    tool_name: row.toolName,
    target: { kind: row.targetKind, id: row.targetId, env: row.targetEnv },
    arguments: parse(row.arguments),
    side_effect: row.sideEffect as ProposalRecord['side_effect'],
    preconditions: parse(row.preconditions),
    postconditions: parse(row.postconditions),
    impact: parse(row.impact),
    payload_hash: row.payloadHash,
    proposed_at: row.proposedAt,
    ...signatureMember(row.signature),
  }),
};

export const decisionCodec = {
  toRow: (link: EventLink, r: DecisionRecord): Row<typeof decisions> => ({
    ...link,
    id: r.id,
    proposalId: r.proposal_id,
    verdict: r.verdict,
    reasons: json(r.reasons),
    repair: json(r.repair),
    authorizedIdentity: r.authorized_identity,
    source: r.source,
    toolId: r.tool_id,
    approvalRequestId: r.approval_request_id,
    decidedBy: r.decided_by,
    decidedAt: r.decided_at,
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof decisions>): DecisionRecord => ({
    id: row.id,
    proposal_id: row.proposalId,
    verdict: row.verdict as DecisionRecord['verdict'],
    reasons: parse(row.reasons),
    repair: parse(row.repair),
    authorized_identity: row.authorizedIdentity,
    source: row.source,
    tool_id: row.toolId,
    approval_request_id: row.approvalRequestId,
    decided_by: row.decidedBy,
    decided_at: row.decidedAt,
    ...signatureMember(row.signature),
  }),
};

export const approvalRequestCodec = {
  toRow: (link: EventLink, r: ApprovalRequestRecord): Row<typeof approvalRequests> => ({
    ...link,
    id: r.id,
    proposalId: r.proposal_id,
    payloadHash: r.payload_hash,
    requester: r.requester,
    serverId: r.server_id,
    toolName: r.tool_name,
    environment: r.environment,
    expiresAt: r.expires_at,
    maxWindowSeconds: r.max_window_seconds,
    requestedAt: r.requested_at,
  }),
  toRecord: (row: Row<typeof approvalRequests>): ApprovalRequestRecord => ({
    id: row.id,
    proposal_id: row.proposalId,
    payload_hash: row.payloadHash,
    requester: row.requester,
    server_id: row.serverId,
    tool_name: row.toolName,
    environment: row.environment,
    expires_at: row.expiresAt,
    max_window_seconds: row.maxWindowSeconds,
    requested_at: row.requestedAt,
  }),
};

export const approvalResolutionCodec = {
  toRow: (link: EventLink, r: ApprovalResolutionRecord): Row<typeof approvalResolutions> => ({
    ...link,
    id: r.id,
    requestId: r.request_id,
    resolution: r.resolution,
    resolver: r.resolver,
    validity: r.validity,
    windowSeconds: r.window_seconds,
    windowSource: r.window_source,
    validUntil: r.valid_until,
    comment: r.comment,
    resolvedAt: r.resolved_at,
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof approvalResolutions>): ApprovalResolutionRecord => ({
    id: row.id,
    request_id: row.requestId,
    resolution: row.resolution as ApprovalResolutionRecord['resolution'],
    resolver: row.resolver,
    validity: row.validity as ApprovalResolutionRecord['validity'],
    window_seconds: row.windowSeconds,
    window_source: row.windowSource,
    valid_until: row.validUntil,
    comment: row.comment,
    resolved_at: row.resolvedAt,
    ...signatureMember(row.signature),
  }),
};

export const approvalUseCodec = {
  toRow: (link: EventLink, r: ApprovalUseRecord): Row<typeof approvalUses> => ({
    ...link,
    id: r.id,
    requestId: r.request_id,
    resolutionId: r.resolution_id,
    proposalId: r.proposal_id,
    validity: r.validity,
    usedBy: r.used_by,
    usedAt: r.used_at,
  }),
  toRecord: (row: Row<typeof approvalUses>): ApprovalUseRecord => ({
    id: row.id,
    request_id: row.requestId,
    resolution_id: row.resolutionId,
    proposal_id: row.proposalId,
    validity: row.validity as ApprovalUseRecord['validity'],
    used_by: row.usedBy,
    used_at: row.usedAt,
  }),
};

export const executionClaimCodec = {
  toRow: (link: EventLink, r: ExecutionClaimRecord): Row<typeof executionClaims> => ({
    ...link,
    id: r.id,
    proposalId: r.proposal_id,
    decisionId: r.decision_id,
    approvalUseId: r.approval_use_id,
    claimedBy: r.claimed_by,
    claimedAt: r.claimed_at,
    deadline: r.deadline,
    preconditions: r.preconditions === undefined ? null : json(r.preconditions),
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof executionClaims>): ExecutionClaimRecord => ({
    id: row.id,
    proposal_id: row.proposalId,
    decision_id: row.decisionId,
    approval_use_id: row.approvalUseId,
    claimed_by: row.claimedBy,
    claimed_at: row.claimedAt,
    deadline: row.deadline,
    ...(row.preconditions === null
      ? {}
      : { preconditions: parse(row.preconditions) as ExecutionClaimRecord['preconditions'] }),
    ...signatureMember(row.signature),
  }),
};

export const observationCodec = {
  toRow: (link: EventLink, r: ObservationRecord): Row<typeof observations> => ({
    ...link,
    id: r.id,
    proposalId: r.proposal_id,
    decisionId: r.decision_id,
    approvalUseId: r.approval_use_id,
    serverId: r.server_id,
    toolName: r.tool_name,
    executedBy: r.executed_by,
    outcome: r.outcome,
    result: json(r.result),
    transportStatus: r.transport_status,
    toolError: r.tool_error,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    observedAt: r.observed_at,
    resultSource: r.result_source ?? null,
    signature: signatureColumn(r.signature),
  }),
  toRecord: (row: Row<typeof observations>): ObservationRecord => ({
    id: row.id,
    proposal_id: row.proposalId,
    decision_id: row.decisionId,
    approval_use_id: row.approvalUseId,
    server_id: row.serverId,
    tool_name: row.toolName,
    executed_by: row.executedBy,
    outcome: row.outcome as ObservationRecord['outcome'],
    result: parse(row.result),
    transport_status: row.transportStatus,
    tool_error: row.toolError,
    started_at: row.startedAt,
    finished_at: row.finishedAt,
    observed_at: row.observedAt,
    ...(row.resultSource === null ? {} : { result_source: row.resultSource }),
    ...signatureMember(row.signature),
  }),
};

export const refusedExecutionCodec = {
  toRow: (link: EventLink, r: RefusedExecutionRecord): Row<typeof refusedExecutions> => ({
    ...link,
    id: r.id,
    proposalId: r.proposal_id,
    code: r.code,
    message: r.message,
    attemptedBy: r.attempted_by,
    attempted: json(r.attempted),
    refusedAt: r.refused_at,
  }),
  toRecord: (row: Row<typeof refusedExecutions>): RefusedExecutionRecord => ({
    id: row.id,
    proposal_id: row.proposalId,
    code: row.code,
    message: row.message,
    attempted_by: row.attemptedBy,
    attempted: parse(row.attempted),
    refused_at: row.refusedAt,
  }),
};

export const verificationCodec = {
  toRow: (link: EventLink, r: VerificationRecord): Row<typeof verifications> => ({
    ...link,
    id: r.id,
    observationId: r.observation_id,
    proposalId: r.proposal_id,
    checks: json(r.checks),
    status: r.status,
    verifier: r.verifier,
    verifiedAt: r.verified_at,
    undeclared: r.undeclared === undefined ? null : json(r.undeclared),
    held: r.held ?? null,
    supersedes: r.supersedes === undefined ? null : json(r.supersedes),
    reason: r.reason ?? null,
    signature: signatureColumn(r.signature),
  }),
  // A null column is a key the payload does not have (records from before 0006, or a field
  // that does not apply), so the row rebuilds the payload byte for byte either way.
  toRecord: (row: Row<typeof verifications>): VerificationRecord => ({
    id: row.id,
    observation_id: row.observationId,
    proposal_id: row.proposalId,
    checks: parse(row.checks),
    status: row.status as VerificationRecord['status'],
    verifier: row.verifier,
    verified_at: row.verifiedAt,
    ...(row.undeclared === null ? {} : { undeclared: parse<string[]>(row.undeclared) }),
    ...(row.held === null ? {} : { held: row.held as NonNullable<VerificationRecord['held']> }),
    ...(row.supersedes === null ? {} : { supersedes: parse<string[]>(row.supersedes) }),
    ...(row.reason === null ? {} : { reason: row.reason }),
    ...signatureMember(row.signature),
  }),
};

/** Every record table with its event kind and how to rebuild a record from a row. */
export const RECORD_TABLES = [
  { kind: 'tool', table: tools, toRecord: toolCodec.toRecord },
  { kind: 'proposal', table: proposals, toRecord: proposalCodec.toRecord },
  { kind: 'decision', table: decisions, toRecord: decisionCodec.toRecord },
  { kind: 'approval_request', table: approvalRequests, toRecord: approvalRequestCodec.toRecord },
  { kind: 'approval_resolution', table: approvalResolutions, toRecord: approvalResolutionCodec.toRecord },
  { kind: 'approval_use', table: approvalUses, toRecord: approvalUseCodec.toRecord },
  { kind: 'execution_claim', table: executionClaims, toRecord: executionClaimCodec.toRecord },
  { kind: 'observation', table: observations, toRecord: observationCodec.toRecord },
  { kind: 'execution_refused', table: refusedExecutions, toRecord: refusedExecutionCodec.toRecord },
  { kind: 'verification', table: verifications, toRecord: verificationCodec.toRecord },
] as const satisfies ReadonlyArray<{ kind: RecordKind; table: unknown; toRecord: (row: never) => unknown }>;

/** The entry of {@link RECORD_TABLES} for each record event kind. */
export const RECORD_TABLE_OF: ReadonlyMap<string, (typeof RECORD_TABLES)[number]> = new Map(
  RECORD_TABLES.map((entry) => [entry.kind, entry]),
);
