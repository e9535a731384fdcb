import type { AuthorKey } from '@vouch/audit';
import type { Ledger } from '../ledger';
import { canonicalPolicy, type PolicyConfiguration } from '../policy/policy-configuration';
import { type ApprovalView, approve, deny, getApproval, listApprovals } from './approvals';
import { type VerificationWriter, verificationWriter } from './check-record-writers';
import {
  type Authorization,
  type AuthorizeOptions,
  authorize,
  getObservation,
  observe,
  sweepLapsedClaims,
} from './executions';
import { DEFAULT_MAX_INPUT_BYTES } from './inputs';
import { createPolicyPinner } from './policy-pins';
import { decide, type ProposalResult, propose } from './proposals';
import type { ApprovalStatus } from './queries';
import type { RecordContext } from './record-context';
import {
  listProposals,
  listVerifications,
  type Page,
  type ProposalListFilter,
  type ProposalListItem,
} from './record-lists';
import { mustGetProposal, notFound, recordsRuntime } from './records-runtime';
import { type ProposalStory, story } from './story';
import { approveToolDefinition, registerTool } from './tool-registry';
import type {
  ApprovalRequestRecord,
  DecisionRecord,
  ObservationRecord,
  ProposalRecord,
  ToolRecord,
  VerificationRecord,
} from './types';
import {
  type RecordedVerification,
  type RecordVerificationOptions,
  recordVerification,
} from './verifications';

export type { ApprovalView } from './approvals';
export type { Authorization } from './executions';
export type { ProposalResult } from './proposals';
export type { RecordContext } from './record-context';
export type { ProposalStory } from './story';
export type { RecordedVerification, RecordVerificationOptions } from './verifications';

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
  /**
   * Pin this policy in each log before the service's first decision there (a
   * `policy.configured` event when the log's latest pin is another one), and refuse to record
   * or act on a decision it does not give (`DECISION_SOURCE_NOT_PINNED`; docs/chain.md, "The
   * policy is pinned"). Its `engine` is the service's `policy`. Default: nothing pinned, as a
   * ledger used as a library.
   */
  pinnedPolicy?: PolicyConfiguration;
  /** How long an approval request may wait for an answer, in seconds (default 24 h). */
  approvalRequestTtlSeconds?: number;
  /** The service's longest approval window, in seconds (default 1 h); the shortest rule wins. */
  maxApprovalWindowSeconds?: number;
  /**
   * How long after an observation with outcome `unknown` (a timeout: the tool may still act)
   * its verification stays held at inconclusive (`OUTCOME_UNKNOWN`), in seconds (default 15 min).
   */
  unknownOutcomeSettleSeconds?: number;
  /**
   * How long an execution claim waits for its observation, in seconds (default 10 min), and
   * the longest a gateway may ask for (`claim_seconds`). After it the sweep records `unknown`.
   */
  executionClaimSeconds?: number;
  /**
   * The key the server signs its own records with (the policy pin, a lapsed claim's `unknown`
   * outcome, a settle verification; docs/chain.md, "The server signs its own"), used while it is
   * enrolled and live for `vouch:server`. Without it, or while it is not enrolled, they are
   * written unsigned (and refused once another key signs for the server).
   */
  serverKey?: AuthorKey;
}

/** The records service: every write appends its record's audit event in the same transaction. */
export interface Records {
  /** Register a tool, or a new version of it; identical re-registration and discovery of a known tool replay. */
  registerTool(ctx: RecordContext, input: unknown): Promise<{ tool: ToolRecord; replayed: boolean }>;
  /** Pin an approved tool definition (a new version of its registration); a pending change to it is settled. */
  approveToolDefinition(ctx: RecordContext, input: unknown): Promise<{ tool: ToolRecord; replayed: boolean }>;
  /** The latest registration of every tool of a log. */
  listTools(log: string): Promise<ToolRecord[]>;
  /** Record a proposal (and, with the built-in policy, its decision and approval request). */
  propose(ctx: RecordContext, input: unknown): Promise<ProposalResult>;
  /** Record an external policy engine's decision; one per proposal (`DECISION_EXISTS`). */
  decide(
    ctx: RecordContext,
    input: unknown,
  ): Promise<{ decision: DecisionRecord; approval: ApprovalRequestRecord | null }>;
  /**
   * Proposals with no decision yet (at most `limit`, default 100), in every log or `log`, in
   * log then chain order after the cursor `after` (the last one of the previous page): what
   * an external engine the server asks still has to answer.
   */
  undecidedProposals(options?: {
    log?: string;
    limit?: number;
    after?: { log: string; seq: number };
  }): Promise<Array<{ log: string; seq: number; proposalId: string }>>;
  getProposal(log: string, id: string): Promise<ProposalRecord>;
  /** A proposal's decision; NOT_FOUND while it has none. */
  getDecision(log: string, proposalId: string): Promise<DecisionRecord>;
  /**
   * One tool registration by id, e.g. the one a decision read (`decision.tool_id`), whatever
   * was registered since; NOT_FOUND when the log has none with that id.
   */
  getTool(log: string, id: string): Promise<ToolRecord>;
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
  /**
   * Before executing: check the decision, the approval and the precondition checks the
   * server ran (`options`, never the body), use the approval and record the execution claim.
   */
  authorize(ctx: RecordContext, input: unknown, options?: AuthorizeOptions): Promise<Authorization>;
  /**
   * Record an `unknown` observation for every execution claim past its deadline with no
   * observation (in every log, or `log`); never retried. Safe to run in several processes at once.
   */
  sweepLapsedClaims(options?: { log?: string; limit?: number }): Promise<ObservationRecord[]>;
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
  /**
   * Whether `identity` may record a verification in `log` now, and no earlier than when (see
   * `verificationWriter`): for a verification recorded in its name later than the request
   * that authenticated it (a queued job).
   */
  verificationWriter(log: string, identity: string): Promise<VerificationWriter>;
  /** The proposal, its decision, approval, observation, verifications, outcome and events. */
  story(log: string, proposalId: string): Promise<ProposalStory>;
  /**
   * Judge the caller's signature over `claims` as `action` now, as a record written with it
   * would be (`SIGNATURE_REQUIRED`, `SIGNATURE_INVALID`): for a request that is queued first.
   */
  requestSignature(ctx: RecordContext, action: string, claims: unknown): Promise<void>;
  /** Proposals in chain order, filtered by stored columns and by derived stage and outcome. */
  listProposals(
    log: string,
    options?: ProposalListFilter & { after?: number; limit?: number },
  ): Promise<Page<ProposalListItem>>;
  /** Verification records in chain order, optionally of one recorded status. */
  listVerifications(
    log: string,
    options?: { status?: VerificationRecord['status']; after?: number; limit?: number },
  ): Promise<Page<{ seq: number; verification: VerificationRecord }>>;
}

/**
 * Create the records service over a ledger. Each write runs in `ledger.transactConcurrently`,
 * so the record row and its audit event (kind = record type, payload = the record as stored,
 * entity = the record id) commit together or not at all, and the checks before it run
 * under the log's lock, beside the other operations whose keys (`record-keys.ts`) do not
 * collide with its own. Each aggregate's operations live in their own module (`tool-registry.ts`,
 * `proposals.ts`, `approvals.ts`, `executions.ts`, `verifications.ts`, `story.ts`); they read
 * through `tx.reads` (`log-reads.ts`) and write with `tx.write` (`record-transaction.ts`).
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
  const runtime = recordsRuntime(
    ledger,
    {
      maxInputBytes: options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
      policy: options.pinnedPolicy?.engine ?? options.policy ?? 'built_in',
      ...(options.pinnedPolicy ? { pinnedPolicy: canonicalPolicy(options.pinnedPolicy) } : {}),
      approvalRequestTtlSeconds: options.approvalRequestTtlSeconds ?? 24 * 3600,
      maxApprovalWindowSeconds: options.maxApprovalWindowSeconds ?? 3600,
      unknownOutcomeSettleSeconds: options.unknownOutcomeSettleSeconds ?? 900,
      executionClaimSeconds: options.executionClaimSeconds ?? 600,
    },
    options.now,
    options.serverKey,
  );
  const pinner = options.pinnedPolicy
    ? createPolicyPinner(ledger, options.pinnedPolicy, runtime.serverSigner)
    : undefined;
  return {
    registerTool: (ctx, body) => registerTool(runtime, ctx, body),
    approveToolDefinition: (ctx, body) => approveToolDefinition(runtime, ctx, body),
    listTools: (log) => runtime.reads(log).latestTools(),
    propose: async (ctx, body) => {
      await pinner?.ensure(ctx.log);
      return propose(runtime, ctx, body);
    },
    decide: async (ctx, body) => {
      await pinner?.ensure(ctx.log);
      return decide(runtime, ctx, body);
    },
    undecidedProposals: (opts = {}) =>
      runtime.undecidedProposals({
        limit: opts.limit ?? 100,
        ...(opts.log === undefined ? {} : { log: opts.log }),
        ...(opts.after === undefined ? {} : { after: opts.after }),
      }),
    getProposal: async (log, proposalId) => mustGetProposal(runtime.reads(log), proposalId),
    getDecision: async (log, proposalId) => {
      const decision = await runtime.reads(log).decisionOf(proposalId);
      if (!decision) throw notFound('decision of proposal', proposalId);
      return decision;
    },
    getTool: async (log, toolId) => {
      const tool = await runtime.reads(log).toolById(toolId);
      if (!tool) throw notFound('tool', toolId);
      return tool;
    },
    getObservation: (log, observationId) => getObservation(runtime, log, observationId),
    getApproval: (log, requestId) => getApproval(runtime, log, requestId),
    listApprovals: (log, opts = {}) => listApprovals(runtime, log, opts),
    approve: (ctx, body) => approve(runtime, ctx, body),
    deny: (ctx, body) => deny(runtime, ctx, body),
    authorize: (ctx, body, options) => authorize(runtime, ctx, body, options),
    observe: (ctx, body) => observe(runtime, ctx, body),
    sweepLapsedClaims: (opts = {}) => sweepLapsedClaims(runtime, opts),
    recordVerification: (ctx, body, opts = {}) => recordVerification(runtime, ctx, body, opts),
    verificationWriter: (log, identity) =>
      verificationWriter(ledger.database.db, log, identity, runtime.wallNow()),
    story: (log, proposalId) => story(runtime, log, proposalId),
    requestSignature: async (ctx, action, claims) => {
      await runtime.authorSignature(ctx, action, claims);
    },
    listProposals: (log, opts = {}) => listProposals(runtime, log, opts),
    listVerifications: (log, opts = {}) => listVerifications(runtime, log, opts),
  };
}
