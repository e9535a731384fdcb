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
import type { CallJournal, JournalClaim } from './call-journal';
import { agentKeyOf, type CallEnd, type CallKeys } from './call-keys';
import { inCallSpan, inUpstreamSpan } from './call-span';
import type { Logger } from './logger';
import { type ForwardingExtra, forwardingOptions } from './pass-through';
import { applyResultObligations, type ResultObligations } from './result-obligations';
import type { ToolRegistry } from './tool-registry';
import {
  definitionChangedResult,
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
  /** What the gateway claimed and has not seen recorded, and the calls an identical call goes on with. */
  journal: CallJournal;
  serverId: string;
  environment: string;
  tools: Readonly<Record<string, ToolSettings>>;
  /** How long a call waits for an approval before answering "pending" (default 0: answer at once). */
  approvalWait: WaitOptions;
  invokeTimeoutMs: number;
  /** A tool whose served definition differs from the pinned one: `refuse` its calls, or `warn` and go on. */
  definitionChanges: 'refuse' | 'warn';
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
  const agentKey = agentKeyFromRequest(params);
  let definition = deps.registry.definitionOf(toolName);
  if (definition.status === 'changed') {
    // The change may have been approved since the last discovery.
    await deps.registry.refresh();
    definition = deps.registry.definitionOf(toolName);
  }
  if (definition.status === 'changed') {
    trace.getActiveSpan()?.setAttribute('vouch.definition_changed', true);
    deps.logger.warn('the upstream serves a changed definition of this tool', {
      server_id: deps.serverId,
      tool_name: toolName,
      definition_sha256: definition.sha256,
      pinned_sha256: definition.pinned,
      refused: deps.definitionChanges === 'refuse',
    });
    if (deps.definitionChanges === 'refuse') return definitionChangedResult(toolName, definition);
  }
  const action = actionOfCall({
    serverId: deps.serverId,
    environment: deps.environment,
    toolName,
    args: (params.arguments ?? {}) as JsonObject,
    registered: deps.registry.sideEffectOf(toolName),
    settings: deps.tools[toolName],
  });
  const answer = await answerAskingTheUser(deps, { label: toolName, action, agentKey }, extra, (options) =>
    deps.vouch.execute(
      action,
      (context) => {
        deps.journal.claimed(claimOf(context));
        return inUpstreamSpan(toolName, () =>
          callUpstreamTool(deps.upstream, context, forwardingOptions(request, extra, deps.invokeTimeoutMs)),
        );
      },
      options,
    ),
  );
  return withResultObligations(answer, deps.tools[toolName]?.result);
}

/** An executed call's result as the agent may see it: masked and capped, noted in `_meta`. */
function withResultObligations(answer: CallToolResult, obligations: ResultObligations | undefined) {
  const meta = answer._meta?.[META_KEY] as ExecutionMeta | undefined;
  if (meta?.status !== 'executed') return answer;
  const { result, applied } = applyResultObligations(answer, obligations);
  if (!applied) return answer;
  return { ...result, _meta: { ...result._meta, [META_KEY]: { ...meta, result_obligations: applied } } };
}

/** The agent's own idempotency key for this call, if it sent one; a malformed one is refused. */
export function agentKeyFromRequest(
  params: { _meta?: Record<string, unknown> } | undefined,
): string | undefined {
  const agentKey = agentKeyOf(params);
  if (agentKey instanceof Error) {
    throw new McpError(ErrorCode.InvalidParams, agentKey.message, { code: 'IDEMPOTENCY_KEY_INVALID' });
  }
  return agentKey;
}

/** What the journal keeps of a claimed execution: ids and hashes, no arguments. */
export function claimOf(context: {
  idempotencyKey: string;
  proposal: { id: string; payload_hash: string };
  decision: { approval_request_id: string | null };
}): JournalClaim {
  return {
    key: context.idempotencyKey,
    proposal_id: context.proposal.id,
    payload_hash: context.proposal.payload_hash,
    approval_request_id: context.decision.approval_request_id,
  };
}

/** One governed call as the gateway proposes it: its label in messages, the action, the agent's key. */
export interface GovernedCall {
  label: string;
  action: ExecuteAction;
  agentKey: string | undefined;
}

/**
 * {@link answerThroughVouch}, and when the call waits for a human approval and the agent's
 * client supports elicitation: show the user the pending call, and after an "accept" look in
 * Vouch again (waiting up to `recheckWaitMs`). Only an approval recorded in Vouch, by someone
 * other than the requester, lets the call run; the answer itself approves nothing.
 */
export async function answerAskingTheUser(
  deps: Pick<
    CallToolDeps,
    'keys' | 'journal' | 'approvalWait' | 'invokeTimeoutMs' | 'logger' | 'approvalPrompt'
  >,
  call: GovernedCall,
  extra: ForwardingExtra,
  run: (options: ExecuteOptionsOf) => Promise<ExecuteResult<UpstreamOutcome>>,
): Promise<CallToolResult> {
  const { label, action } = call;
  const first = await answerThroughVouch(deps, call, extra.signal, run);
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
    call,
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
  deps: Pick<CallToolDeps, 'keys' | 'journal' | 'approvalWait' | 'invokeTimeoutMs' | 'logger'>,
  call: GovernedCall,
  signal: AbortSignal,
  run: (options: ExecuteOptionsOf) => Promise<ExecuteResult<UpstreamOutcome>>,
): Promise<CallToolResult> {
  const { label, action } = call;
  const { key, settle } = deps.keys.keyFor(action, call.agentKey);

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
    const end = endOfFailure(error, signal);
    settle(end);
    // Recorded before `execute` threw: an interrupted call's `unknown` is in Vouch.
    if (isVouchClientError(error) && error.code === 'ABORTED') deps.journal.settled(key);
    if (!isVouchClientError(error)) throw error;
    trace.getActiveSpan()?.setAttribute('vouch.error_code', error.code);
    deps.logger.error('vouch execute failed', {
      // The tool or method, never the label: a resource URI can carry whatever the agent put in it.
      tool_name: action.tool_name,
      code: error.code,
      request_id: error.requestId,
    });
    if (error.code === 'ABORTED') {
      throw new McpError(
        ErrorCode.InvalidRequest,
        end === 'cancelled'
          ? 'the call was cancelled'
          : `the gateway stopped during the call to ${label}; its outcome is recorded as unknown`,
      );
    }
    if (error.code === 'OBSERVATION_NOT_RECORDED') {
      // The tool ran but the ledger does not know it: say so, and keep the key so a retry
      // replays rather than running the tool again.
      throw new McpError(
        ErrorCode.InternalError,
        `${label} was called but Vouch did not record its result; do not repeat it blindly`,
      );
    }
    return unavailableResult(label, error);
  }
  deps.journal.settled(key);

  trace.getActiveSpan()?.setAttribute('vouch.status', result.status);
  settle(endOf(result));
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

/**
 * The reason the gateway aborts its running calls with when it stops: unlike an agent's
 * cancel, the call is in doubt and an identical call after a restart must not run it again.
 */
export class GatewayStopping extends Error {
  override readonly name = 'GatewayStopping';
}

/** How a call that `execute` answered ended. */
function endOf(result: ExecuteResult<UpstreamOutcome>): CallEnd {
  // Pending and a failed precondition go on (a retry continues the same proposal, with its
  // approval unused); `unknown` is in doubt: the tool may have acted.
  if (result.status === 'pending' || result.status === 'precondition_failed') return 'open';
  if (result.status === 'executed' && result.observation.outcome === 'unknown') return 'in_doubt';
  return 'finished';
}

/** How a call whose `execute` threw ended. */
function endOfFailure(error: unknown, signal: AbortSignal): CallEnd {
  if (!isVouchClientError(error)) return 'open';
  if (error.code === 'ABORTED') return signal.reason instanceof GatewayStopping ? 'in_doubt' : 'cancelled';
  if (error.code === 'OBSERVATION_NOT_RECORDED') return 'in_doubt';
  // Vouch could not be asked, or refused the request: nothing ran, and the proposal (if the
  // server recorded one) is continued by an identical call.
  return 'open';
}
