import type { CallToolResult } from '@modelcontextprotocol/client';
import type { JsonObject, JsonValue, Observed } from '@vouch/client';

/** How the gateway reaches its upstream: decides what "transport status" can mean. */
export type UpstreamTransportKind = 'stdio' | 'http' | 'memory';

/**
 * What one upstream `tools/call` produced, in exactly one of three layers that must not be
 * mixed up (an HTTP 200 can carry a JSON-RPC error, and a JSON-RPC success can carry a tool
 * result that says the tool failed):
 *
 * - `transport`: no JSON-RPC answer arrived (connection lost, local timeout, unreadable
 *   answer). The request may have reached the tool, so the outcome is `unknown`.
 * - `jsonrpc_error`: the upstream answered with a JSON-RPC error (unknown tool, bad params,
 *   internal error): `failed`, and no tool result exists.
 * - `tool_result`: the upstream answered with a `CallToolResult`; its `isError` is the tool's
 *   own verdict on itself (`failed` when true), kept as `tool_error`.
 */
export type UpstreamOutcome =
  | { layer: 'tool_result'; transportStatus: number | null; result: CallToolResult }
  | {
      layer: 'jsonrpc_error';
      transportStatus: number | null;
      error: { code: number; message: string; data?: JsonValue };
    }
  | {
      layer: 'transport';
      transportStatus: number | null;
      error: { name: string; message: string; code?: number };
    };

/**
 * The observation for an upstream outcome. `result` keeps the layer and its content, so the
 * record alone tells a refused call from a failed tool from a lost connection, and a replay
 * can give the agent the same answer it got the first time.
 */
export function observedOf(outcome: UpstreamOutcome): Observed {
  switch (outcome.layer) {
    case 'tool_result':
      return {
        outcome: outcome.result.isError === true ? 'failed' : 'succeeded',
        transport_status: outcome.transportStatus,
        tool_error: outcome.result.isError === true,
        result: { layer: 'tool_result', tool_result: toJson(outcome.result) },
      };
    case 'jsonrpc_error':
      return {
        outcome: 'failed',
        transport_status: outcome.transportStatus,
        tool_error: null,
        result: { layer: 'jsonrpc_error', jsonrpc_error: toJson(outcome.error) },
      };
    case 'transport':
      return {
        outcome: 'unknown',
        transport_status: outcome.transportStatus,
        tool_error: null,
        result: { layer: 'transport', transport_error: toJson(outcome.error) },
      };
  }
}

/** Read back what {@link observedOf} stored, for replaying a recorded call to the agent. */
export function outcomeOfRecorded(result: JsonValue, transportStatus: number | null): UpstreamOutcome | null {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return null;
  const record = result as JsonObject;
  if (record.layer === 'tool_result' && isObject(record.tool_result)) {
    return { layer: 'tool_result', transportStatus, result: record.tool_result as unknown as CallToolResult };
  }
  if (record.layer === 'jsonrpc_error' && isObject(record.jsonrpc_error)) {
    const error = record.jsonrpc_error as { code?: unknown; message?: unknown; data?: JsonValue };
    return {
      layer: 'jsonrpc_error',
      transportStatus,
      error: {
        code: typeof error.code === 'number' ? error.code : -32603,
        message: typeof error.message === 'string' ? error.message : 'upstream error',
        ...(error.data === undefined ? {} : { data: error.data }),
      },
    };
  }
  if (record.layer === 'transport' && isObject(record.transport_error)) {
    const error = record.transport_error as { name?: unknown; message?: unknown };
    return {
      layer: 'transport',
      transportStatus,
      error: {
        name: typeof error.name === 'string' ? error.name : 'Error',
        message: typeof error.message === 'string' ? error.message : 'transport failure',
      },
    };
  }
  return null;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toJson(value: unknown): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}
