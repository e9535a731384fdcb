import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient } from '@vouch/client';
import { type AgentHttpServer, serveAgentsOverHttp } from './agent-http';
import { awaitInitialize } from './await-initialize';
import type { GatewayConfig } from './config';
import { GatewayError } from './errors';
import { createGateway, type Gateway } from './gateway';
import type { Logger } from './logger';
import { upstreamCapabilitiesOf } from './pass-through';
import type { Upstream } from './upstream-call';

/**
 * Connect to the configured upstream MCP server, declaring the agent's client capabilities
 * (sampling, elicitation, roots) as the gateway's own, since it forwards those requests.
 */
export async function connectUpstream(
  config: GatewayConfig['upstream'],
  agentCapabilities?: ClientCapabilities,
): Promise<Upstream> {
  const client = new Client(
    { name: 'vouch-mcp-gateway', version: '0.1.0' },
    { capabilities: upstreamCapabilitiesOf(agentCapabilities) },
  );
  const http = 'url' in config;
  const transport = http
    ? new StreamableHTTPClientTransport(new URL(config.url))
    : new StdioClientTransport({
        command: config.command,
        args: config.args,
        ...(config.env ? { env: config.env } : {}),
        ...(config.cwd ? { cwd: config.cwd } : {}),
        // The upstream's stderr is for its operator, like ours; stdout is the protocol.
        stderr: 'inherit',
      });
  try {
    await client.connect(transport);
  } catch (cause) {
    throw new GatewayError(
      'UPSTREAM_UNAVAILABLE',
      `cannot connect to the upstream MCP server: ${String(cause)}`,
      {
        cause,
      },
    );
  }
  return { client, transport: http ? 'http' : 'stdio' };
}

/** What starting a gateway needs besides the agent side. */
interface StartOptions {
  config: GatewayConfig;
  logger: Logger;
  fetch?: typeof fetch;
  /** Called when an upstream connection closes (its process exited). */
  onUpstreamClose?: () => void;
}

/**
 * Open the gateway for one agent: connect the upstream with the agent's capabilities,
 * register its tools with Vouch, and act with `apiKey` (the agent's or the gateway's).
 */
export async function openGateway(
  options: StartOptions & { apiKey: string; agentCapabilities?: ClientCapabilities },
): Promise<Gateway> {
  const { config, logger } = options;
  const upstream = await connectUpstream(config.upstream, options.agentCapabilities);
  // Without an upstream every call would fail in the transport layer and be recorded as
  // `unknown`; stopping says what happened instead.
  if (options.onUpstreamClose) upstream.client.onclose = options.onUpstreamClose;
  const gateway = createGateway({
    upstream,
    vouch: createVouchClient({
      baseUrl: config.vouch.url,
      apiKey: options.apiKey,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    }),
    serverId: config.serverId,
    environment: config.environment,
    tools: config.tools,
    governed: config.governed,
    approvalWait: { timeoutMs: config.approvalWaitMs },
    invokeTimeoutMs: config.invokeTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    ...(config.session ? { session: config.session } : {}),
    logger,
  });
  // Register before serving, so the first call already finds its tool; a failure is logged
  // and retried on the next tools/list (calls to unregistered tools are denied meanwhile).
  await gateway
    .discover()
    .catch((error: unknown) => logger.warn('discovery failed', { error: String(error) }));
  return gateway;
}

/**
 * Start a gateway for one agent on `agentTransport` (stdio for the bin): wait for the
 * agent's `initialize`, connect the upstream with the agent's capabilities, then answer.
 */
export async function startGateway(
  options: StartOptions & { apiKey: string; agentTransport: Transport },
): Promise<Gateway> {
  const { params, transport } = await awaitInitialize(options.agentTransport);
  const gateway = await openGateway({ ...options, agentCapabilities: params.capabilities });
  await gateway.server.connect(transport);
  options.logger.info('gateway started', {
    server_id: options.config.serverId,
    environment: options.config.environment,
  });
  return gateway;
}

/**
 * Serve agents over Streamable HTTP (`agentServer` in the configuration): one gateway per
 * agent session, acting with that agent's own Vouch key.
 */
export async function startHttpGateway(
  options: StartOptions & { agentApiKeys: Readonly<Record<string, string>> },
): Promise<AgentHttpServer> {
  const settings = options.config.agentServer;
  if (!settings) throw new GatewayError('CONFIG_INVALID', 'agentServer is not configured');
  const server = await serveAgentsOverHttp({
    ...settings,
    drainTimeoutMs: options.config.drainTimeoutMs,
    logger: options.logger,
    openSession: (agent, initialize) =>
      openGateway({
        config: options.config,
        logger: options.logger,
        ...(options.fetch ? { fetch: options.fetch } : {}),
        apiKey: options.agentApiKeys[agent.name]!,
        agentCapabilities: initialize.capabilities,
      }),
  });
  options.logger.info('gateway listening', { url: server.url, server_id: options.config.serverId });
  return server;
}
