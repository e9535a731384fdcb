// What an upstream sends while the gateway starts (before it is wired to the agent) still
// reaches the agent: a tools/list_changed, and a roots/list whose answer the upstream awaits.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ListRootsRequestSchema,
  ListRootsResultSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from './gateway';
import { holdEarlyTraffic } from './hold-early-traffic';
import { upstreamCapabilitiesOf } from './pass-through';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/**
 * An upstream (SDK 1.x) that, once initialized, adds a tool (so says its tools changed) and
 * asks the client for its roots; `roots` resolves with what it was told.
 */
function startingUpstream() {
  const server = new McpServer({ name: 'eager', version: '1.0.0' });
  server.registerTool('first', {}, async () => ({ content: [{ type: 'text', text: 'first' }] }));
  let answered: (roots: unknown) => void = () => {};
  const roots = new Promise<unknown>((resolve) => (answered = resolve));
  server.server.oninitialized = () => {
    server.registerTool('second', {}, async () => ({ content: [{ type: 'text', text: 'second' }] }));
    server.server.request({ method: 'roots/list' }, ListRootsResultSchema).then(answered, answered);
  };
  return { server, roots };
}

/** The gateway's start, as `openGateway` runs it: connect (holding), build, then serve the agent. */
async function start(options: { hold: boolean }) {
  const upstream = startingUpstream();
  const [upstreamSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  await upstream.server.connect(upstreamSide);
  const agentCapabilities = { roots: { listChanged: true } };
  const client = new UpstreamClient(
    { name: 'gateway', version: '0.0.0' },
    { capabilities: upstreamCapabilitiesOf(agentCapabilities) },
  );
  const held = options.hold ? holdEarlyTraffic(gatewaySide) : null;
  await client.connect(held?.transport ?? gatewaySide);
  const vouch = createFakeVouch({ decide: () => 'allow' });
  const gateway = createGateway({
    upstream: { client, transport: 'memory', ...(held ? { releaseHeld: held.release } : {}) },
    vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
    serverId: 'eager',
    environment: 'production',
  });
  const agent = new Client({ name: 'agent', version: '0.0.0' }, { capabilities: agentCapabilities });
  const changed: string[] = [];
  agent.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    changed.push(n.method);
  });
  agent.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work/sub' }] }));
  const [down, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(down);
  await agent.connect(agentSide as never);
  closers.push(async () => {
    await agent.close();
    await gateway.close();
    await upstream.server.close();
  });
  return { agent, changed, roots: upstream.roots };
}

describe('holdEarlyTraffic', () => {
  describe('when the upstream asks for roots and changes its tools while the gateway starts', () => {
    it('answers the upstream with the agent’s roots and tells the agent its tools changed', async () => {
      const { agent, changed, roots } = await start({ hold: true });
      expect(await roots).toEqual({ roots: [{ uri: 'file:///work/sub' }] });
      await agent.listTools();
      expect(changed).toEqual(['notifications/tools/list_changed']);
    });
  });

  describe('when nothing holds it (as before)', () => {
    it('loses both: the roots request fails and the agent hears of no change', async () => {
      const { agent, changed, roots } = await start({ hold: false });
      expect(await roots).toBeInstanceOf(Error);
      await agent.listTools();
      expect(changed).toEqual([]);
    });
  });
});
