import type { CallToolResult } from '@modelcontextprotocol/server';
import type {
  DeniedResult,
  ExecutedResult,
  JsonObject,
  NotAuthorizedResult,
  PendingResult,
  PolicyReason,
  PreconditionFailedResult,
  RepairResult,
} from '@vouch/client';

/**
 * The `_meta` key the gateway puts on every tool result. A reverse-DNS prefix, as the MCP
 * spec asks of custom `_meta` keys, so it cannot collide with the upstream's own.
 */
export const META_KEY = 'vouch.dev/execution';

/** What `_meta["vouch.dev/execution"]` holds: enough for an agent to wait, retry or explain. */
export interface ExecutionMeta {
  status:
    | 'executed'
    | 'approval_pending'
    | 'decision_pending'
    | 'denied'
    | 'repair'
    | 'not_authorized'
    | 'precondition_failed'
    | 'definition_changed'
    | 'error';
  proposal_id?: string;
  payload_hash?: string;
  approval?: { request_id: string; status: string; expires_at: string | null } | null;
  reasons?: { code: string; message: string }[];
  [key: string]: unknown;
}

function withMeta(result: CallToolResult, meta: ExecutionMeta): CallToolResult {
  return { ...result, _meta: { ...(result._meta ?? {}), [META_KEY]: meta } };
}

function reasonsOf(reasons: readonly PolicyReason[]): { code: string; message: string }[] {
  return reasons.map((r) => ({ code: r.code, message: r.message }));
}

function text(lines: string[]): CallToolResult['content'] {
  return [{ type: 'text', text: lines.join('\n') }];
}

/** The upstream's own result, passed through, with what Vouch recorded about it. */
export function executedResult(result: CallToolResult, executed: ExecutedResult<unknown>): CallToolResult {
  return withMeta(result, {
    status: 'executed',
    proposal_id: executed.proposal.id,
    payload_hash: executed.proposal.payload_hash,
    observation_id: executed.observation.id,
    outcome: executed.observation.outcome,
    verification: executed.verification
      ? { id: executed.verification.id, status: executed.verification.status }
      : null,
    replayed: !executed.invoked,
  });
}

/**
 * An approval (or an external decision) is outstanding. Returned as a tool result, not a
 * protocol error, so an agent that reads `_meta` can wait and call again with the same
 * arguments, and one that does not still reads a plain explanation. `isError` is set
 * because the tool did not run: nothing here is the tool's output, and a tool with an
 * `outputSchema` may return no structured content only in an error result.
 */
export function pendingResult(toolName: string, pending: PendingResult): CallToolResult {
  const request = pending.approval?.request;
  if (pending.waitingFor === 'decision' || !request) {
    return withMeta(
      {
        isError: true,
        content: text([
          `The call to ${toolName} was not run: it is waiting for a policy decision (proposal ${pending.proposal.id}).`,
          'Call the tool again with the same arguments later.',
        ]),
      },
      {
        status: 'decision_pending',
        proposal_id: pending.proposal.id,
        payload_hash: pending.proposal.payload_hash,
        approval: null,
        reasons: reasonsOf(pending.reasons),
      },
    );
  }
  return withMeta(
    {
      isError: true,
      content: text([
        `The call to ${toolName} was not run: it needs a human approval first.`,
        `Approval request ${request.id} is pending until ${request.expires_at}.`,
        ...pending.reasons.map((r) => `- ${r.message} (${r.code})`),
        'Once it is approved, call the tool again with exactly the same arguments and it will run once.',
        'Different arguments are a different action and need their own approval.',
      ]),
    },
    {
      status: 'approval_pending',
      proposal_id: pending.proposal.id,
      payload_hash: pending.proposal.payload_hash,
      approval: {
        request_id: request.id,
        status: pending.approval?.status ?? 'pending',
        expires_at: request.expires_at,
      },
      reasons: reasonsOf(pending.reasons),
    },
  );
}

/** The policy denied the call: every reason, and nothing ran. */
export function deniedResult(toolName: string, denied: DeniedResult): CallToolResult {
  return withMeta(
    {
      isError: true,
      content: text([
        `The call to ${toolName} was denied by policy and was not run:`,
        ...denied.reasons.filter((r) => r.effect !== 'note').map((r) => `- ${r.message} (${r.code})`),
      ]),
    },
    { status: 'denied', proposal_id: denied.proposal.id, reasons: reasonsOf(denied.reasons) },
  );
}

/**
 * The upstream now serves another definition of the tool than the one approved in Vouch
 * (description, input schema or annotations changed): nothing was proposed or run.
 */
export function definitionChangedResult(
  toolName: string,
  definition: { sha256: string; pinned: string },
): CallToolResult {
  return withMeta(
    {
      isError: true,
      content: text([
        `The call to ${toolName} was not run: the tool's definition changed since it was approved.`,
        'An operator must approve the new definition in Vouch before it can be called.',
      ]),
    },
    { status: 'definition_changed', definition_sha256: definition.sha256, pinned_sha256: definition.pinned },
  );
}

/** The policy asks for another call first (a dry run, a pinned environment). */
export function repairResult(toolName: string, repair: RepairResult): CallToolResult {
  const suggested = repair.repair;
  return withMeta(
    {
      isError: true,
      content: text([
        `The call to ${toolName} was not run; policy asks for a different action first:`,
        ...repair.reasons.filter((r) => r.effect !== 'note').map((r) => `- ${r.message} (${r.code})`),
        ...(suggested ? [`Suggested: call ${suggested.tool_name} (${suggested.message}).`] : []),
      ]),
    },
    {
      status: 'repair',
      proposal_id: repair.proposal.id,
      reasons: reasonsOf(repair.reasons),
      repair: suggested
        ? ({
            tool_name: suggested.tool_name,
            arguments: suggested.arguments,
            target: { ...suggested.target },
            message: suggested.message,
          } satisfies JsonObject)
        : null,
    },
  );
}

/** An approval exists but does not let this call run (denied, expired, used up, another payload). */
export function notAuthorizedResult(toolName: string, refused: NotAuthorizedResult): CallToolResult {
  const request = refused.approval?.request;
  return withMeta(
    {
      isError: true,
      content: text([
        `The call to ${toolName} was not run: ${describeRefusal(refused.code)}.`,
        'Calling it again with the same arguments opens a new approval request.',
      ]),
    },
    {
      status: 'not_authorized',
      code: refused.code,
      proposal_id: refused.proposal.id,
      approval: request
        ? {
            request_id: request.id,
            status: refused.approval?.status ?? 'unknown',
            expires_at: request.expires_at,
          }
        : null,
      reasons: reasonsOf(refused.reasons),
    },
  );
}

/** A precondition does not hold; the call was not made and its approval, if any, is still unused. */
export function preconditionFailedResult(toolName: string, failed: PreconditionFailedResult): CallToolResult {
  return withMeta(
    {
      isError: true,
      content: text([
        failed.code === 'PRECONDITION_FAILED'
          ? `The call to ${toolName} was not run: a precondition does not hold.`
          : `The call to ${toolName} was not run: no check could prove its preconditions.`,
        'Call it again with the same arguments once the precondition holds.',
      ]),
    },
    {
      status: 'precondition_failed',
      code: failed.code,
      proposal_id: failed.proposal.id,
      preconditions: failed.preconditions,
    },
  );
}

/**
 * Vouch could not be asked, or refused the request, so the call was not made (fail closed).
 * Only a failure to reach Vouch (network, time limit, a 5xx or 429) is worth trying again
 * as it is; the message says what else to do otherwise.
 */
export function unavailableResult(
  toolName: string,
  error: { code: string; status?: number | null },
): CallToolResult {
  const { code } = error;
  const transient =
    code === 'NETWORK_ERROR' ||
    code === 'TIMEOUT' ||
    (typeof error.status === 'number' && (error.status >= 500 || error.status === 429));
  const next =
    code === 'IDEMPOTENCY_CONFLICT'
      ? `Nothing was executed: the idempotency key (_meta["vouch.dev/idempotency_key"]) was used for another call. Send this call with a new key; the same key and arguments again are refused the same way.`
      : transient
        ? 'Nothing was executed; it is safe to call again later.'
        : 'Nothing was executed; calling again the same way will be refused the same way until the cause is fixed.';
  return withMeta(
    {
      isError: true,
      content: text([`The call to ${toolName} was not run: Vouch could not authorize it (${code}).`, next]),
    },
    { status: 'error', code },
  );
}

function describeRefusal(code: NotAuthorizedResult['code']): string {
  switch (code) {
    case 'APPROVAL_DENIED':
      return 'the approver denied it';
    case 'APPROVAL_EXPIRED':
      return 'its approval expired';
    case 'APPROVAL_CONSUMED':
      return 'its single-use approval was already used';
    case 'APPROVAL_PAYLOAD_MISMATCH':
      return 'the approval was given for other arguments';
    case 'APPROVAL_SCOPE_MISMATCH':
      return 'the approval was given to another requester, server or tool';
    case 'IDENTITY_MISMATCH':
      return "the decision authorized another identity than this gateway's key";
    case 'APPROVER_KEY_REVOKED':
      return 'a key of its approver has been revoked since they approved it';
    default:
      return `Vouch refused it (${code})`;
  }
}
