import { canonicalIdentity } from '@vouch/audit';
import type { ConflictKeys } from '../batch-plan';

/**
 * What each records operation reads and writes, as conflict keys: operations whose keys do
 * not collide run side by side in one ledger batch (`Ledger.transactConcurrently`), the
 * rest one after another in arrival order. A key names the state an invariant depends on;
 * keys only the reads can name are claimed at run time (`tx.claim`). The unique constraints
 * of the record tables stay the backstop for whatever a key misses: the database refuses the
 * wave and the ledger retries it one operation at a time. Every new operation needs its keys
 * here: a missing one is caught by a constraint only where there is one.
 */

/** The tool registry: read by every decision, written by registrations (rare). */
const TOOLS = 'tools';
/** Approval answers: read by proposals (request reuse) and executions, written by approvers (human speed). */
const APPROVALS = 'approvals';

const key = (...parts: string[]) => JSON.stringify(parts);

export const recordKeys = {
  registerTool: (): ConflictKeys => ({ writes: [TOOLS] }),

  /**
   * A proposal owns its requester's idempotency key: the same key twice from one requester is
   * a replay or a conflict; from two requesters, two proposals.
   */
  propose: (requester: string, idempotencyKey: string): ConflictKeys => ({
    reads: [TOOLS, APPROVALS],
    writes: [key('idempotency', canonicalIdentity(requester), idempotencyKey)],
  }),

  /**
   * Claimed (`tx.claim`) by work that opens an approval request, once its reads say it
   * needs one: another proposal of the same payload, requester, server and tool waits on
   * that request instead of opening its own, so two of them never open one each.
   */
  approvalScope: (p: { requester: string; server_id: string; tool_name: string; payload_hash: string }) =>
    key('approval-scope', p.requester, p.server_id, p.tool_name, p.payload_hash),

  /** An external decision owns its proposal (one decision per proposal). */
  decide: (proposalId: string): ConflictKeys => ({
    reads: [TOOLS, APPROVALS],
    writes: [key('proposal', proposalId)],
  }),

  /** Answering an approval request changes what every execution and proposal reads. */
  resolveApproval: (): ConflictKeys => ({ writes: [APPROVALS] }),

  /**
   * `authorize` and `observe` own their proposal: one execution per proposal. A second
   * observation (a replay, or an OBSERVATION_CONFLICT refusal) writes under the same key, so
   * it runs in a wave after the first and reads it; its replay check reads only approval uses
   * committed with that first observation.
   */
  execute: (proposalId: string): ConflictKeys => ({
    reads: [APPROVALS],
    writes: [key('proposal', proposalId)],
  }),

  /** Claimed by an execution that takes a single-use approval: one use, one execution. */
  approvalUse: (requestId: string) => key('approval-use', requestId),

  /**
   * Claimed by a verification whose passing checks name an evidence reference: the first
   * proposal to use it owns it (`evidence-refs.ts`), so two verifications naming one reference
   * never both read it unused.
   */
  evidenceRef: (ref: string) => key('evidence-ref', ref),

  /**
   * Verifications of one observation go one after another: each reads the ones before it
   * (what it supersedes, and the proposal's status it answers with). Those of different
   * observations run side by side. A verification reads the tool's registration (its
   * `writes` mark checks that read a system the tool writes to), so it runs after a
   * registration of the same batch, as its event's place in the chain says it did.
   */
  verify: (observationId: string): ConflictKeys => ({
    reads: [TOOLS],
    writes: [key('verifications', observationId)],
  }),
};
