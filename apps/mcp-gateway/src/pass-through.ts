import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  type ClientCapabilities,
  ErrorCode,
  McpError,
  type Notification,
  type Progress,
  type RequestId,
  ResultSchema,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from './logger';

/**
 * What the gateway offers the agent: exactly what the upstream offers (resources, prompts,
 * completions, logging, experimental), and always tools, since the gateway's own
 * `tools/list` answers even an upstream without tools. Tasks are not passed through.
 */
export function agentCapabilitiesOf(upstream: ServerCapabilities | undefined): ServerCapabilities {
  const { tasks: _tasks, tools: _tools, ...rest } = upstream ?? {};
  return { ...rest, tools: { listChanged: true } };
}

/**
 * What the gateway tells the upstream the client can do: exactly what the agent said
 * (sampling, elicitation, roots), so upstream tools that need them stay available, and
 * requests for them are forwarded to the agent. Tasks are not passed through.
 */
export function upstreamCapabilitiesOf(agent: ClientCapabilities | undefined): ClientCapabilities {
  const { tasks: _tasks, ...rest } = agent ?? {};
  return rest;
}

/** What a forwarded request needs from the SDK's handler context. */
export interface ForwardingExtra {
  signal: AbortSignal;
  sendNotification: (notification: never) => Promise<void>;
  /** The agent's HTTP request (Streamable HTTP only): its headers carry a `traceparent`. */
  requestInfo?: { headers: Readonly<Record<string, string | string[] | undefined>> };
  /** Send a request to the agent tied to this one (on Streamable HTTP, on its stream). */
  sendRequest?: (request: never, schema: never, options?: never) => Promise<unknown>;
}

/**
 * Options for forwarding one request: the caller's cancellation aborts it on the other side
 * (the SDK sends `notifications/cancelled`), and progress from the other side reaches the
 * caller under the caller's own progress token.
 */
export function forwardingOptions(
  request: { params?: { _meta?: { progressToken?: RequestId } } },
  extra: ForwardingExtra,
  timeoutMs: number,
): RequestOptions {
  const token = request.params?._meta?.progressToken;
  return {
    signal: extra.signal,
    timeout: timeoutMs,
    resetTimeoutOnProgress: true,
    ...(token === undefined
      ? {}
      : {
          onprogress: (progress: Progress) => {
            void (extra.sendNotification as (n: Notification) => Promise<void>)({
              method: 'notifications/progress',
              params: { ...progress, progressToken: token },
            }).catch(() => {});
          },
        }),
  };
}

// Handled by the SDK on each hop: forwarding them would cancel or report the wrong request.
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'notifications/cancelled',
  'notifications/progress',
  'notifications/initialized',
]);

/**
 * Everything that is not `tools/call` or `tools/list` passes through unchanged, both ways:
 * agent requests (resources, prompts, completion, logging/setLevel, …) go to the upstream;
 * upstream requests (sampling, elicitation, roots/list) go to the agent; notifications
 * (list_changed, resources/updated, log messages, roots/list_changed) follow the same way.
 * `governed` lets the gateway take some agent requests through Vouch instead.
 */
export function passThrough(options: {
  server: Server;
  upstream: Client;
  timeoutMs: number;
  logger: Logger;
  governed?: (
    request: { method: string; params?: Record<string, unknown> },
    extra: ForwardingExtra,
  ) => Promise<unknown> | null;
}): void {
  const { server, upstream, timeoutMs, logger } = options;

  server.fallbackRequestHandler = async (request, extra) => {
    // Tool calls have their own governed handler; never forward one by another road.
    if (request.method === CallToolRequestSchema.shape.method.value) {
      throw new McpError(ErrorCode.InvalidRequest, 'tool calls go through Vouch only');
    }
    const governed = options.governed?.(request, extra);
    if (governed) return (await governed) as never;
    return upstream.request(request, ResultSchema, forwardingOptions(request, extra, timeoutMs));
  };
  upstream.fallbackRequestHandler = async (request, extra) =>
    server.request(request, ResultSchema, forwardingOptions(request, extra, timeoutMs));

  const forward = (to: Client | Server, direction: string) => async (notification: Notification) => {
    if (HOP_BY_HOP.has(notification.method)) return;
    await to.notification(notification as never).catch((error: unknown) => {
      logger.warn('could not forward a notification', {
        direction,
        method: notification.method,
        error: String(error),
      });
    });
  };
  server.fallbackNotificationHandler = forward(upstream, 'agent->upstream');
  upstream.fallbackNotificationHandler = forward(server, 'upstream->agent');
}
