import { ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { VouchClient, WaitOptions } from '@vouch/client';
import type { ToolSettings } from './action-of-call';
import { supportsFormElicitation } from './approval-prompt';
import { answerInRounds, approvalRoundsOf } from './approval-rounds';
import { type CallJournal, createMemoryJournal } from './call-journal';
import { type CallKeys, createCallKeys } from './call-keys';
import { GatewayStopping, handleToolCall } from './call-tool';
import { type GovernedMethod, governedMatch, handleGovernedRequest } from './governed-request';
import { allPages } from './list-pages';
import { type Logger, silentLogger } from './logger';
import { TOOLS_CALL } from './methods';
import { namespaced } from './namespace';
import { agentCapabilitiesOf, type ForwardingExtra, forwardingExtraOf, passThrough } from './pass-through';
import { createToolRegistry } from './tool-registry';
import type { Upstream } from './upstream-call';
import { type Route, routeOfName, routeThrough, unionOfCapabilities } from './upstream-router';

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The connected upstream MCP server (stdio, HTTP or in-memory); or `upstreams`. */
  upstream?: Upstream;
  /**
   * Several upstreams, each under its name: their tools and prompts are shown to the agent
   * as `<name>__<tool>`, each has its own `serverId`, `tools` and `governed`.
   */
  upstreams?: readonly NamedUpstream[];
  /** A client whose key holds the `gateway` role; the identity Vouch authorizes is the key's. */
  vouch: VouchClient;
  /** How Vouch names the single `upstream` (`server_id` of its tools). */
  serverId?: string;
  /** The environment every call acts in; the agent cannot choose it. */
  environment: string;
  /** How calls to particular tools are described to Vouch. */
  tools?: Record<string, ToolSettings>;
  /**
   * Requests besides `tools/call` that go through Vouch like a tool call (`resources/read`
   * of matching URIs, `prompts/get` of matching prompts); the first matching entry applies.
   * Everything else passes through ungoverned.
   */
  governed?: readonly GovernedMethod[];
  /** How long a call waits for an approval before answering "pending" (default: answer at once). */
  approvalWait?: WaitOptions;
  /**
   * A tool whose definition (name, description, input schema, annotations) differs from the
   * one pinned in Vouch: `refuse` (default) leaves it out of `tools/list` and refuses its calls
   * until an operator approves the new definition; `warn` logs and serves it.
   */
  toolDefinitionChanges?: 'refuse' | 'warn';
  /** Time limit of one upstream call (default 60 000 ms); past it the outcome is `unknown`. */
  invokeTimeoutMs?: number;
  /**
   * The agent's calls: their idempotency keys and the journal of what the gateway claimed
   * (default: keys for one agent, `stdio`, over a journal in memory). Shared by every
   * session of one agent, so an approval waited on in one goes on in the next.
   */
  calls?: { keys: CallKeys; journal: CallJournal };
  /** Time limit of a passed-through request (resources, prompts, sampling, …; default 60 000 ms). */
  requestTimeoutMs?: number;
  /**
   * When a call waits for an approval and the agent's client supports elicitation, show the
   * user the call and where to approve it, and after "accept" look again in Vouch for up to
   * `recheckWaitMs` (default 30 000). `false`: never ask (the agent gets "pending" as without
   * elicitation). The answer itself never approves anything.
   */
  approvalPrompt?: { consoleUrl?: string; recheckWaitMs?: number; timeoutMs?: number } | false;
  /**
   * The HMAC key (at least 32 bytes) of the `requestState` of `input_required` rounds
   * (MCP 2026-07-28). Default: random per gateway, so a retry must reach the same process;
   * give every instance behind a load balancer the same key.
   */
  requestStateKey?: Uint8Array | string;
  /**
   * Which tools the agent sees and may call, by the name it sees them under (default: all).
   * A hidden tool is left out of `tools/list`, and a call to it is refused before Vouch or the
   * upstream hears of it.
   */
  visibleTools?: (name: string) => boolean;
  /** Shown to the agent's client as the server name (default `vouch-mcp-gateway`). */
  name?: string;
  version?: string;
  logger?: Logger;
}

/** One of several upstreams of a gateway. */
export interface NamedUpstream {
  /** Its namespace: letters, digits and `-` (no `_`, see `NAMESPACE_SEPARATOR`). */
  name: string;
  upstream: Upstream;
  /** How Vouch names it (default: its name). */
  serverId?: string;
  tools?: Record<string, ToolSettings>;
  governed?: readonly GovernedMethod[];
}

/** A running gateway: connect `server` to the agent's transport. */
export interface Gateway {
  /** The MCP server the agent talks to. */
  server: Server;
  /**
   * A new agent-facing server for one MCP 2026-07-28 exchange (stateless HTTP), over the same
   * upstreams, calls in flight and idempotency keys as `server`. A pending approval is answered
   * as an `input_required` round; the upstreams' requests towards the agent are not forwarded.
   */
  serverForRequest(): Server;
  /**
   * Deliver what the upstreams sent while the gateway started (their `roots/list`, a
   * `list_changed`, …). Done when the agent's `notifications/initialized` arrives; a transport
   * whose requests towards the agent need more (HTTP: the agent's GET stream) calls it then.
   */
  releaseHeld(): void;
  /**
   * Also call `listener` when an upstream says its tools changed (a 2026-07-28 server tells its
   * `subscriptions/listen` streams; a session server is told anyway).
   */
  onToolsChanged(listener: () => void): void;
  /** List the upstream's tools and register unknown ones with Vouch (also done on every `tools/list`). */
  discover(): Promise<void>;
  /** How many `tools/call` are running now. */
  inFlight(): number;
  /**
   * Stop taking new calls and let running ones finish and record their outcomes, for at
   * most `graceMs`; past it they are stopped, and `execute` records them `unknown`.
   */
  drain(graceMs: number): Promise<void>;
  /** Close the agent-facing server and the upstream connection. */
  close(): Promise<void>;
}

/**
 * An MCP server that serves the upstream's tools and sends every `tools/call` through
 * Vouch: propose, decide, wait for approval, call, observe, verify.
 *
 * @example
 * const upstream = new Client({ name: 'vouch-gateway', version: '0.1.0' });
 * await upstream.connect(new StdioClientTransport({ command: 'npx', args: ['my-mcp-server'] }));
 * const gateway = createGateway({
 *   upstream: { client: upstream, transport: 'stdio' },
 *   vouch: createVouchClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: process.env.VOUCH_API_KEY! }),
 *   serverId: 'files',
 *   environment: 'production',
 * });
 * await gateway.discover();
 * await gateway.server.connect(new StdioServerTransport());
 */
export function createGateway(options: GatewayOptions): Gateway {
  const logger = options.logger ?? silentLogger;
  const { vouch } = options;
  const calls = options.calls ?? callsOf('stdio', createMemoryJournal());
  const common = {
    vouch,
    ...calls,
    environment: options.environment,
    approvalWait: { timeoutMs: 0, ...options.approvalWait },
    invokeTimeoutMs: options.invokeTimeoutMs ?? 60_000,
    definitionChanges: options.toolDefinitionChanges ?? 'refuse',
    logger,
    ...(options.approvalPrompt === false
      ? {}
      : {
          approvalPrompt: {
            // Read when a call is pending, so after the agent's initialize.
            supported: () => supportsFormElicitation(server.getClientCapabilities()),
            ...(options.approvalPrompt?.consoleUrl ? { consoleUrl: options.approvalPrompt.consoleUrl } : {}),
            recheckWaitMs: options.approvalPrompt?.recheckWaitMs ?? 30_000,
            timeoutMs: options.approvalPrompt?.timeoutMs ?? 300_000,
          },
        }),
  };
  const routeOf = (
    name: string | null,
    upstream: Upstream,
    serverId: string,
    tools: Record<string, ToolSettings> | undefined,
    governed: readonly GovernedMethod[] | undefined,
  ): Route => ({
    name,
    upstream,
    serverId,
    governed: governed ?? [],
    deps: {
      ...common,
      upstream,
      serverId,
      registry: createToolRegistry({ vouch, serverId, logger }),
      tools: tools ?? {},
    },
  });
  const routes = routesOf(options, routeOf);
  const multi = options.upstreams !== undefined;

  const rounds = approvalRoundsOf(options.requestStateKey);
  const newServer = (kind: ServerKind) => {
    const created = new Server(
      { name: options.name ?? 'vouch-mcp-gateway', version: options.version ?? '0.1.0' },
      {
        capabilities: agentCapabilitiesOf(
          multi
            ? unionOfCapabilities(routes.map((route) => route.upstream.client.getServerCapabilities()))
            : routes[0]!.upstream.client.getServerCapabilities(),
        ),
        ...instructionsOf(routes),
        ...(kind === 'request' ? { requestState: { verify: rounds.codec.verify } } : {}),
      },
    );
    // Created with the upstream's logging capability, the SDK answers logging/setLevel itself;
    // the level is the upstream's to apply, so that request passes through like the rest.
    created.removeRequestHandler('logging/setLevel');
    wire(created, kind);
    return created;
  };

  const listAll = (route: Route) =>
    allPages(`the tool list of upstream ${route.name ?? 'default'}`, async (cursor) => {
      const page = await route.upstream.client.listTools(cursor === undefined ? {} : { cursor });
      return { items: page.tools, nextCursor: page.nextCursor };
    });

  // Governed methods are registered like tools (under the method's name), so the registry
  // holds their class and policy can allow them; the agent's tools/list does not show them.
  const discover = async (route: Route, tools: Awaited<ReturnType<typeof listAll>>) => {
    const governedTools = [...new Set(route.governed.map((rule) => rule.method))].map((method) => ({
      name: method,
      inputSchema: { type: 'object' as const },
    }));
    await route.deps.registry.discover([...tools, ...governedTools]);
  };
  /** One upstream's tools as the agent sees them (namespaced with several upstreams), registered with Vouch. */
  const toolsOf = async (route: Route) => {
    // An upstream without tools adds none (asking would be an error), but its governed methods are registered.
    if (!route.upstream.client.getServerCapabilities()?.tools) {
      await discover(route, []);
      return [];
    }
    const listed = await listAll(route);
    await discover(route, listed);
    // A changed definition is not shown until approved: its text is what could mislead the agent.
    const tools = listed.filter(
      (tool) =>
        common.definitionChanges === 'warn' ||
        route.deps.registry.definitionOf(tool.name).status !== 'changed',
    );
    return route.name === null
      ? tools
      : tools.map((tool) => ({ ...tool, name: namespaced(route.name!, tool.name) }));
  };

  const visible = options.visibleTools ?? (() => true);
  const listTools = async () => {
    if (!multi) return { tools: (await toolsOf(routes[0]!)).filter((tool) => visible(tool.name)) };
    // One upstream failing to list does not hide the others' tools.
    const listed = await Promise.allSettled(routes.map(toolsOf));
    return {
      tools: listed.flatMap((result, i) => {
        if (result.status === 'fulfilled') return result.value.filter((tool) => visible(tool.name));
        logger.warn('could not list the tools of an upstream', {
          upstream: routes[i]!.name,
          error: String(result.reason),
        });
        return [];
      }),
    };
  };

  // Calls in flight, so stopping can let them finish and record their outcomes (drain).
  const inFlight = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  let draining = false;
  /** Run one governed call (a tool call or a governed request), counted in flight until it settles. */
  const governedCall = <T>(
    server: Server,
    extra: ForwardingExtra,
    run: (extra: ForwardingExtra) => Promise<T>,
  ): Promise<T> => {
    if (stopping.signal.aborted || draining) {
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, 'the gateway is stopping; call again later');
    }
    const signal = callSignal(extra.signal, stopping.signal, () => server.transport === undefined);
    const call = run({ ...extra, signal });
    inFlight.add(call);
    void call.then(
      () => inFlight.delete(call),
      () => inFlight.delete(call),
    );
    return call;
  };
  const timeoutMs = options.requestTimeoutMs ?? 60_000;
  /**
   * Register the agent-facing handlers on `target`. A `session` server (stdio, or one HTTP
   * session of a 2025-era agent) also takes what the upstreams send towards the agent; a
   * `request` server answers one 2026-07-28 exchange, where a pending approval becomes an
   * `input_required` round, and has no channel back to the agent outside its answer.
   */
  const wire = (target: Server, kind: ServerKind) => {
    target.setRequestHandler('tools/list', listTools);
    target.setRequestHandler(TOOLS_CALL, (request, ctx) => {
      const found = routeOfName(routes, request.params.name);
      // Never forwarded: a name outside every namespace reaches no upstream.
      if (!found) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `unknown tool ${JSON.stringify(request.params.name)}: tool names are <upstream>__<tool>, for an upstream of this gateway`,
        );
      }
      if (!visible(request.params.name)) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `tool ${JSON.stringify(request.params.name)} is not available to this agent`,
        );
      }
      const local = { ...request, params: { ...request.params, name: found.name } };
      const extra = forwardingExtraOf(ctx);
      if (kind === 'request') {
        return governedCall(target, extra, (governedExtra) =>
          answerInRounds(found.route.deps, local, ctx, rounds, governedExtra, handleToolCall),
        );
      }
      return governedCall(target, extra, (governedExtra) =>
        handleToolCall(found.route.deps, local, governedExtra),
      );
    });
    const governedRequest = (
      route: Route,
      request: { method: string; params?: Record<string, unknown> },
      extra: ForwardingExtra,
    ) => {
      const match = governedMatch(route.governed, request);
      if (match === null) return null;
      return governedCall(target, extra, (governedExtra) =>
        handleGovernedRequest(route.deps, match, request, governedExtra),
      );
    };
    const towardsAgent = kind === 'session';
    if (multi) {
      routeThrough({ server: target, routes, governed: governedRequest, logger, timeoutMs, towardsAgent });
    } else {
      const route = routes[0]!;
      passThrough({
        server: target,
        upstream: route.upstream.client,
        timeoutMs,
        logger,
        governed: (request, extra) => governedRequest(route, request, extra),
        towardsAgent,
      });
    }
  };
  const server = newServer('session');
  // What the upstreams sent while the gateway started reaches the agent once it can answer.
  const releaseHeld = () => {
    for (const route of routes) route.upstream.releaseHeld?.();
  };
  server.oninitialized = releaseHeld;
  // An upstream may change its tools; tell the agent, which lists again (and so rediscovers).
  const toolsChangedListeners = new Set<() => void>();
  for (const route of routes) {
    route.upstream.client.setNotificationHandler('notifications/tools/list_changed', async () => {
      // Learn the new definitions now: the agent may call before it lists again.
      await toolsOf(route).catch((error: unknown) => {
        logger.warn('could not rediscover tools after tools/list_changed', {
          upstream: route.name,
          error: String(error),
        });
      });
      for (const listener of toolsChangedListeners) listener();
      // Served per request only, the gateway has no session to tell.
      if (server.transport === undefined && toolsChangedListeners.size > 0) return;
      await server.sendToolListChanged().catch((error: unknown) => {
        logger.warn('could not forward tools/list_changed', { upstream: route.name, error: String(error) });
      });
    });
  }

  return {
    server,
    releaseHeld,
    onToolsChanged: (listener) => {
      toolsChangedListeners.add(listener);
    },
    serverForRequest: () => {
      // Served per request, the gateway has no agent session to hold the upstreams' traffic for.
      releaseHeld();
      return newServer('request');
    },
    discover: async () => {
      await Promise.all(routes.map(toolsOf));
    },
    inFlight: () => inFlight.size,
    drain: async (graceMs) => {
      draining = true;
      if (inFlight.size > 0) logger.info('draining', { calls: inFlight.size, bound_ms: graceMs });
      const settled = () => Promise.allSettled([...inFlight]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([settled(), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      if (inFlight.size === 0) return;
      logger.warn('calls still running after the drain bound; stopping them, recorded as unknown', {
        calls: inFlight.size,
      });
      // `execute` records an interrupted call as `unknown` before it returns.
      stopping.abort(new GatewayStopping('the gateway is stopping'));
      await settled();
    },
    close: async () => {
      await server.close();
      await Promise.all(routes.map((route) => route.upstream.client.close()));
    },
  };
}

/** The calls of one agent over `journal`. */
export function callsOf(agent: string, journal: CallJournal): { keys: CallKeys; journal: CallJournal } {
  return { keys: createCallKeys({ agent, journal }), journal };
}

/** Who an agent-facing server serves: one agent session, or one stateless exchange. */
type ServerKind = 'session' | 'request';

/**
 * The signal a call runs under. The agent cancelling it (`notifications/cancelled`) stops it
 * at once; the agent disconnecting does not (the SDK aborts every handler then, which would
 * lose the call's outcome): the call goes on until it finishes or the gateway's drain ends it.
 */
function callSignal(request: AbortSignal, stopping: AbortSignal, disconnected: () => boolean): AbortSignal {
  const controller = new AbortController();
  stopping.addEventListener('abort', () => controller.abort(stopping.reason), { once: true });
  request.addEventListener(
    'abort',
    // The SDK aborts handlers just before it drops the transport; look once that is done.
    () => setImmediate(() => disconnected() || controller.abort(request.reason)),
    { once: true },
  );
  return controller.signal;
}

/** The routes of a gateway: its single unnamed upstream, or each named one in order. */
function routesOf(
  options: GatewayOptions,
  routeOf: (
    name: string | null,
    upstream: Upstream,
    serverId: string,
    tools: Record<string, ToolSettings> | undefined,
    governed: readonly GovernedMethod[] | undefined,
  ) => Route,
): Route[] {
  if (options.upstreams !== undefined) {
    if (options.upstream !== undefined) throw new TypeError('set either upstream or upstreams, not both');
    if (options.upstreams.length === 0) throw new TypeError('upstreams must name at least one upstream');
    const names = new Set<string>();
    const serverIds = new Set<string>();
    return options.upstreams.map((named) => {
      if (!/^[A-Za-z0-9][A-Za-z0-9-]*$/.test(named.name) || names.has(named.name)) {
        throw new TypeError(
          `upstream name ${JSON.stringify(named.name)} is not a unique name of letters, digits and -`,
        );
      }
      names.add(named.name);
      // Vouch binds approvals to the server id: a shared one would let one upstream use the other's.
      const serverId = named.serverId ?? named.name;
      if (serverIds.has(serverId)) {
        throw new TypeError(
          `upstream ${named.name} has the server id ${JSON.stringify(serverId)} of another`,
        );
      }
      serverIds.add(serverId);
      return routeOf(named.name, named.upstream, serverId, named.tools, named.governed);
    });
  }
  if (options.upstream === undefined || options.serverId === undefined) {
    throw new TypeError('set upstream and serverId, or upstreams');
  }
  return [routeOf(null, options.upstream, options.serverId, options.tools, options.governed)];
}

/** The upstreams' instructions for the agent; with several, each under its name. */
function instructionsOf(routes: readonly Route[]): { instructions?: string } {
  const parts = routes.flatMap((route) => {
    const text = route.upstream.client.getInstructions();
    if (!text) return [];
    return [route.name === null ? text : `${route.name}: tools and prompts named ${route.name}__*\n${text}`];
  });
  return parts.length === 0 ? {} : { instructions: parts.join('\n\n') };
}
