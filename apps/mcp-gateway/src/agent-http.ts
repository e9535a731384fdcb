import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type NodeMcpRequestHandler,
  NodeStreamableHTTPServerTransport as StreamableHTTPServerTransport,
  toNodeHandler,
  toWebRequest,
} from '@modelcontextprotocol/node';
import {
  createMcpHandler,
  type InitializeRequest,
  isInitializeRequest,
  isLegacyRequest,
} from '@modelcontextprotocol/server';
import {
  type AgentSession,
  createSessionTable,
  DEFAULT_SESSION_LIMITS,
  type SessionLimits,
  type SessionTable,
} from './agent-sessions';
import type { Gateway } from './gateway';
import type { Logger } from './logger';

/** One agent allowed to use the HTTP gateway. */
export interface HttpAgent {
  name: string;
  /** SHA-256 (lowercase hex) of the agent's bearer token; the token itself is never stored. */
  tokenSha256: string;
}

/** Options of {@link serveAgentsOverHttp}. */
export interface AgentHttpOptions {
  host: string;
  port: number;
  path: string;
  agents: readonly HttpAgent[];
  /** Host names accepted in `Host`/`Origin`; default: the loopback names when bound to loopback, else any. */
  allowedHosts?: readonly string[];
  /** After an agent disconnects, how long its running calls may finish (default 10 000 ms). */
  drainTimeoutMs?: number;
  /** Open the gateway for one agent session, once its `initialize` (and capabilities) arrived. */
  openSession: (agent: HttpAgent, initialize: InitializeRequest['params']) => Promise<Gateway>;
  /**
   * Open the gateway that answers one agent's MCP 2026-07-28 requests, once per agent and
   * process. Those requests carry no session: each is answered by a fresh server over this
   * gateway, so any instance can take the next one. Unset: 2025-era sessions only.
   */
  openStateless?: (agent: HttpAgent) => Promise<Gateway>;
  /** Idle timeout and caps of the 2025-era sessions (defaults: `DEFAULT_SESSION_LIMITS`). */
  sessionLimits?: Partial<SessionLimits>;
  /**
   * Serve `GET /metrics` (the session metrics, Prometheus text) on a listener of its own on
   * this port, without authentication, so bind it where only the scraper reaches (default host
   * 127.0.0.1). Unset: no metrics listener.
   */
  metricsPort?: number;
  metricsHost?: string;
  logger: Logger;
}

/** A running HTTP gateway. */
export interface AgentHttpServer {
  url: string;
  /** The open agent sessions, each with its gateway. */
  sessions(): Gateway[];
  /** The Prometheus text of the session metrics (`vouch_mcp_gateway_sessions_*`). */
  metrics(): Promise<string>;
  /** Where `GET /metrics` is served, when `metricsPort` is set. */
  metricsUrl?: string;
  /** Stop accepting connections and close every session. */
  close(): Promise<void>;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Open one agent session (its `initialize` in hand): the agent's gateway, a session
 * transport, and its end: when the agent or the gateway closes it, running calls finish and
 * are recorded, then the gateway and its upstream connections (and stdio processes) close.
 */
async function startSession(
  options: AgentHttpOptions,
  sessions: SessionTable,
  opening: { agent: HttpAgent; initialize: InitializeRequest['params'] },
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
): Promise<void> {
  const { agent } = opening;
  const gateway = await options.openSession(agent, opening.initialize);
  // Requests towards the agent travel on its GET stream: what the upstream sent while
  // starting waits for that stream, not for `initialized` (see releaseOnceStreaming).
  gateway.server.oninitialized = undefined;
  let session: AgentSession | undefined;
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => {
      session = { agent, gateway, transport, lastSeen: Date.now(), streams: 0 };
      sessions.add(id, session);
      sessions.touch(session, res);
      options.logger.info('agent session opened', { agent: agent.name });
    },
  });
  transport.onclose = () => {
    if (session) sessions.remove(transport.sessionId, session);
    // The agent went away: its running calls still finish and are recorded.
    void gateway
      .drain(options.drainTimeoutMs ?? 10_000)
      .then(() => gateway.close())
      .catch(() => {});
  };
  await gateway.server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/**
 * Serve agents over MCP Streamable HTTP. Every request carries `Authorization: Bearer
 * <token>`; the token's hash is compared in constant time with each agent's, and a session
 * belongs to the agent that opened it. Each session has its own gateway (and upstream
 * connection), so server-to-client requests reach the right agent and every call is
 * proposed with that agent's Vouch key.
 */
export async function serveAgentsOverHttp(options: AgentHttpOptions): Promise<AgentHttpServer> {
  const limits = { ...DEFAULT_SESSION_LIMITS, ...options.sessionLimits };
  const sessions = createSessionTable({ limits, logger: options.logger });
  const stateless = statelessServing(options);
  const allowedHosts =
    options.allowedHosts ?? (LOOPBACK_NAMES.includes(options.host) ? LOOPBACK_NAMES : undefined);
  const hashes = options.agents.map((agent) => ({ agent, hash: Buffer.from(agent.tokenSha256, 'hex') }));

  const agentOf = (req: IncomingMessage): HttpAgent | undefined => {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer (\S+)$/i.exec(header);
    if (!match) return undefined;
    const presented = createHash('sha256').update(match[1]!).digest();
    let found: HttpAgent | undefined;
    // Compare with every agent, so the time taken does not say which one matched.
    for (const { agent, hash } of hashes) {
      if (timingSafeEqual(presented, hash) && !found) found = agent;
    }
    return found;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    if (url.pathname !== options.path) return refuse(res, 404, 'NOT_FOUND', 'no MCP endpoint here');
    if (allowedHosts && !hostAllowed(req, allowedHosts)) {
      return refuse(res, 403, 'HOST_NOT_ALLOWED', 'the Host or Origin header is not one this gateway serves');
    }
    const agent = agentOf(req);
    if (!agent) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      return refuse(res, 401, 'UNAUTHENTICATED', 'a valid agent bearer token is required');
    }
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    if (body instanceof Error) return refuse(res, 400, 'INVALID_BODY', body.message);

    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      // Another agent's session is reported exactly like an unknown one.
      if (!session || session.agent !== agent || session.ending)
        return refuse(res, 404, 'SESSION_NOT_FOUND', 'unknown session');
      sessions.touch(session, res);
      if (req.method === 'GET') releaseOnceStreaming(res, session.gateway);
      return session.transport.handleRequest(req, res, body);
    }
    if (
      options.openStateless &&
      req.method === 'POST' &&
      !(await isLegacyRequest(await toWebRequest(req, body), body))
    ) {
      return stateless.serve(agent, req, res, body);
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      return refuse(
        res,
        400,
        'SESSION_REQUIRED',
        'send initialize first, then the Mcp-Session-Id it returns',
      );
    }
    const admission = sessions.admit(agent);
    if (!admission.ok) return refuse(res, admission.status, admission.code, admission.message);
    await startSession(options, sessions, { agent, initialize: body.params }, req, res, body);
  };
  const sweeping = setInterval(
    () => sessions.sweep(),
    Math.max(50, Math.min(limits.idleTimeoutMs / 4, 60_000)),
  );
  sweeping.unref();

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      options.logger.error('agent request failed', { error: String(error) });
      if (!res.headersSent)
        refuse(res, 502, 'UPSTREAM_UNAVAILABLE', 'the gateway could not serve this request');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const metrics =
    options.metricsPort === undefined
      ? undefined
      : await serveMetrics(sessions.registry, options.metricsHost ?? '127.0.0.1', options.metricsPort);
  return {
    url: `http://${host}:${port}${options.path}`,
    ...(metrics ? { metricsUrl: metrics.url } : {}),
    sessions: () => [...sessions.all().map((s) => s.gateway), ...stateless.gateways()],
    metrics: () => sessions.registry.metrics(),
    close: async () => {
      clearInterval(sweeping);
      await metrics?.close();
      await sessions.closeAll();
      await stateless.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Release the upstreams' held traffic once the agent's standalone GET stream is open (its
 * response head is written then): sent earlier, the SDK's transport drops a request towards
 * the agent, and the upstream waits for an answer that never comes.
 */
function releaseOnceStreaming(res: ServerResponse, gateway: Gateway): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const written = writeHead(...args);
    if (res.statusCode === 200) setImmediate(() => gateway.releaseHeld());
    return written;
  }) as typeof res.writeHead;
}

/**
 * The MCP 2026-07-28 side of the HTTP server: per agent, one gateway (opened on its first
 * request) and the SDK's per-request handler over it. The agent's name is handed to the
 * handler as its `authInfo`, so a round's `requestState` is bound to that agent.
 */
function statelessServing(options: AgentHttpOptions) {
  const handlers = new Map<string, Promise<{ gateway: Gateway; node: NodeMcpRequestHandler }>>();
  const opened: Gateway[] = [];
  const onerror = (error: Error) =>
    options.logger.warn('a stateless MCP exchange failed', { error: error.message });
  const handlerOf = (agent: HttpAgent) => {
    let found = handlers.get(agent.name);
    if (!found) {
      found = options.openStateless!(agent).then((gateway) => {
        opened.push(gateway);
        const handler = createMcpHandler(() => gateway.serverForRequest(), { legacy: 'reject', onerror });
        // The agent's subscriptions/listen streams hear of the upstreams' tool changes.
        gateway.onToolsChanged(() => handler.notify.toolsChanged());
        return { gateway, node: toNodeHandler(handler, { onerror }) };
      });
      // A failed start is tried again on the agent's next request.
      found.catch(() => handlers.delete(agent.name));
      handlers.set(agent.name, found);
    }
    return found;
  };
  return {
    serve: async (agent: HttpAgent, req: IncomingMessage, res: ServerResponse, body: unknown) => {
      const { node } = await handlerOf(agent);
      // The token itself never reaches the SDK: the agent's name is all a handler needs.
      Object.assign(req, { auth: { token: '', clientId: agent.name, scopes: [] } });
      await node(req, res, body);
    },
    gateways: () => [...opened],
    close: async () => {
      await Promise.all(opened.map((gateway) => gateway.close().catch(() => {})));
    },
  };
}

/** A listener of its own for `GET /metrics` (Prometheus text); anything else is 404. */
async function serveMetrics(registry: SessionTable['registry'], host: string, port: number) {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://metrics').pathname !== '/metrics') {
      return refuse(res, 404, 'ROUTE_NOT_FOUND', 'only GET /metrics is served here');
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
        res.end(text);
      },
      () => refuse(res, 500, 'METRICS_UNAVAILABLE', 'the metrics could not be collected'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function hostAllowed(req: IncomingMessage, allowed: readonly string[]): boolean {
  const hostname = (value: string) => {
    try {
      return new URL(value.includes('://') ? value : `http://${value}`).hostname;
    } catch {
      return undefined;
    }
  };
  const host = req.headers.host === undefined ? undefined : hostname(req.headers.host);
  if (host === undefined || !allowed.includes(host)) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const originHost = hostname(origin);
  return originHost !== undefined && allowed.includes(originHost);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return new Error('the request body is too large');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return new Error('the request body is not JSON');
  }
}

/** A JSON-RPC error body with the gateway's code in `data`, as MCP clients expect. */
function refuse(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32_000, message, data: { code } } }));
}
