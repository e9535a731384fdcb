import { createHash } from 'node:crypto';
// The gateway is on SDK 2.x; the agent (and the upstream servers) stay on 1.x, as many are.
import {
  InMemoryTransport,
  Client as UpstreamClient,
  Client as V2Client,
  StreamableHTTPClientTransport as V2HttpTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentHttpServer, serveAgentsOverHttp } from './agent-http';
import type { SessionLimits } from './agent-sessions';
import { createGateway } from './gateway';
import { createExampleUpstream } from './testing/example-upstream';
import { META_KEY } from './tool-results';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const TOKENS = { alice: 'alice-token-0123456789', bob: 'bob-token-0123456789' };

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** The example upstream and the gateway's (SDK 2.x) client connected to it in memory. */
async function exampleUpstreamClient(onUpstreamClose?: () => void) {
  const upstream = createExampleUpstream();
  if (onUpstreamClose) upstream.server.onclose = onUpstreamClose;
  const [upstreamSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  await upstream.server.connect(upstreamSide);
  const client = new UpstreamClient({ name: 'gateway-upstream', version: '0.0.0' });
  await client.connect(gatewaySide);
  return { upstream, client };
}

/** An HTTP gateway for two agents; Vouch is a fake that notes the key of every request. */
async function setup(sessionLimits?: Partial<SessionLimits>) {
  const vouch = createFakeVouch({ decide: () => 'allow' });
  const keysSeen: string[] = [];
  const opened: string[] = [];
  /** Per session, in order: whether its upstream connection was closed (its process reaped). */
  const upstreamsClosed: boolean[] = [];
  const server: AgentHttpServer = await serveAgentsOverHttp({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    agents: [
      { name: 'alice', tokenSha256: sha256(TOKENS.alice) },
      { name: 'bob', tokenSha256: sha256(TOKENS.bob) },
    ],
    logger: { info() {}, warn() {}, error() {} },
    ...(sessionLimits ? { sessionLimits, metricsPort: 0 } : {}),
    openSession: async (agent) => {
      opened.push(agent.name);
      const index = upstreamsClosed.push(false) - 1;
      const { client } = await exampleUpstreamClient(() => {
        upstreamsClosed[index] = true;
      });
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
  const metric = async (name: string) => {
    const text = await (await fetch(server.metricsUrl!)).text();
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  return { server, vouch, keysSeen, opened, connect, post, upstreamsClosed, metric };
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

/** Wait (bounded) until `done` holds; the session sweep runs on its own timer. */
async function eventually(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100 && !(await done()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('serveAgentsOverHttp sessions', () => {
  describe('when an agent leaves without ending its session (the SDK’s close sends no DELETE)', () => {
    it('closes the idle session, its gateway and its upstream connection, and counts it', async () => {
      const { connect, server, upstreamsClosed, metric } = await setup({ idleTimeoutMs: 100 });
      const { agent } = await connect(TOKENS.alice);
      expect(await metric('vouch_mcp_gateway_sessions_open')).toBe(1);
      await agent.close();
      await eventually(() => server.sessions().length === 0 && upstreamsClosed[0] === true);
      expect(server.sessions()).toHaveLength(0);
      expect(upstreamsClosed).toEqual([true]);
      expect(await metric('vouch_mcp_gateway_sessions_open')).toBe(0);
      expect(await metric('vouch_mcp_gateway_sessions_closed_total{reason="idle"}')).toBe(1);
    });
  });

  describe('when an agent opens more sessions than its cap', () => {
    it('closes its least recently used idle session, and refuses when none is idle', async () => {
      const { connect, post, server, upstreamsClosed, metric } = await setup({ maxPerAgent: 2 });
      const first = await connect(TOKENS.alice);
      await connect(TOKENS.alice);
      // Both are in use (each client holds its GET stream open): a third is refused, nothing opened.
      const refused = await post({ authorization: `Bearer ${TOKENS.alice}` });
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ error: { data: { code: 'SESSION_LIMIT_REACHED' } } });
      expect(upstreamsClosed).toHaveLength(2);
      // The first is left behind: the next session takes its place.
      await first.agent.close();
      await eventually(async () => (await post({ authorization: `Bearer ${TOKENS.alice}` })).status === 200);
      await eventually(() => upstreamsClosed[0] === true);
      expect(upstreamsClosed[0]).toBe(true);
      expect(server.sessions()).toHaveLength(2);
      expect(await metric('vouch_mcp_gateway_sessions_closed_total{reason="evicted"}')).toBe(1);
      // The refusal above, and any while the left session's stream was still closing.
      expect(await metric('vouch_mcp_gateway_sessions_refused_total')).toBeGreaterThanOrEqual(1);
    });
  });

  describe('when all agents together reach the total cap', () => {
    it('refuses another agent’s new session with 503 and opens nothing', async () => {
      const { connect, post, opened } = await setup({ maxTotal: 1 });
      await connect(TOKENS.alice);
      const refused = await post({ authorization: `Bearer ${TOKENS.bob}` });
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ error: { data: { code: 'SESSION_LIMIT_REACHED' } } });
      expect(opened).toEqual(['alice']);
    });
  });
});

/**
 * Two gateway instances behind a round-robin "load balancer" (the agent's fetch), sharing the
 * round key and one Vouch; each instance has its own upstream, as separate processes would.
 */
async function statelessFleet() {
  const vouch = createFakeVouch({
    decide: (proposal) => (proposal.tool_name === 'close_account' ? 'require_approval' : 'allow'),
  });
  const upstreams: ReturnType<typeof createExampleUpstream>[] = [];
  const instance = () =>
    serveAgentsOverHttp({
      host: '127.0.0.1',
      port: 0,
      path: '/mcp',
      agents: [{ name: 'alice', tokenSha256: sha256(TOKENS.alice) }],
      logger: { info() {}, warn() {}, error() {} },
      openSession: () => Promise.reject(new Error('this test speaks 2026-07-28 only')),
      openStateless: async () => {
        const { upstream, client } = await exampleUpstreamClient();
        upstreams.push(upstream);
        return createGateway({
          upstream: { client, transport: 'memory' },
          vouch: createVouchClient({
            baseUrl: 'http://vouch.test',
            apiKey: 'vouch-key-of-alice',
            fetch: vouch.fetch,
          }),
          serverId: 'bank',
          environment: 'production',
          requestStateKey: 'a shared key of at least thirty-two bytes',
          approvalPrompt: { recheckWaitMs: 0 },
        });
      },
    });
  const servers = [await instance(), await instance()];
  closers.push(async () => {
    for (const server of servers) await server.close();
  });
  const hits: number[] = [];
  const agent = async (elicit: ((message: string) => 'accept' | 'decline') | null) => {
    let next = 0;
    const balanced: typeof fetch = (input, init) => {
      const i = next++ % servers.length;
      const body = typeof init?.body === 'string' ? init.body : '';
      if (body.includes('"tools/call"')) hits.push(i);
      return fetch(new URL(servers[i]!.url), init);
    };
    const client = new V2Client(
      { name: 'agent-2026', version: '0.0.0' },
      {
        capabilities: elicit ? { elicitation: { form: {} } } : {},
        versionNegotiation: { mode: { pin: '2026-07-28' } },
      },
    );
    if (elicit) {
      client.setRequestHandler('elicitation/create', async (request) => ({
        action: elicit(String(request.params.message)),
        content: {},
      }));
    }
    await client.connect(
      new V2HttpTransport(new URL(servers[0]!.url), {
        fetch: balanced,
        requestInit: { headers: { authorization: `Bearer ${TOKENS.alice}` } },
      }),
    );
    closers.unshift(() => client.close());
    return client;
  };
  const ran = () => upstreams.flatMap((upstream) => upstream.calls).filter((c) => c.tool === 'close_account');
  return { vouch, agent, hits, ran, upstreams };
}

describe('serveAgentsOverHttp to an MCP 2026-07-28 client', () => {
  describe('when a call waits for a human approval and the user accepts once it is approved', () => {
    it('asks as an input_required round, and the retry, on another instance, runs the call once', async () => {
      const { vouch, agent, hits, ran } = await statelessFleet();
      const messages: string[] = [];
      const client = await agent((message) => {
        messages.push(message);
        // An approver approves in Vouch the request the prompt names, then the user accepts.
        vouch.approve(/Approval request: (\S+)/.exec(message)![1]!);
        return 'accept';
      });
      const result = await client.callTool({ name: 'close_account', arguments: { account: 'acct-1' } });
      expect(messages).toHaveLength(1);
      expect(messages[0]).toContain('close_account needs a human approval in Vouch');
      expect(result._meta?.[META_KEY]).toMatchObject({ status: 'executed' });
      expect(ran()).toEqual([{ tool: 'close_account', arguments: { account: 'acct-1' } }]);
      // The first round and the retry reached different instances.
      expect(new Set(hits)).toEqual(new Set([0, 1]));
      expect(vouch.proposals.size).toBe(1);
    });
  });

  describe('when the user accepts but nobody approved in Vouch', () => {
    it('does not run the call: the answer is not an approval', async () => {
      const { agent, ran, vouch } = await statelessFleet();
      const client = await agent(() => 'accept');
      const result = await client.callTool({ name: 'close_account', arguments: { account: 'acct-2' } });
      expect(result._meta?.[META_KEY]).toMatchObject({ status: 'approval_pending' });
      expect(ran()).toEqual([]);
      expect(vouch.proposals.size).toBe(1);
    });
  });

  describe('when the client did not declare elicitation', () => {
    it('answers approval_pending in _meta at once, the documented fallback, and runs nothing', async () => {
      const { agent, ran } = await statelessFleet();
      const client = await agent(null);
      const result = await client.callTool({ name: 'close_account', arguments: { account: 'acct-1' } });
      expect(result._meta?.[META_KEY]).toMatchObject({ status: 'approval_pending' });
      expect(ran()).toEqual([]);
    });
  });

  describe('when the client listens and an upstream’s tools change', () => {
    it('tells the subscriptions/listen stream', async () => {
      const { agent, upstreams } = await statelessFleet();
      const client = await agent(null);
      const heard = new Promise<string>((resolve) =>
        client.setNotificationHandler('notifications/tools/list_changed', (n) => resolve(n.method)),
      );
      const subscription = await client.listen({ toolsListChanged: true });
      closers.unshift(async () => subscription.close());
      for (const upstream of upstreams) await upstream.server.sendToolListChanged();
      expect(await heard).toBe('notifications/tools/list_changed');
    });
  });
});
