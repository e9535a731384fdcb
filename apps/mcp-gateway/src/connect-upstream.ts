import {
  Client,
  type ClientCapabilities,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { clientCredentialsTokens, type TokenSource } from './client-credentials';
import type { UpstreamConnection } from './config';
import { GatewayError, isGatewayError } from './errors';
import { holdEarlyTraffic } from './hold-early-traffic';
import { upstreamCapabilitiesOf } from './pass-through';
import type { Upstream } from './upstream-call';
import { upstreamFetch } from './upstream-fetch';

/** What connecting needs besides the connection settings. */
export interface ConnectOptions {
  /** The agent's client capabilities, declared to the upstream as the gateway's own. */
  agentCapabilities?: ClientCapabilities;
  /** The values of the environment variables the settings name (`{ "env": … }`). */
  secrets?: Readonly<Record<string, string>>;
  /** The `fetch` of HTTP upstreams and token endpoints (default: the global one). */
  fetch?: typeof fetch;
  /** Names the upstream in errors (default `upstream`). */
  label?: string;
  /**
   * OAuth token sources shared between connections (one per agent session over HTTP), so
   * sessions reuse a cached token instead of each asking the token endpoint.
   */
  tokenSources?: Map<string, TokenSource>;
  /** How long connecting (the transport's start and MCP initialize) may take (default 30 000 ms). */
  connectTimeoutMs?: number;
}

/**
 * Connect to one upstream MCP server, declaring the agent's client capabilities (sampling,
 * elicitation, roots) as the gateway's own, since it forwards those requests. HTTP upstreams
 * get their headers and auth on every request; `transport: "auto"` tries Streamable HTTP
 * first and falls back to the legacy SSE transport, as the MCP SDK recommends.
 */
export async function connectUpstream(
  config: UpstreamConnection,
  connect: ConnectOptions = {},
): Promise<Upstream> {
  const label = connect.label ?? 'upstream';
  const newClient = () =>
    new Client(
      { name: 'vouch-mcp-gateway', version: '0.1.0' },
      { capabilities: upstreamCapabilitiesOf(connect.agentCapabilities) },
    );
  let releaseHeld: (() => void) | undefined;
  const attempt = async (unheld: Transport): Promise<Client> => {
    const client = newClient();
    const held = holdEarlyTraffic(unheld);
    const transport = held.transport;
    releaseHeld = held.release;
    const timeoutMs = connect.connectTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      // The legacy SSE transport waits for its `endpoint` event without a limit of its own.
      await Promise.race([
        client.connect(transport),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${timeoutMs} ms while connecting`)),
            timeoutMs,
          );
        }),
      ]);
      return client;
    } catch (cause) {
      await client.close().catch(() => {});
      // A refused token request says more than the transport's failure it caused.
      const auth = isGatewayError(cause)
        ? cause
        : isGatewayError((cause as Error)?.cause)
          ? (cause as Error).cause
          : null;
      if (auth) throw auth;
      throw new GatewayError(
        'UPSTREAM_UNAVAILABLE',
        `cannot connect to the MCP server ${label}: ${String(cause)}`,
        {
          cause,
        },
      );
    } finally {
      clearTimeout(timer);
    }
  };

  if (!('url' in config)) {
    const client = await attempt(
      new StdioClientTransport({
        command: config.command,
        args: config.args,
        ...(config.env ? { env: config.env } : {}),
        ...(config.cwd ? { cwd: config.cwd } : {}),
        // The upstream's stderr is for its operator, like ours; stdout is the protocol.
        stderr: 'inherit',
      }),
    );
    return { client, transport: 'stdio', releaseHeld: releaseHeld! };
  }

  const fetchImpl = httpFetchOf(config, connect);
  const url = new URL(config.url);
  const mode = config.transport ?? 'streamable-http';
  if (mode === 'sse') {
    const client = await attempt(new SSEClientTransport(url, { fetch: fetchImpl }));
    return { client, transport: 'http', releaseHeld: releaseHeld! };
  }
  try {
    const client = await attempt(new StreamableHTTPClientTransport(url, { fetch: fetchImpl }));
    return { client, transport: 'http', releaseHeld: releaseHeld! };
  } catch (error) {
    if (mode !== 'auto' || (isGatewayError(error) && error.code === 'UPSTREAM_AUTH_FAILED')) throw error;
    const client = await attempt(new SSEClientTransport(url, { fetch: fetchImpl }));
    return { client, transport: 'http', releaseHeld: releaseHeld! };
  }
}

/** The `fetch` of one HTTP upstream: its headers and auth, with secrets from the environment. */
function httpFetchOf(
  config: Extract<UpstreamConnection, { url: string }>,
  options: ConnectOptions,
): typeof fetch {
  const secret = (name: string): string => {
    const value = options.secrets?.[name];
    if (value === undefined) throw new GatewayError('CONFIG_INVALID', `${name} is not set`);
    return value;
  };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers ?? {})) {
    headers[name] = typeof value === 'string' ? value : secret(value.env);
  }
  let tokens: TokenSource | undefined;
  const auth = config.auth;
  if (auth?.type === 'bearer') {
    const token = secret(auth.token.env);
    tokens = { token: async () => token, invalidate: () => {} };
  } else if (auth?.type === 'client_credentials') {
    // The settings identify the client; the secret is named by its variable, never keyed by value.
    const key = JSON.stringify([
      auth.tokenUrl,
      auth.clientId,
      auth.clientSecret.env,
      auth.scope,
      auth.resource,
    ]);
    tokens =
      options.tokenSources?.get(key) ??
      clientCredentialsTokens(
        {
          tokenUrl: auth.tokenUrl,
          clientId: auth.clientId,
          clientSecret: secret(auth.clientSecret.env),
          ...(auth.scope ? { scope: auth.scope } : {}),
          ...(auth.resource ? { resource: auth.resource } : {}),
        },
        options.fetch ? { fetch: options.fetch } : {},
      );
    options.tokenSources?.set(key, tokens);
  }
  return upstreamFetch({
    headers,
    ...(tokens ? { tokens } : {}),
    refreshOn401: auth?.type === 'client_credentials',
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
