import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient, WaitOptions } from '@vouch/client';
import type { ToolSettings } from './action-of-call';
import { createCallKeys } from './call-keys';
import { type CallToolDeps, handleToolCall } from './call-tool';
import { type GovernedMethod, governedMatch, handleGovernedRequest } from './governed-request';
import { type Logger, silentLogger } from './logger';
import { agentCapabilitiesOf, type ForwardingExtra, passThrough } from './pass-through';
import { createToolRegistry } from './tool-registry';
import type { Upstream } from './upstream-call';

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The connected upstream MCP server (stdio, HTTP or in-memory). */
  upstream: Upstream;
  /** A client whose key holds the `gateway` role; the identity Vouch authorizes is the key's. */
  vouch: VouchClient;
  /** How Vouch names the upstream server (`server_id` of its tools). */
  serverId: string;
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
  /** Time limit of one upstream call (default 60 000 ms); past it the outcome is `unknown`. */
  invokeTimeoutMs?: number;
  /**
   * Separates this gateway process's idempotency keys from earlier ones (default: random).
   * Set it to keep waiting on approvals across gateway restarts.
   */
  session?: string;
  /** Time limit of a passed-through request (resources, prompts, sampling, …; default 60 000 ms). */
  requestTimeoutMs?: number;
  /** Shown to the agent's client as the server name (default `vouch-mcp-gateway`). */
  name?: string;
  version?: string;
  logger?: Logger;
}

/** A running gateway: connect `server` to the agent's transport. */
export interface Gateway {
  /** The MCP server the agent talks to. */
  server: Server;
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
  const { upstream, vouch, serverId } = options;
  const registry = createToolRegistry({ vouch, serverId, logger });
  const keys = createCallKeys(options.session ?? globalThis.crypto.randomUUID());

  const server = new Server(
    { name: options.name ?? 'vouch-mcp-gateway', version: options.version ?? '0.1.0' },
    {
      capabilities: agentCapabilitiesOf(upstream.client.getServerCapabilities()),
      ...(upstream.client.getInstructions() ? { instructions: upstream.client.getInstructions() } : {}),
    },
  );
  // Created with the upstream's logging capability, the SDK answers logging/setLevel itself;
  // the level is the upstream's to apply, so that request passes through like the rest.
  server.removeRequestHandler('logging/setLevel');

  const listAll = async () => {
    const tools = [];
    let cursor: string | undefined;
    do {
      const page = await upstream.client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  };

  // Governed methods are registered like tools (under the method's name), so the registry
  // holds their class and policy can allow them; the agent's tools/list does not show them.
  const governed = options.governed ?? [];
  const governedTools = [...new Set(governed.map((rule) => rule.method))].map((method) => ({
    name: method,
    inputSchema: { type: 'object' as const },
  }));
  const discover = async (tools: Awaited<ReturnType<typeof listAll>>) =>
    registry.discover([...tools, ...governedTools]);

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await listAll();
    await discover(tools);
    return { tools };
  });

  // Calls in flight, so stopping can let them finish and record their outcomes (drain).
  const inFlight = new Set<Promise<unknown>>();
  const stopping = new AbortController();
  let draining = false;
  const deps: CallToolDeps = {
    upstream,
    vouch,
    registry,
    keys,
    serverId,
    environment: options.environment,
    tools: options.tools ?? {},
    approvalWait: { timeoutMs: 0, ...options.approvalWait },
    invokeTimeoutMs: options.invokeTimeoutMs ?? 60_000,
    logger,
  };
  /** Run one governed call (a tool call or a governed request), counted in flight until it settles. */
  const governedCall = <T>(
    extra: ForwardingExtra,
    run: (extra: ForwardingExtra) => Promise<T>,
  ): Promise<T> => {
    if (stopping.signal.aborted || draining) {
      throw new McpError(ErrorCode.InvalidRequest, 'the gateway is stopping; call again later');
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
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    governedCall(extra, (governedExtra) => handleToolCall(deps, request, governedExtra)),
  );
  passThrough({
    server,
    upstream: upstream.client,
    timeoutMs: options.requestTimeoutMs ?? 60_000,
    logger,
    governed: (request, extra) => {
      const match = governedMatch(governed, request);
      if (match === null) return null;
      return governedCall(extra, (governedExtra) =>
        handleGovernedRequest(deps, match, request, governedExtra),
      );
    },
  });
  // The upstream may change its tools; tell the agent, which lists again (and so rediscovers).
  upstream.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    await server.sendToolListChanged().catch((error: unknown) => {
      logger.warn('could not forward tools/list_changed', { error: String(error) });
    });
  });

  return {
    server,
    discover: async () => discover(await listAll()),
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
      stopping.abort(new Error('the gateway is stopping'));
      await settled();
    },
    close: async () => {
      await server.close();
      await upstream.client.close();
    },
  };
}

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
