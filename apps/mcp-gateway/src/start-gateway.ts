import type { ClientCapabilities, Transport } from '@modelcontextprotocol/server';
import { createVouchClient } from '@vouch/client';
import { type AgentHttpServer, serveAgentsOverHttp } from './agent-http';
import { configForAgent, visibleToolsOf } from './agent-visibility';
import { awaitInitialize } from './await-initialize';
import type { CallJournal } from './call-journal';
import type { TokenSource } from './client-credentials';
import { drainTimeoutOf, type GatewayConfig, type GatewaySigning, upstreamConnectionsOf } from './config';
import { connectUpstream } from './connect-upstream';
import { GatewayError } from './errors';
import { callsOf, createGateway, type Gateway } from './gateway';
import { defaultJournalDir, openCallJournal } from './in-doubt';
import type { Logger } from './logger';
import type { Upstream } from './upstream-call';

/** What starting a gateway needs besides the agent side. */
interface StartOptions {
  config: GatewayConfig;
  logger: Logger;
  /** The `fetch` of the Vouch client (default: the global one). */
  fetch?: typeof fetch;
  /** The values of the environment variables the upstreams' headers and auth name. */
  upstreamSecrets?: Readonly<Record<string, string>>;
  /** OAuth token sources shared by the upstream connections of every agent session. */
  tokenSources?: Map<string, TokenSource>;
  /** Called when an upstream connection closes (its process exited). */
  onUpstreamClose?: () => void;
  /** Sign the records the gateway writes (see `GatewaySigning`). */
  signing?: GatewaySigning;
  /** The HMAC key of `input_required` rounds, shared by every instance (see `GatewayOptions`). */
  requestStateKey?: string;
}

/**
 * Open the gateway for one agent: connect the upstream with the agent's capabilities,
 * register its tools with Vouch, and act with `apiKey` (the agent's or the gateway's).
 */
export async function openGateway(
  options: StartOptions & {
    apiKey: string;
    agentCapabilities?: ClientCapabilities;
    /**
     * The agent's calls (shared by its sessions): its name and its journal (see
     * `openCallJournal`). Default: one agent, `stdio`, with a journal in memory.
     */
    calls?: { agent: string; journal: CallJournal };
    /** Over HTTP: which exposed tools the agent sees and may call (default: all). */
    visibleTools?: (name: string) => boolean;
  },
): Promise<Gateway> {
  const { config, logger } = options;
  const connections = upstreamConnectionsOf(config);
  const connected = await Promise.allSettled(
    connections.map(([name, connection]) =>
      connectUpstream(connection, {
        ...(options.agentCapabilities ? { agentCapabilities: options.agentCapabilities } : {}),
        ...(options.upstreamSecrets ? { secrets: options.upstreamSecrets } : {}),
        ...(options.tokenSources ? { tokenSources: options.tokenSources } : {}),
        label: name,
      }),
    ),
  );
  const failed = connected.find((result) => result.status === 'rejected');
  if (failed) {
    await Promise.all(
      connected.map((result) => (result.status === 'fulfilled' ? result.value.client.close() : undefined)),
    );
    throw failed.reason;
  }
  const upstreams = connected.map((result) => (result as PromiseFulfilledResult<Upstream>).value);
  // Without an upstream every call would fail in the transport layer and be recorded as
  // `unknown`; stopping says what happened instead.
  if (options.onUpstreamClose) {
    for (const upstream of upstreams) upstream.client.onclose = options.onUpstreamClose;
  }
  const gateway = createGateway({
    ...(config.upstreams
      ? {
          upstreams: Object.entries(config.upstreams).map(([name, settings], i) => ({
            name,
            upstream: upstreams[i]!,
            ...(settings.serverId ? { serverId: settings.serverId } : {}),
            ...(settings.tools ? { tools: settings.tools } : {}),
            ...(settings.governed ? { governed: settings.governed } : {}),
          })),
        }
      : {
          upstream: upstreams[0]!,
          serverId: config.serverId!,
          tools: config.tools ?? {},
          governed: config.governed ?? [],
        }),
    vouch: createVouchClient({
      baseUrl: config.vouch.url,
      apiKey: options.apiKey,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.signing ? { signing: options.signing } : {}),
    }),
    environment: config.environment,
    approvalWait: { timeoutMs: config.approvalWaitMs },
    approvalPrompt: {
      ...(config.consoleUrl ? { consoleUrl: config.consoleUrl } : {}),
      recheckWaitMs: config.elicitationWaitMs,
      timeoutMs: config.approvalPromptTimeoutMs,
    },
    invokeTimeoutMs: config.invokeTimeoutMs,
    toolDefinitionChanges: config.toolDefinitionChanges,
    requestTimeoutMs: config.requestTimeoutMs,
    ...(options.calls ? { calls: callsOf(options.calls.agent, options.calls.journal) } : {}),
    ...(options.visibleTools ? { visibleTools: options.visibleTools } : {}),
    ...(options.requestStateKey ? { requestStateKey: options.requestStateKey } : {}),
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
  const journal = await journalOf(options, options.apiKey);
  const gateway = await openGateway({
    ...options,
    agentCapabilities: params.capabilities,
    calls: { agent: 'stdio', journal },
  });
  await gateway.server.connect(transport);
  options.logger.info('gateway started', {
    server_id: serverIdsOf(options.config),
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
  const tokenSources = options.tokenSources ?? new Map<string, TokenSource>();
  // One journal per agent, opened (and its in-doubt calls recorded) before any agent is served.
  const journals = new Map<string, CallJournal>();
  for (const agent of settings.agents) {
    journals.set(agent.name, await journalOf(options, options.agentApiKeys[agent.name]!));
  }
  /** One agent's gateway: its visibility, calls and journal, in a session or a stateless exchange alike. */
  const openForAgent = (name: string, agentCapabilities?: ClientCapabilities) => {
    const settingsOfAgent = settings.agents.find((candidate) => candidate.name === name);
    const visibleTools = visibleToolsOf(settingsOfAgent?.tools);
    return openGateway({
      config: configForAgent(options.config, settingsOfAgent),
      ...(visibleTools ? { visibleTools } : {}),
      logger: options.logger,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.upstreamSecrets ? { upstreamSecrets: options.upstreamSecrets } : {}),
      ...(options.requestStateKey ? { requestStateKey: options.requestStateKey } : {}),
      tokenSources,
      apiKey: options.agentApiKeys[name]!,
      ...(agentCapabilities ? { agentCapabilities } : {}),
      calls: { agent: name, journal: journals.get(name)! },
    });
  };
  const server = await serveAgentsOverHttp({
    ...settings,
    sessionLimits: {
      idleTimeoutMs: settings.sessionIdleTimeoutMs,
      maxPerAgent: settings.maxSessionsPerAgent,
      maxTotal: settings.maxSessions,
    },
    drainTimeoutMs: drainTimeoutOf(options.config),
    logger: options.logger,
    openSession: (agent, initialize) => openForAgent(agent.name, initialize.capabilities),
    // MCP 2026-07-28 requests declare the client's capabilities per request, so the upstream
    // is connected declaring none: its requests towards the agent reach 2025-era sessions only.
    openStateless: (agent) => openForAgent(agent.name),
  });
  options.logger.info('gateway listening', { url: server.url, server_id: serverIdsOf(options.config) });
  return server;
}

/** Open the call journal of the identity of `apiKey`, recording what an earlier gateway left in doubt. */
function journalOf(options: StartOptions, apiKey: string): Promise<CallJournal> {
  const { config } = options;
  return openCallJournal({
    dir: config.journal ?? defaultJournalDir(process.env),
    vouchUrl: config.vouch.url,
    apiKey,
    ...(config.session ? { session: config.session } : {}),
    vouch: createVouchClient({
      baseUrl: config.vouch.url,
      apiKey,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.signing ? { signing: options.signing } : {}),
    }),
    logger: options.logger,
  });
}

/** The Vouch server ids a configuration acts for, for log lines. */
function serverIdsOf(config: GatewayConfig): string {
  if (!config.upstreams) return config.serverId ?? '';
  return Object.entries(config.upstreams)
    .map(([name, settings]) => settings.serverId ?? name)
    .join(',');
}
