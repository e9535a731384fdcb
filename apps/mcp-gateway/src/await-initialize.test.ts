import { InMemoryTransport, Client as V2Client } from '@modelcontextprotocol/client';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { awaitInitialize } from './await-initialize';
import { createGateway } from './gateway';
import { createExampleUpstream } from './testing/example-upstream';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('awaitInitialize', () => {
  describe('when an SDK 2.x client probes with server/discover first (versionNegotiation auto)', () => {
    it('answers the probe with an error, so the client initializes on 2025-11-25 and is served', async () => {
      const upstream = createExampleUpstream();
      const [upstreamSide, gatewayUpSide] = InMemoryTransport.createLinkedPair();
      await upstream.server.connect(upstreamSide);
      const upstreamClient = new V2Client({ name: 'gateway-upstream', version: '0.0.0' });
      await upstreamClient.connect(gatewayUpSide);

      const [agentSide, gatewaySide] = InMemoryTransport.createLinkedPair();
      const agent = new V2Client(
        { name: 'agent', version: '0.0.0' },
        // Bounded, so that without an answer to the probe this fails rather than hangs.
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 2_000 } } },
      );
      const connecting = agent.connect(agentSide);
      const { params, transport } = await awaitInitialize(gatewaySide);
      expect(params.clientInfo.name).toBe('agent');
      const vouch = createFakeVouch({ decide: () => 'allow' });
      const gateway = createGateway({
        upstream: { client: upstreamClient, transport: 'memory' },
        vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
        serverId: 'bank',
        environment: 'production',
      });
      await gateway.server.connect(transport);
      await connecting;
      closers.push(async () => {
        await agent.close();
        await gateway.close();
        await upstream.server.close();
      });
      expect(agent.getProtocolEra()).toBe('legacy');
      const result = await agent.callTool({ name: 'get_balance', arguments: { account: 'acct-1' } });
      expect(result.structuredContent).toEqual({ account: 'acct-1', balance: 100 });
    });
  });
});
