import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { createVouchClient } from '@vouch/client';
import type { GatewayConfig } from './config';
import { GatewayError } from './errors';
import { createGateway, type Gateway } from './gateway';
import type { Logger } from './logger';
import type { Upstream } from './upstream-call';

/** Connect to the configured upstream MCP server. */
export async function connectUpstream(config: GatewayConfig['upstream']): Promise<Upstream> {
  const client = new Client({ name: 'vouch-mcp-gateway', version: '0.1.0' });
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

/**
 * Start a gateway from its configuration: connect the upstream, register its tools with
 * Vouch, and serve the agent on `agentTransport` (stdio for the bin).
 */
export async function startGateway(options: {
  config: GatewayConfig;
  apiKey: string;
  agentTransport: Transport;
  logger: Logger;
  fetch?: typeof fetch;
  /** Called when the upstream connection closes (its process exited): the bin stops then. */
  onUpstreamClose?: () => void;
}): Promise<Gateway> {
  const { config, logger } = options;
  const upstream = await connectUpstream(config.upstream);
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
    approvalWait: { timeoutMs: config.approvalWaitMs },
    invokeTimeoutMs: config.invokeTimeoutMs,
    ...(config.session ? { session: config.session } : {}),
    logger,
  });
  // Register before serving, so the first call already finds its tool; a failure is logged
  // and retried on the next tools/list (calls to unregistered tools are denied meanwhile).
  await gateway
    .discover()
    .catch((error: unknown) => logger.warn('discovery failed', { error: String(error) }));
  await gateway.server.connect(options.agentTransport);
  logger.info('gateway started', { server_id: config.serverId, environment: config.environment });
  return gateway;
}
