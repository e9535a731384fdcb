import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient, WaitOptions } from '@vouch/client';
import type { ToolSettings } from './action-of-call';
import { createCallKeys } from './call-keys';
import { handleToolCall } from './call-tool';
import { type Logger, silentLogger } from './logger';
import { agentCapabilitiesOf, passThrough } from './pass-through';
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
  passThrough({ server, upstream: upstream.client, timeoutMs: options.requestTimeoutMs ?? 60_000, logger });

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

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = await listAll();
    await registry.discover(tools);
    return { tools };
  });

  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    handleToolCall(
      {
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
      },
      request,
      extra,
    ),
  );

  // The upstream may change its tools; tell the agent, which lists again (and so rediscovers).
  upstream.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    await server.sendToolListChanged().catch((error: unknown) => {
      logger.warn('could not forward tools/list_changed', { error: String(error) });
    });
  });

  return {
    server,
    discover: async () => registry.discover(await listAll()),
    close: async () => {
      await server.close();
      await upstream.client.close();
    },
  };
}
