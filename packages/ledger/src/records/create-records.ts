import { randomUUID } from 'node:crypto';
import type { StoredEvent } from '@vouch/audit';
import { sameIdentity } from '@vouch/audit';
import { assessIndependence } from '@vouch/verifier-sdk';
import { and, asc, eq } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import { anyOf } from '../batched-sql';
import { LedgerError, type LedgerErrorCode } from '../errors';
import type { EventLink, Ledger, StagingTransaction } from '../ledger';
import {
  addSeconds,
  checkApproval,
  isPast,
  isReusableRequest,
  shortestWindow,
} from '../policy/approval-validity';
import { evaluatePolicy } from '../policy/built-in-policy';
import { auditEvents } from '../schema/core';
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
import {
  approveInputSchema,
  authorizeInputSchema,
  DEFAULT_MAX_INPUT_BYTES,
  decisionInputSchema,
  denyInputSchema,
  observationInputSchema,
  parseInput,
  proposalInputSchema,
  toolInputSchema,
  verificationInputSchema,
} from './inputs';
import { isObservationReplay } from './observation-replay';
import { deriveOutcome, deriveStage, type ProposalStage } from './outcome';
import { proposalPayloadHash, proposalPayloadOf } from './payload-hash';
import {
  type ApprovalStatus,
  approvalStatusOf,
  listLatestTools,
  listRequests,
  refusalsOf,
  reusableRequestCandidates,
  verificationsOf,
} from './queries';
import { recordKeys } from './record-keys';
import { batchedReads, type RecordReads } from './record-reads';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  Caller,
  DecisionRecord,
  JsonValue,
  ObservationRecord,
  ProposalOutcome,
  ProposalRecord,
  RecordKind,
  RefusedExecutionRecord,
  ToolRecord,
  VerificationCheck,
  VerificationRecord,
} from './types';
import {
  assertSupersession,
  type EffectiveVerification,
  effectiveVerification,
  isAuditedParty,
  toVerificationRecord,
} from './verification-status';

/** Options of {@link createRecords}. */
export interface RecordsOptions {
  /** Clock for record times and expiry checks; defaults to the ledger batch's time. */
  now?: () => Date;
  /** Largest request body in bytes as canonical JSON (default 256 KiB). */
  maxInputBytes?: number;
  /**
   * `built_in` (default): `propose` decides at once with the built-in policy. `external`:
   * proposals wait for an external engine to post its decision with `decide`.
   */
  policy?: 'built_in' | 'external';
  /** How long an approval request may wait for an answer, in seconds (default 24 h). */
  approvalRequestTtlSeconds?: number;
  /** The service's longest approval window, in seconds (default 1 h); the shortest rule wins. */
  maxApprovalWindowSeconds?: number;
  /**
   * How long after an observation with outcome `unknown` (a timeout: the tool may still act)
   * its verification stays held at inconclusive (`OUTCOME_UNKNOWN`), in seconds (default 15 min).
   */
  unknownOutcomeSettleSeconds?: number;
}

/** Which log a call writes to and who is calling (from the API key, never the body). */
export interface RecordContext {
  log: string;
  caller: Caller;
}

/** What `propose` returns; `replayed` when the idempotency key had already been used with this payload. */
export interface ProposalResult {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  approval: ApprovalRequestRecord | null;
  replayed: boolean;
}

/** An approval request with everything an approver must see: the exact payload, target, environment and impact. */
export interface ApprovalView {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord | null;
  uses: ApprovalUseRecord[];
  status: ApprovalStatus;
  /** The proposal the request was opened for: what the approver is shown and the payload hash covers. */
  proposal: ProposalRecord;
}

/** What `authorize` returns: the decision and, when approval-gated, the use it claimed. */
export interface Authorization {
  proposal: ProposalRecord;
  decision: DecisionRecord;
  approval_use: ApprovalUseRecord | null;
}

/** Everything recorded about one proposal, with its derived outcome and the events behind it. */
export interface ProposalStory {
  proposal: ProposalRecord;
  decision: DecisionRecord | null;
  approval: ApprovalView | null;
  observation: ObservationRecord | null;
  refusals: RefusedExecutionRecord[];
  /** Every verification record, superseded ones included, in chain order. */
  verifications: VerificationRecord[];
  /** The latest verification record (not the status: see `verification_status`). */
  verification: VerificationRecord | null;
  /** The status derived from all the verification records; the outcome follows it. */
  verification_status: EffectiveVerification;
  outcome: ProposalOutcome;
  stage: ProposalStage;
  events: StoredEvent[];
}

export interface RecordVerificationOptions {
  /**
   * The checks were run by this server's configured verifiers (`POST
   * /v1/observations/{id}/verify`), not supplied by the caller. Without it, the checks of a
   * caller who is the audited party (the identity that executed or proposed) count as not
   * independent: nobody vouches for their own action.
   */
  checksRunByServer?: boolean;
}

/** What `recordVerification` returns: the new record, and the proposal's status with it counted. */
export interface RecordedVerification {
  verification: VerificationRecord;
  verification_status: EffectiveVerification;
}

/** The records service: every write appends its record's audit event in the same transaction. */
export interface Records {
  /** Register a tool, or a new version of it; identical re-registration and discovery of a known tool replay. */
  registerTool(ctx: RecordContext, input: unknown): Promise<{ tool: ToolRecord; replayed: boolean }>;
  /** The latest registration of every tool of a log. */
  listTools(log: string): Promise<ToolRecord[]>;
  /** Record a proposal (and, with the built-in policy, its decision and approval request). */
  propose(ctx: RecordContext, input: unknown): Promise<ProposalResult>;
  /** Record an external policy engine's decision; one per proposal (`DECISION_EXISTS`). */
  decide(
    ctx: RecordContext,
    input: unknown,
  ): Promise<{ decision: DecisionRecord; approval: ApprovalRequestRecord | null }>;
  getProposal(log: string, id: string): Promise<ProposalRecord>;
  /** One observation by id; NOT_FOUND when the log has none with that id. */
  getObservation(log: string, id: string): Promise<ObservationRecord>;
  getApproval(log: string, requestId: string): Promise<ApprovalView>;
  listApprovals(
    log: string,
    options?: { status?: ApprovalStatus; after?: number; limit?: number },
  ): Promise<{ approvals: ApprovalView[]; next: number | null }>;
  /** Approve a request (not one's own); once, or for a window bounded by every rule. */
  approve(ctx: RecordContext, input: unknown): Promise<ApprovalView>;
  /** Deny a request (not one's own); it answers only that request. */
  deny(ctx: RecordContext, input: unknown): Promise<ApprovalView>;
  /** Before executing: check the decision and claim the approval use, so a second executor is refused up front. */
  authorize(ctx: RecordContext, input: unknown): Promise<Authorization>;
  /** Record what the tool returned; refused executions are appended as evidence and thrown. */
  observe(ctx: RecordContext, input: unknown): Promise<{ observation: ObservationRecord; replayed: boolean }>;
  /**
   * Record checks on an observation; the record's status is derived from them against the
   * declared postconditions, and the proposal's from all its records. A re-verification
   * names the records it supersedes and why; the audited party may not supersede.
   */
  recordVerification(
    ctx: RecordContext,
    input: unknown,
    options?: RecordVerificationOptions,
  ): Promise<RecordedVerification>;
  /** The proposal, its decision, approval, observation, verifications, outcome and events. */
  story(log: string, proposalId: string): Promise<ProposalStory>;
}

/**
 * Create the records service over a ledger. Each write runs in `ledger.transactConcurrently`,
 * so the record row and its audit event (kind = record type, payload = the record as stored,
 * entity = the record id) commit together or not at all, and the checks before it run
 * under the log's lock, beside the other operations whose keys (`record-keys.ts`) do not
 * collide with its own.
 *
 * @example
 * const records = createRecords(ledger);
 * const ctx = { log: 'default', caller: { identity: 'agent:billing', scopes: ['payments:write'], environments: ['prod'] } };
 * await records.registerTool({ log: 'default', caller: { identity: 'user:ops' } },
 *   { server_id: 'payments', tool_name: 'refund', side_effect: 'compensatable', required_scopes: ['payments:write'], allowed_environments: ['prod'] });
 * const { decision } = await records.propose(ctx, { idempotency_key: 'k1', action: 'refund', server_id: 'payments',
 *   tool_name: 'refund', target: { kind: 'payment', id: 'pay_1', env: 'prod' }, arguments: { amount: 5 }, side_effect: 'compensatable' });
 * decision?.verdict; // 'allow'
 */
export function createRecords(ledger: Ledger, options: RecordsOptions = {}): Records {
  const database = ledger.database;
  const maxBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const policy = options.policy ?? 'built_in';
  const requestTtl = options.approvalRequestTtlSeconds ?? 24 * 3600;
  const serviceWindow = options.maxApprovalWindowSeconds ?? 3600;
  const settleSeconds = options.unknownOutcomeSettleSeconds ?? 900;
  const timeOf = (tx: StagingTransaction) => (options.now ? options.now().toISOString() : tx.now);
  const wallNow = () => (options.now ?? (() => new Date()))().toISOString();
  /** Checked reads that raise the ledger's alarm on a row its event does not account for. */
  const checkedReads = (db: Parameters<typeof batchedReads>[0], log: string) =>
    batchedReads(db, log, ledger.integrityAlarm);

  /** Stage the record's event and its row pointing at that event: both or neither. */
  const write = <R extends { id: string }>(
    tx: StagingTransaction,
    kind: RecordKind,
    actor: string,
    record: R,
    table: PgTable,
    toRow: (link: EventLink, record: R) => Record<string, unknown>,
  ): R => {
    tx.stage(
      { kind, entity: record.id, actor, payload: record },
      { table, values: (link) => toRow(link, record) },
    );
    return record;
  };

  const writeTool = (tx: StagingTransaction, actor: string, r: ToolRecord) =>
    write(tx, 'tool', actor, r, tools, toolCodec.toRow);
  const writeProposal = (tx: StagingTransaction, actor: string, r: ProposalRecord) =>
    write(tx, 'proposal', actor, r, proposals, proposalCodec.toRow);
  const writeDecision = (tx: StagingTransaction, actor: string, r: DecisionRecord) =>
    write(tx, 'decision', actor, r, decisions, decisionCodec.toRow);
  const writeRequest = (tx: StagingTransaction, actor: string, r: ApprovalRequestRecord) =>
    write(tx, 'approval_request', actor, r, approvalRequests, approvalRequestCodec.toRow);
  const writeResolution = (tx: StagingTransaction, actor: string, r: ApprovalResolutionRecord) =>
    write(tx, 'approval_resolution', actor, r, approvalResolutions, approvalResolutionCodec.toRow);
  const writeUse = (tx: StagingTransaction, actor: string, r: ApprovalUseRecord) =>
    write(tx, 'approval_use', actor, r, approvalUses, approvalUseCodec.toRow);
  const writeObservation = (tx: StagingTransaction, actor: string, r: ObservationRecord) =>
    write(tx, 'observation', actor, r, observations, observationCodec.toRow);
  const writeRefusal = (tx: StagingTransaction, actor: string, r: RefusedExecutionRecord) =>
    write(tx, 'execution_refused', actor, r, refusedExecutions, refusedExecutionCodec.toRow);
  const writeVerification = (tx: StagingTransaction, actor: string, r: VerificationRecord) =>
    write(tx, 'verification', actor, r, verifications, verificationCodec.toRow);

  /**
   * Open an approval request for a proposal, or reuse one already waiting on the same
   * payload, requester, server and tool, so a retried proposal does not pile up requests.
   */
  const requestApproval = async (
    tx: StagingTransaction,
    actor: string,
    proposal: ProposalRecord,
    tool: ToolRecord | null,
    now: string,
  ): Promise<ApprovalRequestRecord> => {
    tx.claim(recordKeys.approvalScope(proposal));
    for (const candidate of await reusableRequestCandidates(tx.db, tx.log, proposal, now)) {
      if (isReusableRequest({ ...candidate, proposal, now })) return candidate.request;
    }
    const window = shortestWindow([
      { source: 'tool', seconds: tool?.max_approval_window_seconds },
      { source: 'service', seconds: serviceWindow },
    ])!;
    return writeRequest(tx, actor, {
      id: newId('apr'),
      proposal_id: proposal.id,
      payload_hash: proposal.payload_hash,
      requester: proposal.requester,
      server_id: proposal.server_id,
      tool_name: proposal.tool_name,
      environment: proposal.target.env,
      expires_at: addSeconds(now, requestTtl),
      max_window_seconds: window.seconds,
      requested_at: now,
    });
  };

  const approvalView = async (
    reads: RecordReads,
    request: ApprovalRequestRecord,
    now: string,
    staged?: ApprovalResolutionRecord,
  ): Promise<ApprovalView> => {
    const [resolution, uses, proposal] = await Promise.all([
      staged ?? reads.resolutionOf(request.id),
      reads.usesOf(request.id),
      reads.proposalById(request.proposal_id),
    ]);
    return {
      request,
      resolution,
      uses,
      status: approvalStatusOf(request, resolution, uses, now),
      proposal: proposal!,
    };
  };

  type Check =
    | { ok: true; proposal: ProposalRecord; decision: DecisionRecord; use: ApprovalUseRecord | null }
    | { ok: false; code: LedgerErrorCode; message: string };

  /**
   * May `caller` execute `proposal` now? Claims the approval use when one is needed (inside
   * the caller's transaction, so the claim and the observation commit together).
   */
  const checkExecution = async (
    tx: StagingTransaction,
    caller: Caller,
    proposal: ProposalRecord,
    claim: { approval_request_id?: string | undefined; payload_hash?: string | undefined },
    now: string,
  ): Promise<Check> => {
    const refuse = (code: LedgerErrorCode, message: string): Check => ({ ok: false, code, message });
    const decision = await checkedReads(tx.db, tx.log).decisionOf(proposal.id);
    if (!decision) return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} has not been decided`);
    if (decision.verdict === 'deny' || decision.verdict === 'repair') {
      return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} was decided ${decision.verdict}`);
    }
    if (
      decision.authorized_identity === null ||
      !sameIdentity(decision.authorized_identity, caller.identity)
    ) {
      return refuse(
        'IDENTITY_MISMATCH',
        `${caller.identity} is not the identity the decision authorized (${decision.authorized_identity})`,
      );
    }
    if (decision.verdict === 'allow') {
      if (claim.payload_hash !== undefined && claim.payload_hash !== proposal.payload_hash) {
        return refuse(
          'EXECUTION_NOT_AUTHORIZED',
          `the executed payload is not the one proposal ${proposal.id} holds`,
        );
      }
      return { ok: true, proposal, decision, use: null };
    }
    const requestId = claim.approval_request_id ?? decision.approval_request_id;
    const request = requestId ? await checkedReads(tx.db, tx.log).requestById(requestId) : null;
    if (!request)
      return refuse('EXECUTION_NOT_AUTHORIZED', `proposal ${proposal.id} has no approval request`);
    if (claim.payload_hash !== undefined && claim.payload_hash !== request.payload_hash) {
      return refuse(
        'APPROVAL_PAYLOAD_MISMATCH',
        `the executed payload is not the one approval ${request.id} was shown`,
      );
    }
    const [resolution, uses] = await Promise.all([
      checkedReads(tx.db, tx.log).resolutionOf(request.id),
      checkedReads(tx.db, tx.log).usesOf(request.id),
    ]);
    const verdict = checkApproval({ request, resolution, uses, proposal, now });
    if (!verdict.ok) return refuse(verdict.code, verdict.message);
    if (verdict.existingUse) return { ok: true, proposal, decision, use: verdict.existingUse };
    // Two executions of one single-use approval may share a wave (their proposals differ):
    // the first to claim it takes it, the other runs again after and finds it consumed.
    if ((verdict.resolution.validity ?? 'once') === 'once') tx.claim(recordKeys.approvalUse(request.id));
    const use = writeUse(tx, caller.identity, {
      id: newId('use'),
      request_id: request.id,
      resolution_id: verdict.resolution.id,
      proposal_id: proposal.id,
      validity: verdict.resolution.validity ?? 'once',
      used_by: caller.identity,
      used_at: now,
    });
    return { ok: true, proposal, decision, use };
  };

  const mustGetProposal = async (reads: RecordReads, proposalId: string) => {
    const proposal = await reads.proposalById(proposalId);
    if (!proposal) throw notFound('proposal', proposalId);
    return proposal;
  };

  const resolve = async (
    ctx: RecordContext,
    requestId: string,
    resolution: Omit<
      ApprovalResolutionRecord,
      'id' | 'request_id' | 'resolver' | 'resolved_at' | 'valid_until' | 'window_seconds' | 'window_source'
    > & { window_seconds: number | null },
  ): Promise<ApprovalView> =>
    ledger.transactConcurrently(ctx.log, recordKeys.resolveApproval(), async (tx) => {
      const now = timeOf(tx);
      const request = await checkedReads(tx.db, tx.log).requestById(requestId);
      if (!request) throw notFound('approval request', requestId);
      if (await checkedReads(tx.db, tx.log).resolutionOf(request.id)) {
        throw new LedgerError(
          'APPROVAL_RESOLVED',
          `approval request ${request.id} has already been answered`,
          {
            details: { request_id: request.id },
          },
        );
      }
      // Four eyes: whoever asked may not answer, in either direction.
      if (sameIdentity(ctx.caller.identity, request.requester)) {
        throw new LedgerError(
          'SELF_APPROVAL',
          `${ctx.caller.identity} cannot answer their own approval request`,
          {
            details: { request_id: request.id },
          },
        );
      }
      if (isPast(request.expires_at, now)) {
        throw new LedgerError(
          'APPROVAL_EXPIRED',
          `approval request ${request.id} expired at ${request.expires_at}`,
          {
            details: { request_id: request.id, expires_at: request.expires_at },
          },
        );
      }
      const window =
        resolution.resolution === 'approved'
          ? shortestWindow([
              { source: 'approver', seconds: resolution.window_seconds },
              { source: 'policy', seconds: request.max_window_seconds },
            ])!
          : null;
      const written = writeResolution(tx, ctx.caller.identity, {
        id: newId('res'),
        request_id: request.id,
        resolution: resolution.resolution,
        resolver: ctx.caller.identity,
        validity: resolution.validity,
        window_seconds: window?.seconds ?? null,
        window_source: window?.source ?? null,
        valid_until: window ? addSeconds(now, window.seconds) : null,
        comment: resolution.comment,
        resolved_at: now,
      });
      // Staged, not yet in the table: the view is given the resolution it cannot read yet.
      return approvalView(checkedReads(tx.db, tx.log), request, now, written);
    });

  return {
    async registerTool(ctx, body) {
      const input = parseInput(toolInputSchema, body, {
        what: 'tool registration',
        maxBytes,
      });
      const { replaces_version, ...fields } = input;
      return ledger.transactConcurrently(ctx.log, recordKeys.registerTool(), async (tx) => {
        const current = await checkedReads(tx.db, tx.log).latestTool(fields.server_id, fields.tool_name);
        if (current) {
          if (sameRegistration(current, fields)) return { tool: current, replayed: true };
          // Discovery is not authorization: it never overrides what an operator registered.
          if (fields.source === 'discovery') return { tool: current, replayed: true };
          // A discovered entry is a placeholder an operator may declare over; a manual
          // registration is only changed by someone who says which version they replace.
          if (current.source === 'manual' && replaces_version !== current.version) {
            throw new LedgerError(
              'TOOL_EXISTS',
              `${fields.server_id}/${fields.tool_name} is registered (version ${current.version}); pass replaces_version to change it`,
              { details: { tool_id: current.id, version: current.version } },
            );
          }
        }
        const tool = writeTool(tx, ctx.caller.identity, {
          id: newId('tool'),
          ...fields,
          version: (current?.version ?? 0) + 1,
          registered_by: ctx.caller.identity,
          registered_at: timeOf(tx),
        });
        return { tool, replayed: false };
      });
    },

    listTools: (log) => listLatestTools(database.db, log),

    async propose(ctx, body) {
      const input = parseInput(proposalInputSchema, body, { what: 'proposal', maxBytes });
      const payload = proposalPayloadOf(input);
      const payloadHash = proposalPayloadHash(payload);
      const caller = ctx.caller;
      return ledger.transactConcurrently(ctx.log, recordKeys.propose(input.idempotency_key), async (tx) => {
        const now = timeOf(tx);
        const existing = await checkedReads(tx.db, tx.log).proposalByKey(input.idempotency_key);
        if (existing) {
          if (existing.payload_hash !== payloadHash || !sameIdentity(existing.requester, caller.identity)) {
            throw new LedgerError(
              'IDEMPOTENCY_CONFLICT',
              `idempotency key ${input.idempotency_key} was used for another proposal`,
              { details: { proposal_id: existing.id } },
            );
          }
          const decision = await checkedReads(tx.db, tx.log).decisionOf(existing.id);
          const approval = decision?.approval_request_id
            ? await checkedReads(tx.db, tx.log).requestById(decision.approval_request_id)
            : null;
          return { proposal: existing, decision, approval, replayed: true };
        }
        const proposal = writeProposal(tx, caller.identity, {
          id: newId('prop'),
          idempotency_key: input.idempotency_key,
          requester: caller.identity,
          requester_scopes: [...(caller.scopes ?? [])],
          requester_environments: caller.environments ? [...caller.environments] : null,
          ...payload,
          payload_hash: payloadHash,
          proposed_at: now,
        });
        if (policy === 'external') return { proposal, decision: null, approval: null, replayed: false };

        const tool = await checkedReads(tx.db, tx.log).latestTool(proposal.server_id, proposal.tool_name);
        const result = evaluatePolicy({
          proposal,
          tool,
          caller: { scopes: proposal.requester_scopes, environments: proposal.requester_environments },
        });
        const approval =
          result.verdict === 'require_approval'
            ? await requestApproval(tx, caller.identity, proposal, tool, now)
            : null;
        const decision = writeDecision(tx, caller.identity, {
          id: newId('dec'),
          proposal_id: proposal.id,
          ...result,
          source: 'built_in',
          tool_id: tool?.id ?? null,
          approval_request_id: approval?.id ?? null,
          decided_by: 'policy:built_in',
          decided_at: now,
        });
        return { proposal, decision, approval, replayed: false };
      });
    },

    async decide(ctx, body) {
      const input = parseInput(decisionInputSchema, body, {
        what: 'decision',
        maxBytes,
      });
      return ledger.transactConcurrently(ctx.log, recordKeys.decide(input.proposal_id), async (tx) => {
        const now = timeOf(tx);
        const proposal = await mustGetProposal(checkedReads(tx.db, tx.log), input.proposal_id);
        const existing = await checkedReads(tx.db, tx.log).decisionOf(proposal.id);
        if (existing) {
          throw new LedgerError('DECISION_EXISTS', `proposal ${proposal.id} already has a decision`, {
            details: { decision_id: existing.id, source: existing.source },
          });
        }
        const tool = await checkedReads(tx.db, tx.log).latestTool(proposal.server_id, proposal.tool_name);
        const executable = input.verdict === 'allow' || input.verdict === 'require_approval';
        // No engine can make an unregistered tool executable: discovery and registration
        // are the only doors into the registry, and a decision is neither.
        if (executable && !tool) {
          throw new LedgerError(
            'TOOL_NOT_REGISTERED',
            `${proposal.server_id}/${proposal.tool_name} is not registered; it cannot be allowed`,
            { details: { server_id: proposal.server_id, tool_name: proposal.tool_name } },
          );
        }
        const approval =
          input.verdict === 'require_approval'
            ? await requestApproval(tx, ctx.caller.identity, proposal, tool, now)
            : null;
        const decision = writeDecision(tx, ctx.caller.identity, {
          id: newId('dec'),
          proposal_id: proposal.id,
          verdict: input.verdict,
          reasons: input.reasons.map(stripUndefined),
          repair: input.repair,
          authorized_identity: executable ? (input.authorized_identity ?? proposal.requester) : null,
          source: input.source,
          tool_id: tool?.id ?? null,
          approval_request_id: approval?.id ?? null,
          decided_by: ctx.caller.identity,
          decided_at: now,
        });
        return { decision, approval };
      });
    },

    async getProposal(log, proposalId) {
      return mustGetProposal(checkedReads(database.db, log), proposalId);
    },

    async getObservation(log, observationId) {
      const observation = await checkedReads(database.db, log).observationById(observationId);
      if (!observation) throw notFound('observation', observationId);
      return observation;
    },

    async getApproval(log, requestId) {
      const request = await checkedReads(database.db, log).requestById(requestId);
      if (!request) throw notFound('approval request', requestId);
      return approvalView(checkedReads(database.db, log), request, wallNow());
    },

    async listApprovals(log, opts = {}) {
      const limit = Math.min(Math.max(opts.limit ?? 50, 1), 500);
      const now = wallNow();
      const rows = await listRequests(database.db, log, {
        now,
        limit,
        ...(opts.status ? { status: opts.status } : {}),
        ...(opts.after !== undefined ? { after: opts.after } : {}),
      });
      const approvals = await Promise.all(
        rows.map((row) => approvalView(checkedReads(database.db, log), row.request, now)),
      );
      return { approvals, next: rows.length === limit ? rows[rows.length - 1]!.seq : null };
    },

    async approve(ctx, body) {
      const input = parseInput(approveInputSchema, body, {
        what: 'approval',
        maxBytes,
      });
      return resolve(ctx, input.request_id, {
        resolution: 'approved',
        validity: input.validity,
        window_seconds: input.window_seconds,
        comment: input.comment,
      });
    },

    async deny(ctx, body) {
      const input = parseInput(denyInputSchema, body, {
        what: 'denial',
        maxBytes,
      });
      return resolve(ctx, input.request_id, {
        resolution: 'denied',
        validity: null,
        window_seconds: null,
        comment: input.comment,
      });
    },

    async authorize(ctx, body) {
      const input = parseInput(authorizeInputSchema, body, { what: 'authorization', maxBytes });
      const checked = await ledger.transactConcurrently(
        ctx.log,
        recordKeys.execute(input.proposal_id),
        async (tx) => {
          const proposal = await mustGetProposal(checkedReads(tx.db, tx.log), input.proposal_id);
          const observed = await checkedReads(tx.db, tx.log).observationOf(proposal.id);
          // An execution is recorded once; `unknown` included: it is never retried automatically.
          if (observed) {
            throw new LedgerError('OBSERVATION_EXISTS', `proposal ${proposal.id} has already been executed`, {
              details: { observation_id: observed.id, outcome: observed.outcome },
            });
          }
          return checkExecution(tx, ctx.caller, proposal, input, timeOf(tx));
        },
      );
      if (!checked.ok)
        throw new LedgerError(checked.code, checked.message, { details: { proposal_id: input.proposal_id } });
      return { proposal: checked.proposal, decision: checked.decision, approval_use: checked.use };
    },

    async observe(ctx, body) {
      const input = parseInput(observationInputSchema, body, {
        what: 'observation',
        maxBytes,
      });
      const outcome = await ledger.transactConcurrently(
        ctx.log,
        recordKeys.execute(input.proposal_id),
        async (tx) => {
          const now = timeOf(tx);
          const proposal = await mustGetProposal(checkedReads(tx.db, tx.log), input.proposal_id);
          // The attempt is evidence (a gateway that executed anyway, a stolen key, a second
          // account of what happened): keep it, then refuse. Returning instead of throwing
          // lets this refusal commit.
          const refuse = (code: LedgerErrorCode, message: string, details: Record<string, string> = {}) => {
            const refusal = writeRefusal(tx, ctx.caller.identity, {
              id: newId('ref'),
              proposal_id: proposal.id,
              code,
              message,
              attempted_by: ctx.caller.identity,
              attempted: body as JsonValue,
              refused_at: now,
            });
            return {
              kind: 'refused' as const,
              code,
              message,
              details: { ...details, refusal_id: refusal.id },
            };
          };
          const first = await checkedReads(tx.db, tx.log).observationOf(proposal.id);
          if (first) {
            const replay = { recorded: first, proposal, caller: ctx.caller, attempt: input };
            if (await isObservationReplay(checkedReads(tx.db, tx.log), replay)) {
              return { kind: 'observed' as const, replayed: true, observation: first };
            }
            // One execution, one account of it: a different one is refused, never swallowed.
            return refuse(
              'OBSERVATION_CONFLICT',
              `proposal ${proposal.id} already has observation ${first.id} (${first.outcome}, by ${first.executed_by}); another account of it is refused`,
              { observation_id: first.id },
            );
          }
          const checked = await checkExecution(tx, ctx.caller, proposal, input, now);
          if (!checked.ok) return refuse(checked.code, checked.message);
          const observation = writeObservation(tx, ctx.caller.identity, {
            id: newId('obs'),
            proposal_id: proposal.id,
            decision_id: checked.decision.id,
            approval_use_id: checked.use?.id ?? null,
            server_id: proposal.server_id,
            tool_name: proposal.tool_name,
            executed_by: ctx.caller.identity,
            outcome: input.outcome,
            result: input.result,
            transport_status: input.transport_status,
            tool_error: input.tool_error,
            started_at: input.started_at,
            finished_at: input.finished_at,
            observed_at: now,
          });
          return { kind: 'observed' as const, replayed: false, observation };
        },
      );
      if (outcome.kind === 'refused') {
        throw new LedgerError(outcome.code, outcome.message, {
          details: { proposal_id: input.proposal_id, ...outcome.details },
        });
      }
      return { observation: outcome.observation, replayed: outcome.replayed };
    },

    async recordVerification(ctx, body, options = {}) {
      if (typeof body === 'object' && body !== null && 'status' in body) {
        throw new LedgerError(
          'VERIFICATION_INVALID',
          'a verification status is derived from its checks, never supplied',
          {
            details: { field: '/status' },
          },
        );
      }
      const input = parseInput(verificationInputSchema, body, {
        what: 'verification',
        maxBytes,
      });
      return ledger.transactConcurrently(ctx.log, recordKeys.verify(input.observation_id), async (tx) => {
        const reads = checkedReads(tx.db, tx.log);
        const observation = await reads.observationById(input.observation_id);
        if (!observation) throw notFound('observation', input.observation_id);
        const [proposal, earlier] = await Promise.all([
          mustGetProposal(reads, observation.proposal_id),
          verificationsOf(tx.db, tx.log, ledger.integrityAlarm, observation.proposal_id),
        ]);
        // A check read from the system that performed the write is not independent, and
        // neither is one the audited party reports about its own action, whatever source it
        // names (so every source it names counts as the writer).
        const selfReported =
          !options.checksRunByServer && isAuditedParty(ctx.caller.identity, proposal, observation);
        const writerOf = (check: { source?: unknown }) => ({
          writer:
            selfReported && typeof check.source === 'string'
              ? [observation.server_id, check.source]
              : observation.server_id,
        });
        const now = timeOf(tx);
        const verification = toVerificationRecord({
          id: newId('ver'),
          observation,
          proposal,
          checks: input.checks.map((c) => assessIndependence(c, writerOf(c))) as VerificationCheck[],
          verifier: ctx.caller.identity,
          verifiedAt: now,
          settleSeconds,
          supersedes: input.supersedes && { ids: input.supersedes, reason: input.reason! },
        });
        assertSupersession({ caller: ctx.caller, proposal, observation, earlier, next: verification });
        writeVerification(tx, ctx.caller.identity, verification);
        return {
          verification,
          verification_status: effectiveVerification({
            proposal,
            observation,
            verifications: [...earlier, verification],
            settleSeconds,
            now,
          }),
        };
      });
    },

    async story(log, proposalId) {
      const db = database.db;
      const proposal = await mustGetProposal(checkedReads(db, log), proposalId);
      const [decision, observation, refusals, verificationList] = await Promise.all([
        checkedReads(db, log).decisionOf(proposal.id),
        checkedReads(db, log).observationOf(proposal.id),
        refusalsOf(db, log, ledger.integrityAlarm, proposal.id),
        verificationsOf(db, log, ledger.integrityAlarm, proposal.id),
      ]);
      const request = decision?.approval_request_id
        ? await checkedReads(db, log).requestById(decision.approval_request_id)
        : null;
      const approval = request ? await approvalView(checkedReads(db, log), request, wallNow()) : null;
      const verification = verificationList.at(-1) ?? null;
      const verificationStatus = effectiveVerification({
        proposal,
        observation,
        verifications: verificationList,
        settleSeconds,
        now: wallNow(),
      });
      // The outcome follows the status of all records, not the latest one; while an unknown
      // outcome settles there is no verdict yet.
      const verified =
        verificationList.length === 0 || verificationStatus.reason === 'OUTCOME_UNKNOWN'
          ? null
          : { status: verificationStatus.status };
      const entities = [
        proposal.id,
        decision?.id,
        request?.id,
        approval?.resolution?.id,
        ...(approval?.uses.filter((u) => u.proposal_id === proposal.id).map((u) => u.id) ?? []),
        observation?.id,
        ...refusals.map((r) => r.id),
        ...verificationList.map((v) => v.id),
      ].filter((e): e is string => typeof e === 'string');
      const events = await db
        .select({
          log: auditEvents.logId,
          seq: auditEvents.seq,
          kind: auditEvents.kind,
          entity: auditEvents.entityId,
          actor: auditEvents.actor,
          at: auditEvents.recordedAt,
          payload: auditEvents.payload,
          payload_hash: auditEvents.payloadHash,
          prev_hash: auditEvents.prevHash,
          hash: auditEvents.hash,
        })
        .from(auditEvents)
        .where(and(eq(auditEvents.logId, log), anyOf(auditEvents.entityId, entities)))
        .orderBy(asc(auditEvents.seq));
      return {
        proposal,
        decision,
        approval,
        observation,
        refusals,
        verifications: verificationList,
        verification,
        verification_status: verificationStatus,
        outcome: deriveOutcome({ observation, verificationStatus: verified?.status ?? null }),
        stage: deriveStage({ proposal, decision, approval, observation, refusals }),
        events,
      };
    },
  };
}

/** Record ids: a type prefix for people reading logs, 122 random bits for uniqueness. */
function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

function notFound(what: string, id: string): LedgerError {
  return new LedgerError('NOT_FOUND', `${what} ${id} does not exist in this log`, { details: { id } });
}

function sameRegistration(
  current: ToolRecord,
  next: Omit<ToolRecord, 'id' | 'version' | 'registered_by' | 'registered_at'>,
): boolean {
  return (
    current.side_effect === next.side_effect &&
    current.dry_run_tool === next.dry_run_tool &&
    current.compensation_tool === next.compensation_tool &&
    current.approval_required === next.approval_required &&
    current.requires_target_id === next.requires_target_id &&
    current.max_approval_window_seconds === next.max_approval_window_seconds &&
    current.source === next.source &&
    JSON.stringify(current.required_scopes) === JSON.stringify(next.required_scopes) &&
    JSON.stringify(current.allowed_environments) === JSON.stringify(next.allowed_environments)
  );
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
