import { sameIdentity } from '@vouch/audit';
import { LedgerError } from '../errors';
import { addSeconds, isPast, isReusableRequest, shortestWindow } from '../policy/approval-validity';
import { approveInputSchema, denyInputSchema, parseInput } from './inputs';
import type { LogReads } from './log-reads';
import { type ApprovalStatus, approvalStatusOf } from './queries';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId, type RecordTransaction } from './record-transaction';
import { notFound, type RecordsRuntime } from './records-runtime';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  ProposalRecord,
  ToolRecord,
} from './types';

/** The keys of an approval's approver to look for a revocation in, between its answer and `now`. */
export const approverKeysAt = (resolution: ApprovalResolutionRecord, now: string) => ({
  identity: resolution.resolver,
  liveAt: resolution.resolved_at,
  by: now,
});

/** An approval request with everything an approver must see: the exact payload, target, environment and impact. */
export interface ApprovalView {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord | null;
  uses: ApprovalUseRecord[];
  status: ApprovalStatus;
  /** The proposal the request was opened for: what the approver is shown and the payload hash covers. */
  proposal: ProposalRecord;
}

/**
 * Open an approval request for a proposal, or reuse one already waiting on the same
 * payload, requester, server and tool, so a retried proposal does not pile up requests.
 */
export async function requestApproval(
  runtime: RecordsRuntime,
  tx: RecordTransaction,
  actor: string,
  proposal: ProposalRecord,
  tool: ToolRecord | null,
  now: string,
): Promise<ApprovalRequestRecord> {
  tx.claim(recordKeys.approvalScope(proposal));
  for (const candidate of await tx.reads.reusableRequests(proposal, now)) {
    if (!isReusableRequest({ ...candidate, proposal, now })) continue;
    // An approval whose approver's key was revoked since no longer authorizes: ask again.
    const { resolution } = candidate;
    if (resolution && (await tx.reads.revokedApproverKeys(approverKeysAt(resolution, now))).length > 0)
      continue;
    // Shared only if what its approver was shown is this payload: the hash alone can lie.
    const shown = await tx.reads.proposalById(candidate.request.proposal_id);
    if (shown) tx.reads.requireProposalPayload(shown);
    return candidate.request;
  }
  const window = shortestWindow([
    { source: 'tool', seconds: tool?.max_approval_window_seconds },
    { source: 'service', seconds: runtime.settings.maxApprovalWindowSeconds },
  ])!;
  return tx.write('approval_request', actor, {
    id: newId('apr'),
    proposal_id: proposal.id,
    payload_hash: proposal.payload_hash,
    requester: proposal.requester,
    server_id: proposal.server_id,
    tool_name: proposal.tool_name,
    environment: proposal.target.env,
    expires_at: addSeconds(now, runtime.settings.approvalRequestTtlSeconds),
    max_window_seconds: window.seconds,
    requested_at: now,
  });
}

/** The request with its answer, uses, status at `now` and proposal; `staged`: an answer not yet readable. */
export async function approvalView(
  reads: LogReads,
  request: ApprovalRequestRecord,
  now: string,
  staged?: ApprovalResolutionRecord,
): Promise<ApprovalView> {
  const [resolution, uses, proposal] = await Promise.all([
    staged ?? reads.resolutionOf(request.id),
    reads.usesOf(request.id),
    reads.proposalById(request.proposal_id),
  ]);
  // What the approver is shown must be what the request's payload hash binds.
  if (proposal) reads.requireProposalPayload(proposal);
  return {
    request,
    resolution,
    uses,
    status: approvalStatusOf(request, resolution, uses, now),
    proposal: proposal!,
  };
}

export async function getApproval(
  runtime: RecordsRuntime,
  log: string,
  requestId: string,
): Promise<ApprovalView> {
  const reads = runtime.reads(log);
  const request = await reads.requestById(requestId);
  if (!request) throw notFound('approval request', requestId);
  return approvalView(reads, request, runtime.wallNow());
}

export async function listApprovals(
  runtime: RecordsRuntime,
  log: string,
  opts: { status?: ApprovalStatus; after?: number; limit?: number },
): Promise<{ approvals: ApprovalView[]; next: number | null }> {
  const limit = Math.min(Math.max(opts.limit ?? 50, 1), 500);
  const now = runtime.wallNow();
  const reads = runtime.reads(log);
  const rows = await reads.listRequests({
    now,
    limit,
    ...(opts.status ? { status: opts.status } : {}),
    ...(opts.after !== undefined ? { after: opts.after } : {}),
  });
  const approvals = await Promise.all(rows.map((row) => approvalView(reads, row.request, now)));
  return { approvals, next: rows.length === limit ? rows[rows.length - 1]!.seq : null };
}

/** Approve a request (not one's own); once, or for a window bounded by every rule. */
export async function approve(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<ApprovalView> {
  const input = parseInput(approveInputSchema, body, {
    what: 'approval',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const signature = await runtime.authorSignature(ctx, 'approval.approve', body);
  return resolve(runtime, ctx, input.request_id, {
    resolution: 'approved',
    validity: input.validity,
    window_seconds: input.window_seconds,
    comment: input.comment,
    ...(signature ? { signature } : {}),
  });
}

/** Deny a request (not one's own); it answers only that request. */
export async function deny(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<ApprovalView> {
  const input = parseInput(denyInputSchema, body, {
    what: 'denial',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const signature = await runtime.authorSignature(ctx, 'approval.deny', body);
  return resolve(runtime, ctx, input.request_id, {
    resolution: 'denied',
    validity: null,
    window_seconds: null,
    comment: input.comment,
    ...(signature ? { signature } : {}),
  });
}

type Answer = Omit<
  ApprovalResolutionRecord,
  'id' | 'request_id' | 'resolver' | 'resolved_at' | 'valid_until' | 'window_seconds' | 'window_source'
> & { window_seconds: number | null };

function resolve(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  requestId: string,
  resolution: Answer,
): Promise<ApprovalView> {
  return runtime.run(ctx, recordKeys.resolveApproval(), async (tx) => {
    const now = tx.time();
    const request = await tx.reads.requestById(requestId);
    if (!request) throw notFound('approval request', requestId);
    const shown = await tx.reads.proposalById(request.proposal_id);
    if (shown) tx.reads.requireProposalPayload(shown);
    if (await tx.reads.resolutionOf(request.id)) {
      throw new LedgerError('APPROVAL_RESOLVED', `approval request ${request.id} has already been answered`, {
        details: { request_id: request.id },
      });
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
    const written = tx.write('approval_resolution', ctx.caller.identity, {
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
      ...(resolution.signature ? { signature: resolution.signature } : {}),
    });
    // Staged, not yet in the table: the view is given the resolution it cannot read yet.
    return approvalView(tx.reads, request, now, written);
  });
}
