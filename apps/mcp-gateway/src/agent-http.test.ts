import { createHash } from 'node:crypto';
// The gateway is on SDK 2.x; the agent (and the upstream servers) stay on 1.x, as many are.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentHttpServer, serveAgentsOverHttp } from './agent-http';
import { createGateway } from './gateway';
import { createExampleUpstream } from './testing/example-upstream';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789' };

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An HTTP gateway for two agents; Vouch is a fake that notes the key of every request. */
async function setup() {
  const vouch = createFakeVouch({ decide: () => 'allow' });
  const keysSeen: string[] = [];
  const opened: string[] = [];
  const server: AgentHttpServer = await serveAgentsOverHttp({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    agents: [
      { name: 'alice', tokenSha256: sha256(TOKENS.alice) },
      { name: 'bob', tokenSha256: sha256(TOKENS.bob) },
    ],
    logger: { info() {}, warn() {}, error() {} },
    openSession: async (agent) => {
      opened.push(agent.name);
      const upstream = createExampleUpstream();
      const [upstreamSide, gatewaySide] = InMemoryTransport.createLinkedPair();
      await upstream.server.connect(upstreamSide);
      const client = new UpstreamClient({ name: 'gateway-upstream', version: '0.0.0' });
      await client.connect(gatewaySide);
      return createGateway({
        upstream: { client, transport: 'memory' },
        vouch: createVouchClient({
          baseUrl: 'http://vouch.test',
          apiKey: `vouch-key-of-${agent.name}`,
          fetch: (input, init) => {
            keysSeen.push(new Headers(init?.headers).get('authorization') ?? '');
            return vouch.fetch(input, init);
          },
        }),
        serverId: 'bank',
        environment: 'production',
      });
    },
  });
  closers.push(() => server.close());
  const connect = async (token: string) => {
    const agent = new Client({ name: 'agent', version: '0.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await agent.connect(transport);
    closers.unshift(() => agent.close());
    return { agent, sessionId: transport.sessionId! };
  };
  const post = (headers: Record<string, string>, body: unknown = initialize) =>
    fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(body),
    });
  return { server, vouch, keysSeen, opened, connect, post };
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
};

describe('serveAgentsOverHttp', () => {
  describe('when an agent presents its token', () => {
    it('serves the upstream tools and proposes every call with that agent’s own Vouch key', async () => {
      const { connect, keysSeen, vouch } = await setup();
      const { agent } = await connect(TOKENS.alice);
      const result = await agent.callTool({ name: 'get_balance', arguments: { account: 'acct-1' } });
      expect(result.structuredContent).toEqual({ account: 'acct-1', balance: 100 });
      expect(vouch.observations).toHaveLength(1);
      expect(new Set(keysSeen)).toEqual(new Set(['Bearer vouch-key-of-alice']));
    });
  });

  describe('when the token is missing or wrong', () => {
    it('answers 401 with a machine-readable code and opens no session', async () => {
      const { post, opened } = await setup();
      for (const headers of [
        {} as Record<string, string>,
        { authorization: 'Bearer not-a-token' },
        { authorization: TOKENS.alice },
      ]) {
        const response = await post(headers);
        expect(response.status).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe('Bearer');
        expect(await response.json()).toMatchObject({ error: { data: { code: 'UNAUTHENTICATED' } } });
      }
      expect(opened).toEqual([]);
    });
  });

  describe('when one agent uses another agent’s session', () => {
    it('answers 404 as for an unknown session', async () => {
      const { connect, post } = await setup();
      const { sessionId } = await connect(TOKENS.alice);
      const response = await post(
        {
          authorization: `Bearer ${TOKENS.bob}`,
          'mcp-session-id': sessionId,
          'mcp-protocol-version': '2025-06-18',
        },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      );
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { data: { code: 'SESSION_NOT_FOUND' } } });
    });
  });

  describe('when the Host header is not a loopback name (DNS rebinding)', () => {
    it('answers 403 before looking at the token', async () => {
      const { server, opened } = await setup();
      const { request } = await import('node:http');
      const url = new URL(server.url);
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: { host: 'evil.example.com', authorization: `Bearer ${TOKENS.alice}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(initialize));
      });
      expect(status).toBe(403);
      expect(opened).toEqual([]);
    });
  });
});
