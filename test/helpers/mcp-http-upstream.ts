// Real MCP servers over HTTP for gateway tests, on loopback: the SDK's McpServer behind
// Streamable HTTP (stateful sessions) or the legacy HTTP+SSE transport, with an optional
// bearer check, and an OAuth 2 token endpoint for the client-credentials grant. Each records
// what reached it, so a test can read what the gateway really sent.
import { randomUUID } from 'node:crypto';
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** One HTTP request that reached a server, as it arrived. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
}

/** A running MCP server over HTTP. */
export interface HttpUpstream {
  url: string;
  /** Every request that reached it, refused or not. */
  seen: SeenRequest[];
  /** The JSON-RPC methods of the messages posted to it (requests and notifications), in order. */
  methods: string[];
  /** The McpServer of each session, newest last. */
  servers: McpServer[];
  close(): Promise<void>;
}

async function listen(server: HttpServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function closer(server: HttpServer): () => Promise<void> {
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}

/**
 * Serve `build()` (one McpServer per session) at `/mcp` over `transport`. With `authorize`,
 * a request it refuses gets 401 and reaches no MCP server.
 */
export async function serveMcpOverHttp(options: {
  build: () => McpServer;
  transport: 'streamable-http' | 'sse';
  authorize?: (req: IncomingMessage) => boolean;
}): Promise<HttpUpstream> {
  const seen: SeenRequest[] = [];
  const methods: string[] = [];
  const servers: McpServer[] = [];
  const note = (body: unknown) => {
    for (const message of Array.isArray(body) ? body : [body]) {
      const method = (message as { method?: unknown } | undefined)?.method;
      if (typeof method === 'string') methods.push(method);
    }
    return body;
  };
  const streamable = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://upstream');
    seen.push({ method: req.method ?? '', path: url.pathname, headers: req.headers });
    if (options.authorize && !options.authorize(req)) {
      res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      return;
    }
    if (options.transport === 'sse') {
      if (req.method === 'GET' && url.pathname === '/mcp') {
        const transport = new SSEServerTransport('/messages', res);
        sse.set(transport.sessionId, transport);
        const server = options.build();
        servers.push(server);
        await server.connect(transport);
        return;
      }
      const transport = sse.get(url.searchParams.get('sessionId') ?? '');
      if (req.method === 'POST' && url.pathname === '/messages' && transport) {
        await transport.handlePostMessage(req, res, note(JSON.parse(await readBody(req))));
        return;
      }
      // What an SSE-only server answers a Streamable HTTP client.
      res.writeHead(405).end();
      return;
    }
    if (url.pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const body = req.method === 'POST' ? note(JSON.parse(await readBody(req))) : undefined;
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? streamable.get(id) : undefined;
    if (existing) return existing.handleRequest(req, res, body);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        streamable.set(sessionId, transport);
      },
    });
    const server = options.build();
    servers.push(server);
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const base = await listen(http);
  return {
    url: `${base}/mcp`,
    seen,
    methods,
    servers,
    close: async () => {
      await Promise.all(servers.map((server) => server.close().catch(() => {})));
      await closer(http)();
    },
  };
}

/** A running OAuth 2 token endpoint (client-credentials grant only). */
export interface TokenEndpoint {
  url: string;
  /** Every token request: its Basic credentials as sent, and its form fields. */
  requests: { authorization: string | undefined; form: Record<string, string> }[];
  /** True for a token this endpoint issued and did not revoke. */
  valid(token: string | undefined): boolean;
  /** Revoke every token issued so far (an upstream then answers 401 to them). */
  revokeAll(): void;
  close(): Promise<void>;
}

/** Issue bearer tokens `tok-<n>` to the one client `clientId:clientSecret` (HTTP Basic). */
export async function serveTokenEndpoint(client: {
  clientId: string;
  clientSecret: string;
  expiresIn?: number;
}): Promise<TokenEndpoint> {
  const requests: TokenEndpoint['requests'] = [];
  const live = new Set<string>();
  // RFC 6749 §2.3.1: id and secret are form-urlencoded, then joined by ":" and base64-encoded.
  const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
  const authenticated = (header: string | undefined) => {
    const basic = /^Basic (\S+)$/.exec(header ?? '')?.[1];
    if (!basic) return false;
    const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':');
    return (
      id !== undefined &&
      secret !== undefined &&
      decode(id) === client.clientId &&
      decode(secret) === client.clientSecret
    );
  };
  const http = createServer((req, res) => {
    void readBody(req).then((text) => {
      const form = Object.fromEntries(new URLSearchParams(text));
      requests.push({ authorization: req.headers.authorization, form });
      res.setHeader('content-type', 'application/json');
      if (!authenticated(req.headers.authorization)) {
        res.writeHead(401).end(JSON.stringify({ error: 'invalid_client' }));
        return;
      }
      if (form.grant_type !== 'client_credentials') {
        res.writeHead(400).end(JSON.stringify({ error: 'unsupported_grant_type' }));
        return;
      }
      const token = `tok-${requests.length}`;
      live.add(token);
      res
        .writeHead(200)
        .end(
          JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: client.expiresIn ?? 3600 }),
        );
    });
  });
  const base = await listen(http);
  return {
    url: `${base}/oauth/token`,
    requests,
    valid: (token) => token !== undefined && live.has(token),
    revokeAll: () => live.clear(),
    close: closer(http),
  };
}

/** The bearer token of a request, if it carries one. */
export function bearerOf(req: IncomingMessage): string | undefined {
  return /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
}
