// How the gateway reaches HTTP upstreams: static headers (literal or from the environment),
// a bearer token from the environment, OAuth 2 client credentials (token fetched, cached,
// fetched again after a 401), and the legacy SSE transport, chosen or fallen back to. Every
// peer is real and on loopback: the SDK's McpServer over HTTP, and a token endpoint run here.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { connectUpstream, loadConfig, type TokenSource, type Upstream } from '@vouch/mcp-gateway';
import { afterEach, describe, expect, it } from 'vitest';
import { startGatewayAgent } from './helpers/mcp-gateway-process';
import {
  bearerOf,
  type HttpUpstream,
  serveMcpOverHttp,
  serveTokenEndpoint,
  type TokenEndpoint,
} from './helpers/mcp-http-upstream';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function echoServer(): McpServer {
  const server = new McpServer({ name: 'echo', version: '1.0.0' });
  server.registerTool('ping', {}, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  return server;
}

async function upstreamAt(options: Parameters<typeof serveMcpOverHttp>[0]): Promise<HttpUpstream> {
  const upstream = await serveMcpOverHttp(options);
  closers.push(() => upstream.close());
  return upstream;
}

async function tokenEndpoint(expiresIn?: number): Promise<TokenEndpoint> {
  const endpoint = await serveTokenEndpoint({
    clientId: 'vouch gw',
    clientSecret: 's3cr3t:value',
    expiresIn,
  });
  closers.push(() => endpoint.close());
  return endpoint;
}

/** Parse `upstream` as the bin does (secrets from `env`), then connect to it. */
async function connect(
  upstream: Record<string, unknown>,
  env: Record<string, string> = {},
  tokenSources?: Map<string, TokenSource>,
): Promise<Upstream> {
  const { config, upstreamSecrets } = await loadConfig({
    argv: [],
    env: { VOUCH_API_KEY: 'k', VOUCH_MCP_CONFIG: 'gateway.json', ...env },
    readFile: async () =>
      JSON.stringify({
        upstream,
        vouch: { url: 'http://127.0.0.1:1' },
        serverId: 'echo',
        environment: 'test',
      }),
  });
  const connected = await connectUpstream(config.upstream!, {
    secrets: upstreamSecrets,
    ...(tokenSources ? { tokenSources } : {}),
  });
  closers.push(() => connected.client.close());
  return connected;
}

const pong = async (upstream: Upstream) => (await upstream.client.listTools()).tools.map((tool) => tool.name);

describe('an HTTP upstream with headers and a bearer token', () => {
  it('sends the literal and environment headers and the bearer token on every request', async () => {
    const upstream = await upstreamAt({
      build: echoServer,
      transport: 'streamable-http',
      authorize: (req) => bearerOf(req) === 'env-token-123',
    });
    const connected = await connect(
      {
        url: upstream.url,
        headers: { 'X-Team': 'ops', 'X-Api-Key': { env: 'ECHO_API_KEY' } },
        auth: { type: 'bearer', token: { env: 'ECHO_TOKEN' } },
      },
      { ECHO_API_KEY: 'key-from-env', ECHO_TOKEN: 'env-token-123' },
    );
    expect(await pong(connected)).toEqual(['ping']);
    expect(upstream.seen.length).toBeGreaterThan(1);
    for (const request of upstream.seen) {
      expect(request.headers).toMatchObject({
        'x-team': 'ops',
        'x-api-key': 'key-from-env',
        authorization: 'Bearer env-token-123',
      });
    }
  });

  it('cannot connect without the token, and says so without the token or header values', async () => {
    const upstream = await upstreamAt({
      build: echoServer,
      transport: 'streamable-http',
      authorize: (req) => bearerOf(req) === 'the-right-one',
    });
    const error = await connect(
      {
        url: upstream.url,
        headers: { 'X-Api-Key': { env: 'K' } },
        auth: { type: 'bearer', token: { env: 'T' } },
      },
      { K: 'header-secret-value', T: 'a-wrong-token' },
    ).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(String((error as Error).message)).not.toMatch(/header-secret-value|a-wrong-token/);
  });
});

describe('an HTTP upstream behind OAuth 2 client credentials', () => {
  const oauth = (endpoint: TokenEndpoint) => ({
    type: 'client_credentials',
    tokenUrl: endpoint.url,
    clientId: 'vouch gw',
    clientSecret: { env: 'CLIENT_SECRET' },
    scope: 'mcp:tools',
  });

  /** An echo upstream that takes only the tokens its token endpoint issued. */
  const behindTokenEndpoint = async () => {
    const endpoint = await tokenEndpoint();
    const upstream = await upstreamAt({
      build: echoServer,
      transport: 'streamable-http',
      authorize: (req) => endpoint.valid(bearerOf(req)),
    });
    return { endpoint, upstream };
  };

  it('fetches one token with the client credentials and uses it for every request', async () => {
    const { endpoint, upstream } = await behindTokenEndpoint();
    const connected = await connect(
      { url: upstream.url, auth: oauth(endpoint) },
      { CLIENT_SECRET: 's3cr3t:value' },
    );
    expect(await pong(connected)).toEqual(['ping']);
    expect(await pong(connected)).toEqual(['ping']);
    expect(endpoint.requests).toHaveLength(1);
    expect(endpoint.requests[0]!.form).toEqual({ grant_type: 'client_credentials', scope: 'mcp:tools' });
    expect(upstream.seen.every((request) => request.headers.authorization === 'Bearer tok-1')).toBe(true);
  });

  it('fetches a new token when the upstream answers 401 to the cached one, and the request goes through', async () => {
    const { endpoint, upstream } = await behindTokenEndpoint();
    const connected = await connect(
      { url: upstream.url, auth: oauth(endpoint) },
      { CLIENT_SECRET: 's3cr3t:value' },
    );
    expect(await pong(connected)).toEqual(['ping']);
    endpoint.revokeAll();
    expect(await pong(connected)).toEqual(['ping']);
    expect(endpoint.requests).toHaveLength(2);
    expect(upstream.seen.at(-1)?.headers.authorization).toBe('Bearer tok-2');
  });

  it('shares one cached token between connections given the same token sources (one per agent session)', async () => {
    const { endpoint, upstream } = await behindTokenEndpoint();
    const shared = new Map<string, TokenSource>();
    const settings = { url: upstream.url, auth: oauth(endpoint) };
    const env = { CLIENT_SECRET: 's3cr3t:value' };
    expect(await pong(await connect(settings, env, shared))).toEqual(['ping']);
    expect(await pong(await connect(settings, env, shared))).toEqual(['ping']);
    expect(endpoint.requests).toHaveLength(1);
    // Without sharing, each connection asks for its own.
    expect(await pong(await connect(settings, env))).toEqual(['ping']);
    expect(endpoint.requests).toHaveLength(2);
  });

  it('refuses to start with UPSTREAM_AUTH_FAILED when the token endpoint refuses the client, never showing the secret', async () => {
    const endpoint = await tokenEndpoint();
    const upstream = await upstreamAt({ build: echoServer, transport: 'streamable-http' });
    const error = await connect(
      { url: upstream.url, auth: oauth(endpoint) },
      { CLIENT_SECRET: 'not-the-secret' },
    ).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_AUTH_FAILED' });
    expect((error as Error).message).toContain('invalid_client');
    expect((error as Error).message).not.toContain('not-the-secret');
    // Nothing reached the MCP server without a token.
    expect(upstream.seen).toHaveLength(0);
  });
});

describe('a legacy SSE upstream', () => {
  it('is reached with transport "sse"', async () => {
    const upstream = await upstreamAt({ build: echoServer, transport: 'sse' });
    expect(await pong(await connect({ url: upstream.url, transport: 'sse' }))).toEqual(['ping']);
    expect(upstream.seen[0]).toMatchObject({ method: 'GET', path: '/mcp' });
  });

  it('is reached with transport "auto" after Streamable HTTP is refused, with its headers on the stream too', async () => {
    const upstream = await upstreamAt({
      build: echoServer,
      transport: 'sse',
      authorize: (req) => bearerOf(req) === 'sse-token',
    });
    const connected = await connect(
      { url: upstream.url, transport: 'auto', auth: { type: 'bearer', token: { env: 'T' } } },
      { T: 'sse-token' },
    );
    expect(await pong(connected)).toEqual(['ping']);
    expect(upstream.seen.map((r) => `${r.method} ${r.path}`).slice(0, 2)).toEqual(['POST /mcp', 'GET /mcp']);
    expect(upstream.seen.every((r) => r.headers.authorization === 'Bearer sse-token')).toBe(true);
  });

  it('is not tried by "auto" when Streamable HTTP works', async () => {
    const upstream = await upstreamAt({ build: echoServer, transport: 'streamable-http' });
    expect(await pong(await connect({ url: upstream.url, transport: 'auto' }))).toEqual(['ping']);
    expect(upstream.seen[0]).toMatchObject({ method: 'POST', path: '/mcp' });
  });

  it('is not reached by the default (Streamable HTTP only)', async () => {
    const upstream = await upstreamAt({ build: echoServer, transport: 'sse' });
    const error = await connect({ url: upstream.url }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect(upstream.seen.some((r) => r.method === 'GET')).toBe(false);
  });
});

describe('the vouch-mcp-gateway bin', () => {
  it('reads the upstream secrets from its environment, uses them, and never logs them', async () => {
    const upstream = await upstreamAt({
      build: echoServer,
      transport: 'streamable-http',
      authorize: (req) =>
        bearerOf(req) === 'bin-token-0123456789' && req.headers['x-api-key'] === 'bin-header-secret',
    });
    const dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-auth-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const configPath = join(dir, 'gateway.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        upstreams: {
          echo: {
            url: upstream.url,
            headers: { 'X-Api-Key': { env: 'ECHO_KEY' } },
            auth: { type: 'bearer', token: { env: 'ECHO_TOKEN' } },
          },
        },
        // No Vouch answers here: listing works (discovery failures are logged), calls fail closed.
        vouch: { url: 'http://127.0.0.1:9' },
        environment: 'test',
      }),
    );
    const gateway = await startGatewayAgent({
      configPath,
      apiKey: 'vch_not_used_here',
      env: { ECHO_KEY: 'bin-header-secret', ECHO_TOKEN: 'bin-token-0123456789' },
    });
    closers.push(() => gateway.close());
    const { tools } = await gateway.agent.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['echo__ping']);
    expect(gateway.stderr()).not.toMatch(/bin-header-secret|bin-token-0123456789/);
  });
});

describe('a legacy SSE upstream that opens its stream and never names its endpoint', () => {
  it('is given up within the connect time limit, with UPSTREAM_UNAVAILABLE', async () => {
    const server = createServer((_request, response) => {
      // An event stream that stays open and silent: no `endpoint` event ever comes.
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(': open\n\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sse`;
    const error = await connectUpstream({ url, transport: 'sse' }, { connectTimeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: expect.stringContaining('200 ms') });
  });
});
