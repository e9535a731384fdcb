import {
  type CallToolResult,
  type Client,
  ProtocolError,
  type RequestOptions,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
} from '@modelcontextprotocol/client';
import type { InvokeContext, JsonValue } from '@vouch/client';
import { z } from 'zod';
import type { UpstreamOutcome, UpstreamTransportKind } from './upstream-outcome';

/** The connected upstream MCP server. */
export interface Upstream {
  client: Client;
  transport: UpstreamTransportKind;
  /**
   * Deliver the requests and notifications the upstream sent while the gateway started
   * (`connectUpstream` holds them); the gateway calls it once the agent has initialized.
   */
  releaseHeld?: () => void;
}

/**
 * The JSON-RPC codes SDK 1.x gave its local failures; records keep them, so the ledger reads
 * the same whichever SDK the gateway runs on.
 */
const LEGACY_CODES: Partial<Record<string, number>> = {
  [SdkErrorCode.ConnectionClosed]: -32_000,
  [SdkErrorCode.RequestTimeout]: -32_001,
};

/** Any result, passed on as it came: the agent's own client validates it. */
const ANY_RESULT = z.looseObject({});

/**
 * THE ONE PLACE THAT CALLS AN UPSTREAM TOOL. Trust boundary: everything else in the gateway
 * reaches a tool only by handing this function to `execute` as its `invoke`, so the call
 * happens after Vouch authorized it and before its observation is recorded.
 * `vouch check-execute-path` (run by `npm test`, allow-list in `.vouch-execute-path.json`)
 * fails the build if `tools/call` or `callTool` appears anywhere else in the gateway, or if
 * this function is used outside the `invoke` argument of an `execute` call.
 *
 * It runs what the proposal holds (tool name and arguments from the authorized record),
 * not what the agent sent, so an approval covers exactly the call that is made. It never
 * throws for an upstream failure: it reports which layer failed.
 */
export async function callUpstreamTool(
  upstream: Upstream,
  context: InvokeContext,
  /** Progress forwarding to the agent (its `onprogress`); signal and timeout are the gateway's. */
  forwarding: Pick<RequestOptions, 'onprogress'> = {},
): Promise<UpstreamOutcome> {
  const { proposal, signal } = context;
  const answered = upstream.transport === 'http' ? 200 : null;
  try {
    // `request` rather than `callTool`: the SDK's `callTool` validates structured output
    // locally and throws a JSON-RPC-shaped error after the tool already ran, which would
    // blur the tool's answer into the protocol layer. The agent's own client validates it.
    const result = await upstream.client.request(
      { method: 'tools/call', params: { name: proposal.tool_name, arguments: proposal.arguments } },
      // The gateway's invoke timeout governs (it aborts `signal`); the SDK's must not fire first.
      { onprogress: forwarding.onprogress, signal, timeout: 2_147_483_647 },
    );
    return { layer: 'tool_result', transportStatus: answered, result: result as CallToolResult };
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return failedOutcome(error, answered);
  }
}

/**
 * The upstream call of a governed method other than `tools/call` (`resources/read`,
 * `prompts/get`, …): like {@link callUpstreamTool}, used only as the `invoke` of
 * `vouch.execute`, and it sends what the proposal holds: the method is its `tool_name`, the
 * params its `arguments`. The answer is kept in the `tool_result` layer (it has no `isError`,
 * so `tool_error` is false).
 */
export async function callUpstreamRequest(
  upstream: Upstream,
  context: InvokeContext,
  forwarding: Pick<RequestOptions, 'onprogress'> = {},
): Promise<UpstreamOutcome> {
  const { proposal, signal } = context;
  const answered = upstream.transport === 'http' ? 200 : null;
  try {
    const result = await upstream.client.request(
      { method: proposal.tool_name, params: proposal.arguments },
      ANY_RESULT,
      { onprogress: forwarding.onprogress, signal, timeout: 2_147_483_647 },
    );
    return { layer: 'tool_result', transportStatus: answered, result: result as CallToolResult };
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    return failedOutcome(error, answered);
  }
}

/** Which layer failed when the upstream call threw: the protocol, or the transport. */
function failedOutcome(error: unknown, answered: number | null): UpstreamOutcome {
  if (error instanceof SdkHttpError) {
    return {
      layer: 'transport',
      transportStatus: error.status,
      error: { name: error.name, message: error.message, code: error.status },
    };
  }
  // Local failures of the SDK (timeout, connection closed, …) are SdkErrors: no answer
  // arrived, so the tool may or may not have run. A ProtocolError is the server's answer.
  if (error instanceof ProtocolError) {
    return {
      layer: 'jsonrpc_error',
      transportStatus: answered,
      error: {
        code: error.code,
        // The SDK prefixes "MCP error <code>: "; keep the upstream's own words.
        message: error.message.replace(/^(MCP error -?\d+: )+/, ''),
        ...(error.data === undefined ? {} : { data: JSON.parse(JSON.stringify(error.data)) as JsonValue }),
      },
    };
  }
  const described = error instanceof Error ? error : new Error(String(error));
  return {
    layer: 'transport',
    transportStatus: null,
    error: {
      name: described.name,
      message: described.message,
      ...(error instanceof SdkError && LEGACY_CODES[error.code] !== undefined
        ? { code: LEGACY_CODES[error.code] }
        : {}),
    },
  };
}
