// The gateway is on SDK 2.x; the agent (and the upstream servers) stay on 1.x, as many are.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  CreateMessageRequestSchema,
  CreateMessageResultSchema,
  ElicitRequestSchema,
  ElicitResultSchema,
  ListRootsRequestSchema,
  ListRootsResultSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createGateway } from './gateway';
import { agentCapabilitiesOf, upstreamCapabilitiesOf } from './pass-through';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An upstream with every MCP feature the gateway passes through, and what it saw. */
function richUpstream() {
  const seen = { subscribed: [] as string[], levels: [] as string[], cancelled: 0 };
  const server = new McpServer(
    { name: 'rich', version: '1.0.0' },
    { capabilities: { logging: {}, completions: {}, resources: { subscribe: true, listChanged: true } } },
  );
  server.registerResource('readme', 'docs://readme', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'read me' }],
  }));
  server.registerResource(
    'user',
    new ResourceTemplate('users://{id}', {
      list: undefined,
      complete: { id: (value) => ['alice', 'albert', 'bob'].filter((id) => id.startsWith(value)) },
    }),
    {},
    async (uri, { id }) => ({ contents: [{ uri: uri.href, text: `user ${String(id)}` }] }),
  );
  server.registerPrompt('greet', { argsSchema: { name: z.string() } }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }],
  }));
  server.server.setRequestHandler(
    z.object({ method: z.literal('resources/subscribe'), params: z.object({ uri: z.string() }) }),
    async (request) => {
      seen.subscribed.push(request.params.uri);
      // Tell the subscriber at once, as a server does when the resource changes.
      await server.server.sendResourceUpdated({ uri: request.params.uri });
      return {};
    },
  );
  server.server.setRequestHandler(
    z.object({ method: z.literal('logging/setLevel'), params: z.object({ level: z.string() }) }),
    async (request) => {
      seen.levels.push(request.params.level);
      await server.server.sendLoggingMessage({ level: 'warning', data: 'level changed' });
      return {};
    },
  );
  // Server-to-client requests: the upstream asks the client for sampling, elicitation, roots.
  const ask = {
    sample: () =>
      server.server.request(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 },
        },
        CreateMessageResultSchema,
      ),
    elicit: () =>
      server.server.request(
        {
          method: 'elicitation/create',
          params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } },
        },
        ElicitResultSchema,
      ),
    roots: () => server.server.request({ method: 'roots/list' }, ListRootsResultSchema),
  };
  return { server, seen, ask };
}

async function setup(agentCapabilities: Record<string, unknown>) {
  const upstream = richUpstream();
  const [upstreamSide, gatewayUpSide] = InMemoryTransport.createLinkedPair();
  await upstream.server.connect(upstreamSide);
  const upstreamClient = new UpstreamClient(
    { name: 'gateway-upstream', version: '0.0.0' },
    { capabilities: upstreamCapabilitiesOf(agentCapabilities) },
  );
  await upstreamClient.connect(gatewayUpSide);
  const vouch = createFakeVouch({ decide: () => 'allow' });
  const gateway = createGateway({
    upstream: { client: upstreamClient, transport: 'memory' },
    vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
    serverId: 'rich',
    environment: 'production',
  });
  const [gatewayDownSide, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(gatewayDownSide);
  const agent = new Client({ name: 'agent', version: '0.0.0' }, { capabilities: agentCapabilities });
  if ('sampling' in agentCapabilities) {
    agent.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: 'assistant',
      content: { type: 'text', text: 'sampled by the agent' },
      model: 'agent-model',
    }));
    agent.setRequestHandler(ElicitRequestSchema, async () => ({
      action: 'accept',
      content: { name: 'Ada' },
    }));
    agent.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work' }] }));
  }
  await agent.connect(agentSide);
  closers.push(async () => {
    await agent.close();
    await gateway.close();
    await upstream.server.close();
  });
  return { agent, upstream, vouch };
}

const ALL_CLIENT_FEATURES = { sampling: {}, elicitation: {}, roots: { listChanged: true } };

describe('passing MCP through the gateway', () => {
  describe('when the agent initializes', () => {
    it('is offered what the upstream offers, and tools', async () => {
      const { agent } = await setup({});
      expect(agent.getServerCapabilities()).toMatchObject({
        logging: {},
        completions: {},
        resources: { subscribe: true, listChanged: true },
        prompts: {},
        tools: { listChanged: true },
      });
    });

    it('offers the upstream exactly the client capabilities the agent declared', () => {
      expect(upstreamCapabilitiesOf({ sampling: {}, roots: { listChanged: true }, tasks: {} })).toEqual({
        sampling: {},
        roots: { listChanged: true },
      });
      expect(agentCapabilitiesOf({ tasks: {}, logging: {} })).toEqual({
        logging: {},
        tools: { listChanged: true },
      });
    });
  });

  describe('when the agent uses resources, prompts and completion', () => {
    it('lists and reads resources and templates, gets prompts and completes arguments from the upstream', async () => {
      const { agent } = await setup({});
      const { resources } = await agent.listResources();
      expect(resources.map((r) => r.uri)).toEqual(['docs://readme']);
      const read = await agent.readResource({ uri: 'docs://readme' });
      expect(read.contents).toEqual([{ uri: 'docs://readme', text: 'read me' }]);
      const { resourceTemplates } = await agent.listResourceTemplates();
      expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['users://{id}']);
      expect((await agent.readResource({ uri: 'users://alice' })).contents[0]).toMatchObject({
        text: 'user alice',
      });
      const { prompts } = await agent.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(['greet']);
      const prompt = await agent.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
      expect(prompt.messages[0]!.content).toEqual({ type: 'text', text: 'Hello Ada' });
      const completion = await agent.complete({
        ref: { type: 'ref/resource', uri: 'users://{id}' },
        argument: { name: 'id', value: 'al' },
      });
      expect(completion.completion.values).toEqual(['alice', 'albert']);
    });

    it('subscribes upstream and delivers the update notification to the agent', async () => {
      const { agent, upstream } = await setup({});
      const updated = new Promise<string>((resolve) =>
        agent.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
      );
      await agent.subscribeResource({ uri: 'docs://readme' });
      expect(upstream.seen.subscribed).toEqual(['docs://readme']);
      expect(await updated).toBe('docs://readme');
    });

    it('sets the upstream log level and delivers its log messages', async () => {
      const { agent, upstream } = await setup({});
      const message = new Promise<LoggingMessageNotification['params']>((resolve) =>
        agent.setNotificationHandler(LoggingMessageNotificationSchema, (n) => resolve(n.params)),
      );
      await agent.setLoggingLevel('debug');
      expect(upstream.seen.levels).toEqual(['debug']);
      expect(await message).toMatchObject({ level: 'warning', data: 'level changed' });
    });
  });

  describe('when the upstream asks the client for something', () => {
    it('forwards sampling, elicitation and roots requests to the agent and its answers back', async () => {
      const { upstream } = await setup(ALL_CLIENT_FEATURES);
      expect(await upstream.ask.sample()).toMatchObject({
        model: 'agent-model',
        content: { text: 'sampled by the agent' },
      });
      expect(await upstream.ask.elicit()).toEqual({ action: 'accept', content: { name: 'Ada' } });
      expect(await upstream.ask.roots()).toEqual({ roots: [{ uri: 'file:///work' }] });
    });

    it('refuses what the agent did not declare, as the agent would', async () => {
      const { upstream } = await setup({});
      await expect(upstream.ask.sample()).rejects.toThrow();
    });
  });
});
