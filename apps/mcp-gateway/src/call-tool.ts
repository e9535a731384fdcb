import {
  type CallToolRequest,
  type CallToolResult,
  ProtocolErrorCode as ErrorCode,
  ProtocolError as McpError,
} from '@modelcontextprotocol/server';
import { trace } from '@opentelemetry/api';
import {
  type ExecuteAction,
  type ExecuteOptions,
  type ExecuteResult,
  isVouchClientError,
  type JsonObject,
  type VouchClient,
  type WaitOptions,
} from '@vouch/client';
import { actionOfCall, type ToolSettings } from './action-of-call';
import { type ApprovalPrompt, askAboutApproval, type SendToAgent } from './approval-prompt';
import type { CallKeys } from './call-keys';
import { inCallSpan, inUpstreamSpan } from './call-span';
import type { Logger } from './logger';
import { type ForwardingExtra, forwardingOptions } from './pass-through';
import type { ToolRegistry } from './tool-registry';
import {
  deniedResult,
  type ExecutionMeta,
  executedResult,
  META_KEY,
  notAuthorizedResult,
  pendingResult,
  preconditionFailedResult,
  repairResult,
  unavailableResult,
} from './tool-results';
import { callUpstreamTool, type Upstream } from './upstream-call';
import { observedOf, outcomeOfRecorded, type UpstreamOutcome } from './upstream-outcome';

/** What the `tools/call` handler needs. */
export interface CallToolDeps {
  upstream: Upstream;
  vouch: VouchClient;
  registry: ToolRegistry;
  keys: CallKeys;
  serverId: string;
  environment: string;
  tools: Readonly<Record<string, ToolSettings>>;
  /** How long a call waits for an approval before answering "pending" (default 0: answer at once). */
  approvalWait: WaitOptions;
  invokeTimeoutMs: number;
  logger: Logger;
  /** Ask the user through MCP elicitation about a call waiting for approval (when the client can). */
  approvalPrompt?: ApprovalPrompt;
}

/**
 * Handle one `tools/call` from the agent. THE EXECUTE PATH: the upstream is called only as the
 * `invoke` of `vouch.execute`, so only after Vouch allowed it, or after an approval of
 * exactly these arguments, and the observation is recorded before the agent sees the result.
 */
export function handleToolCall(
  deps: CallToolDeps,
  request: CallToolRequest,
  extra: ForwardingExtra,
): Promise<CallToolResult> {
  return inCallSpan(request.params.name, () => governCall(deps, request, extra), extra.requestInfo?.headers);
}

async function governCall(
  deps: CallToolDeps,
  request: CallToolRequest,
  extra: ForwardingExtra,
): Promise<CallToolResult> {
  const { params } = request;
  const toolName = params.name;
  const action = actionOfCall({
    serverId: deps.serverId,
    environment: deps.environment,
    toolName,
    args: (params.arguments ?? {}) as JsonObject,
    registered: deps.registry.sideEffectOf(toolName),
    settings: deps.tools[toolName],
  });
  return answerAskingTheUser(deps, toolName, action, extra, (options) =>
    deps.vouch.execute(
      action,
      (context) =>
        inUpstreamSpan(toolName, () =>
          callUpstreamTool(deps.upstream, context, forwardingOptions(request, extra, deps.invokeTimeoutMs)),
        ),
      options,
    ),
  );
}

/**
 * {@link answerThroughVouch}, and when the call waits for a human approval and the agent's
 * client supports elicitation: show the user the pending call, and after an "accept" look in
 * Vouch again (waiting up to `recheckWaitMs`). Only an approval recorded in Vouch, by someone
 * other than the requester, lets the call run; the answer itself approves nothing.
 */
export async function answerAskingTheUser(
  deps: Pick<CallToolDeps, 'keys' | 'approvalWait' | 'invokeTimeoutMs' | 'logger' | 'approvalPrompt'>,
  label: string,
  action: ExecuteAction,
  extra: ForwardingExtra,
  run: (options: ExecuteOptionsOf) => Promise<ExecuteResult<UpstreamOutcome>>,
): Promise<CallToolResult> {
  const first = await answerThroughVouch(deps, label, action, extra.signal, run);
  const meta = first._meta?.[META_KEY] as ExecutionMeta | undefined;
  const prompt = deps.approvalPrompt;
  if (meta?.status !== 'approval_pending' || !prompt?.supported() || !extra.sendRequest) return first;
  const answer = await askAboutApproval(
    extra.sendRequest as unknown as SendToAgent,
    prompt,
    { label, action, meta },
    extra.signal,
    deps.logger,
  );
  trace.getActiveSpan()?.setAttribute('vouch.approval_prompt', answer);
  if (answer !== 'accept') return first;
  return answerThroughVouch(
    { ...deps, approvalWait: { ...deps.approvalWait, timeoutMs: prompt.recheckWaitMs } },
    label,
    action,
    extra.signal,
    run,
  );
}

/** The options of one `execute`: the call's key, signal, approval wait, time limit and observation. */
export type ExecuteOptionsOf = ExecuteOptions<UpstreamOutcome>;

/**
 * Run one action through `execute` (the caller writes the `execute` call, with its upstream
 * call inline as the invoke, so the execute-path guard sees it) and answer the agent: the
 * upstream's own result with `_meta` on success, an explanation with `_meta` when nothing
 * ran, an MCP error when the outcome is a protocol error or unknown. `label` names the call
 * in messages (a tool name, or a method and its target).
 */
export async function answerThroughVouch(
  deps: Pick<CallToolDeps, 'keys' | 'approvalWait' | 'invokeTimeoutMs' | 'logger'>,
  label: string,
  action: ExecuteAction,
  signal: AbortSignal,
  run: (options: ExecuteOptionsOf) => Promise<ExecuteResult<UpstreamOutcome>>,
): Promise<CallToolResult> {
  const { key, settle } = deps.keys.keyFor(action);

  let result: ExecuteResult<UpstreamOutcome>;
  try {
    result = await run({
      idempotencyKey: key,
      signal,
      wait: deps.approvalWait,
      invokeTimeoutMs: deps.invokeTimeoutMs,
      observe: observedOf,
    });
  } catch (error) {
    settle(false);
    if (!isVouchClientError(error)) throw error;
    trace.getActiveSpan()?.setAttribute('vouch.error_code', error.code);
    deps.logger.error('vouch execute failed', {
      // The tool or method, never the label: a resource URI can carry whatever the agent put in it.
      tool_name: action.tool_name,
      code: error.code,
      request_id: error.requestId,
    });
    if (error.code === 'ABORTED') throw new McpError(ErrorCode.InvalidRequest, 'the call was cancelled');
    if (error.code === 'OBSERVATION_NOT_RECORDED') {
      // The tool ran but the ledger does not know it: say so, and keep the key so a retry
      // replays rather than running the tool again.
      throw new McpError(
        ErrorCode.InternalError,
        `${label} was called but Vouch did not record its result; do not repeat it blindly`,
      );
    }
    return unavailableResult(label, error.code);
  }

  // Pending and a failed precondition keep their key (a retry continues the same proposal,
  // with its approval unused); so does `unknown`: the tool may have acted, and an identical
  // call must replay that answer, never run the tool again.
  trace.getActiveSpan()?.setAttribute('vouch.status', result.status);
  const unknownOutcome = result.status === 'executed' && result.observation.outcome === 'unknown';
  settle(result.status !== 'pending' && result.status !== 'precondition_failed' && !unknownOutcome);
  switch (result.status) {
    case 'pending':
      return pendingResult(label, result);
    case 'denied':
      return deniedResult(label, result);
    case 'repair':
      return repairResult(label, result);
    case 'not_authorized':
      return notAuthorizedResult(label, result);
    case 'precondition_failed':
      return preconditionFailedResult(label, result);
    case 'executed':
      break;
  }

  const outcome: UpstreamOutcome | null = result.invoked
    ? (result.value ?? null)
    : outcomeOfRecorded(result.observation.result, result.observation.transport_status);
  if (!outcome) {
    // `invoke` did not return (timeout) or the record is not one this gateway wrote.
    throw new McpError(
      ErrorCode.InternalError,
      `${label}: outcome ${result.observation.outcome}; it is recorded as such and will not be retried automatically`,
    );
  }
  switch (outcome.layer) {
    case 'tool_result':
      return executedResult(outcome.result, result);
    case 'jsonrpc_error':
      // A proxy answers an upstream JSON-RPC error with the same error, not a tool result.
      throw new McpError(outcome.error.code, outcome.error.message, outcome.error.data);
    case 'transport':
      throw new McpError(
        ErrorCode.InternalError,
        `${label}: the upstream did not answer (${outcome.error.message}); the outcome is unknown and will not be retried automatically`,
      );
  }
}
