import type { Client, RequestOptions } from '@modelcontextprotocol/client';
import {
  type BaseContext,
  type ClientCapabilities,
  type Notification,
  type Progress,
  ProtocolError,
  ProtocolErrorCode,
  type RequestId,
  type Server,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Logger } from './logger';
import { TOOLS_CALL } from './methods';

/** Any result, passed on as it came: the far side's own client validates it. */
export const ANY_RESULT = z.looseObject({});

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

/**
 * The SDK's handler context as the gateway uses it (the v2 SDK nests it under `mcpReq` and
 * `http`): the call's signal, notifications and requests tied to it, and the agent's headers.
 */
export function forwardingExtraOf(ctx: BaseContext | ServerContext): ForwardingExtra {
  const req = (ctx as ServerContext).http?.req;
  return {
    signal: ctx.mcpReq.signal,
    sendNotification: ctx.mcpReq.notify as ForwardingExtra['sendNotification'],
    sendRequest: ((request: never, options?: never) =>
      ctx.mcpReq.send(request, options)) as ForwardingExtra['sendRequest'],
    ...(req ? { requestInfo: { headers: Object.fromEntries(req.headers.entries()) } } : {}),
  };
}

/** What a forwarded request needs from the SDK's handler context. */
export interface ForwardingExtra {
  signal: AbortSignal;
  sendNotification: (notification: never) => Promise<void>;
  /** The agent's HTTP request (Streamable HTTP only): its headers carry a `traceparent`. */
  requestInfo?: { headers: Readonly<Record<string, string | string[] | undefined>> };
  /** Send a request to the agent tied to this one (on Streamable HTTP, on its stream). */
  sendRequest?: (request: never, options?: never) => Promise<unknown>;
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
  /**
   * Also forward what the upstream sends towards the agent (default true). Off for a server
   * that answers one stateless exchange: the upstream's session belongs to no agent session.
   */
  towardsAgent?: boolean;
}): void {
  const { server, upstream, timeoutMs, logger } = options;
  const towardsAgent = options.towardsAgent !== false;

  server.fallbackRequestHandler = async (request, ctx) => {
    // Tool calls have their own governed handler; never forward one by another road.
    if (request.method === TOOLS_CALL) {
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'tool calls go through Vouch only');
    }
    const extra = forwardingExtraOf(ctx);
    const governed = options.governed?.(request, extra);
    if (governed) return (await governed) as never;
    return upstream.request(request, ANY_RESULT, forwardingOptions(request, extra, timeoutMs));
  };
  if (towardsAgent) {
    upstream.fallbackRequestHandler = async (request, ctx) =>
      server.request(request, ANY_RESULT, forwardingOptions(request, forwardingExtraOf(ctx), timeoutMs));
  }

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
  if (towardsAgent) upstream.fallbackNotificationHandler = forward(server, 'upstream->agent');
}
