import { sameIdentity } from '@vouch/audit';
import type {
  ApprovalRequestRecord,
  ApprovalResolutionRecord,
  ApprovalUseRecord,
  ProposalRecord,
} from '../records/types';

/** A rule that limits how long an approval may last, and who set it. */
export interface WindowRule {
  source: string;
  /** Seconds; `null` or absent: this rule sets no limit. */
  seconds?: number | null;
}

/**
 * The window that applies where several rules set one: the shortest wins, because each rule
 * is a limit somebody chose and none of them may be stretched by another. Null when no rule
 * sets one.
 *
 * @example
 * shortestWindow([{ source: 'approver', seconds: 3600 }, { source: 'tool', seconds: 600 }]); // { source: 'tool', seconds: 600 }
 */
export function shortestWindow(rules: readonly WindowRule[]): { source: string; seconds: number } | null {
  let best: { source: string; seconds: number } | null = null;
  for (const rule of rules) {
    if (rule.seconds === null || rule.seconds === undefined) continue;
    if (best === null || rule.seconds < best.seconds) best = { source: rule.source, seconds: rule.seconds };
  }
  return best;
}

/** `iso` plus `seconds`, as ISO 8601 UTC with milliseconds. */
export function addSeconds(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString();
}

/** True when `now` is at or past `deadline` (both ISO 8601). */
export function isPast(deadline: string, now: string): boolean {
  return Date.parse(now) >= Date.parse(deadline);
}

/**
 * How an answer breaks the bounds the server sets when it writes one, or null when it keeps
 * them: answered before the request expired; an approval for a window of at most the
 * request's `max_window_seconds`, ending exactly that long after it was answered
 * (`valid_until = resolved_at + window_seconds`, never open-ended); a denial with neither.
 * The record rules and every check before an approval is acted on apply the same bounds.
 */
export function approvalBoundsBreak(
  request: Pick<ApprovalRequestRecord, 'id' | 'expires_at' | 'max_window_seconds'>,
  resolution: Pick<ApprovalResolutionRecord, 'resolution' | 'window_seconds' | 'valid_until' | 'resolved_at'>,
): string | null {
  const resolvedAt = Date.parse(resolution.resolved_at);
  if (!(resolvedAt < Date.parse(request.expires_at))) {
    return `answered at ${resolution.resolved_at}, not before request ${request.id} expired at ${request.expires_at}`;
  }
  const seconds = resolution.window_seconds;
  if (resolution.resolution !== 'approved') {
    return seconds === null && resolution.valid_until === null ? null : 'a denial sets no window';
  }
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds <= 0) {
    return `approves for a window of ${String(seconds)} seconds`;
  }
  if (seconds > request.max_window_seconds) {
    return `approves for ${seconds} seconds, request ${request.id} allows at most ${request.max_window_seconds}`;
  }
  if (resolution.valid_until !== addSeconds(resolution.resolved_at, seconds)) {
    return `valid until ${String(resolution.valid_until)}, not ${seconds} seconds after it was answered at ${resolution.resolved_at}`;
  }
  return null;
}

/** Why an approval does not authorize an execution; each is also a `LedgerError` code. */
export type ApprovalRefusalCode =
  | 'EXECUTION_NOT_AUTHORIZED'
  | 'APPROVAL_EXPIRED'
  | 'APPROVAL_CONSUMED'
  | 'APPROVAL_PAYLOAD_MISMATCH'
  | 'APPROVAL_SCOPE_MISMATCH'
  | 'APPROVAL_BOUNDS_VIOLATED'
  | 'SELF_APPROVAL';

/** Whether an approval authorizes executing one proposal now, and why not. */
export type ApprovalCheck =
  | { ok: true; resolution: ApprovalResolutionRecord; existingUse: ApprovalUseRecord | null }
  | { ok: false; code: ApprovalRefusalCode; message: string };

/**
 * Decide whether `request` (with its resolution and uses so far) lets `proposal` execute at
 * `now`. An approval is bound to one payload hash and one requester + server + tool: it
 * never carries over to another payload or another requester. `once` allows one use in
 * total (a use by this same proposal is returned so the caller can reuse it); `window`
 * allows repeated uses of the same payload until `valid_until`.
 */
export function checkApproval(input: {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord | null;
  uses: readonly ApprovalUseRecord[];
  proposal: Pick<ProposalRecord, 'id' | 'requester' | 'server_id' | 'tool_name' | 'payload_hash'>;
  now: string;
}): ApprovalCheck {
  const { request, resolution, uses, proposal, now } = input;
  if (
    !sameIdentity(request.requester, proposal.requester) ||
    request.server_id !== proposal.server_id ||
    request.tool_name !== proposal.tool_name
  ) {
    return refuse(
      'APPROVAL_SCOPE_MISMATCH',
      `approval request ${request.id} is for ${request.requester} on ${request.server_id}/${request.tool_name}`,
    );
  }
  if (request.payload_hash !== proposal.payload_hash) {
    return refuse('APPROVAL_PAYLOAD_MISMATCH', `approval request ${request.id} was shown another payload`);
  }
  if (resolution === null) {
    return isPast(request.expires_at, now)
      ? refuse(
          'APPROVAL_EXPIRED',
          `approval request ${request.id} expired unanswered at ${request.expires_at}`,
        )
      : refuse('EXECUTION_NOT_AUTHORIZED', `approval request ${request.id} has not been answered`);
  }
  // An answer the server never writes is no answer at all: one by the requester itself
  // (nobody approves their own request), or beyond the bounds (an open-ended or stretched window).
  if (sameIdentity(resolution.resolver, request.requester)) {
    return refuse(
      'SELF_APPROVAL',
      `approval request ${request.id} was answered by its own requester ${resolution.resolver}`,
    );
  }
  const broken = approvalBoundsBreak(request, resolution);
  if (broken !== null) {
    return refuse('APPROVAL_BOUNDS_VIOLATED', `the answer to approval request ${request.id} ${broken}`);
  }
  if (resolution.resolution === 'denied') {
    return refuse('EXECUTION_NOT_AUTHORIZED', `approval request ${request.id} was denied`);
  }
  const existingUse = uses.find((use) => use.proposal_id === proposal.id) ?? null;
  if (existingUse) return { ok: true, resolution, existingUse };
  if (resolution.valid_until === null || isPast(resolution.valid_until, now)) {
    return refuse(
      'APPROVAL_EXPIRED',
      `the approval of request ${request.id} expired at ${resolution.valid_until}`,
    );
  }
  if (resolution.validity === 'once' && uses.length > 0) {
    return refuse('APPROVAL_CONSUMED', `the single-use approval of request ${request.id} was already used`);
  }
  return { ok: true, resolution, existingUse: null };
}

/**
 * Whether a new proposal with the same payload, requester, server and tool may wait on this
 * request instead of opening another: while it is pending, approved for a window that is
 * still open, or approved once and not used yet (so an approval survives the gateway that
 * asked for it: the next identical call, from any process, takes it). A denied request is
 * never reused (a denial answers only that request), nor a single-use approval already used.
 */
export function isReusableRequest(input: {
  request: ApprovalRequestRecord;
  resolution: ApprovalResolutionRecord | null;
  /** Whether any execution used the request's approval. */
  used: boolean;
  proposal: Pick<ProposalRecord, 'requester' | 'server_id' | 'tool_name' | 'payload_hash'>;
  now: string;
}): boolean {
  const { request, resolution, used, proposal, now } = input;
  if (
    !sameIdentity(request.requester, proposal.requester) ||
    request.server_id !== proposal.server_id ||
    request.tool_name !== proposal.tool_name ||
    request.payload_hash !== proposal.payload_hash
  ) {
    return false;
  }
  if (resolution === null) return !isPast(request.expires_at, now);
  return (
    resolution.resolution === 'approved' &&
    !sameIdentity(resolution.resolver, request.requester) &&
    approvalBoundsBreak(request, resolution) === null &&
    (resolution.validity === 'window' || !used) &&
    resolution.valid_until !== null &&
    !isPast(resolution.valid_until, now)
  );
}

function refuse(code: ApprovalRefusalCode, message: string): ApprovalCheck {
  return { ok: false, code, message };
}
