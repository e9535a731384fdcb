import type { ClientCapabilities, ElicitRequest, ElicitResult } from '@modelcontextprotocol/server';
import type { ExecuteAction } from '@vouch/client';
import type { Logger } from './logger';
import { type ExecutionMeta, META_KEY } from './tool-results';

/** How a gateway asks the user about a call waiting for an approval (MCP elicitation). */
export interface ApprovalPrompt {
  /** Whether the agent's client declared form elicitation. */
  supported: () => boolean;
  /** The Vouch console (e.g. `https://vouch.example/ui/`), to link the proposal. */
  consoleUrl?: string;
  /** After the user answers "accept": how long to wait for the approval in Vouch. */
  recheckWaitMs: number;
  /** How long the user has to answer. */
  timeoutMs: number;
}

/** What the SDK's handler context offers to send a request to the agent, tied to the call. */
export type SendToAgent = (
  request: ElicitRequest,
  options: { signal: AbortSignal; timeout: number },
) => Promise<ElicitResult>;

/** Form elicitation is declared as `elicitation: {}` (the default mode) or with `form`. */
export function supportsFormElicitation(capabilities: ClientCapabilities | undefined): boolean {
  const elicitation = capabilities?.elicitation as Record<string, unknown> | undefined;
  if (elicitation === undefined) return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

/** Where the proposal (and its approval) is shown in the console, when the console is configured. */
export function consoleLinkOf(consoleUrl: string | undefined, proposalId: string | undefined): string | null {
  if (!consoleUrl || !proposalId) return null;
  const base = consoleUrl.replace(/#.*$/, '');
  return `${base}#/proposal/${encodeURIComponent(proposalId)}`;
}

/**
 * Ask the user, through the agent's client, about a call that waits for an approval: what
 * exactly would run (tool, arguments, payload hash), which approval request holds it, and
 * where to approve it. The answer only tells the gateway when to look again: it is never an
 * approval (the requester cannot approve its own request in Vouch). Resolves to the user's
 * action, or `unanswered` when the client failed or took too long.
 */
export async function askAboutApproval(
  send: SendToAgent,
  prompt: ApprovalPrompt,
  call: { label: string; action: ExecuteAction; meta: ExecutionMeta },
  signal: AbortSignal,
  logger: Logger,
): Promise<ElicitResult['action'] | 'unanswered'> {
  const { meta, action } = call;
  try {
    const answer = await send(
      {
        method: 'elicitation/create',
        params: {
          message: approvalMessageOf(prompt, call),
          requestedSchema: { type: 'object', properties: {} },
          _meta: { [META_KEY]: meta },
        },
      },
      { signal, timeout: prompt.timeoutMs },
    );
    return answer.action;
  } catch (error) {
    logger.warn('the approval prompt was not answered', {
      tool_name: action.tool_name,
      error: String(error),
    });
    return 'unanswered';
  }
}

/**
 * What the user is shown about a call waiting for an approval, in an elicitation pushed to a
 * 2025-era client or in an `input_required` round of a 2026-07-28 one.
 */
export function approvalMessageOf(
  prompt: Pick<ApprovalPrompt, 'consoleUrl'>,
  call: {
    label: string;
    action: Pick<ExecuteAction, 'tool_name' | 'server_id' | 'arguments'> & {
      target: Pick<ExecuteAction['target'], 'env'>;
    };
    meta: ExecutionMeta;
  },
): string {
  const { meta, action } = call;
  const link = consoleLinkOf(prompt.consoleUrl, meta.proposal_id);
  const lines = [
    `${call.label} needs a human approval in Vouch before it runs.`,
    `Tool: ${action.tool_name} on ${action.server_id} (${action.target.env})`,
    `Arguments: ${JSON.stringify(action.arguments, null, 2)}`,
    `Payload hash: ${meta.payload_hash ?? 'unknown'}`,
    `Approval request: ${meta.approval?.request_id ?? 'unknown'}${meta.approval?.expires_at ? ` (expires ${meta.approval.expires_at})` : ''}`,
    link
      ? `Approve it at: ${link}`
      : `Approve it in the Vouch console (/ui/) or with POST /v1/approvals/${meta.approval?.request_id ?? '<id>'}/approve.`,
    'It must be approved by someone other than the one asking; answering here does not approve it.',
    'Accept once it is approved, and the gateway checks Vouch and runs the call; decline to leave it pending.',
  ];
  return lines.join('\n');
}
