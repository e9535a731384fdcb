import { Client, InMemoryTransport, type Transport } from '@modelcontextprotocol/client';
import { createVouchClient } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { createGateway, type NamedUpstream } from '../gateway';

/** A named upstream server for {@link memoryGateway}, with its governed methods. */
export interface MemoryUpstream {
  name: string;
  /** An MCP server of either SDK line (1.x or 2.x): only its transport is used. */
  server: { connect(transport: Transport): Promise<void>; close(): Promise<void> };
  governed?: NamedUpstream['governed'];
}

/**
 * Agent <-> gateway <-> several upstreams, all over in-memory MCP transports, with a fake
 * Vouch that asks a human for everything. `close` stops all of it.
 */
export async function memoryGateway(upstreams: readonly MemoryUpstream[]) {
  const closers: (() => Promise<void>)[] = [];
  const named: NamedUpstream[] = [];
  for (const { name, server, governed } of upstreams) {
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'gateway', version: '0.0.0' });
    await client.connect(clientSide);
    closers.push(() => server.close());
    named.push({ name, upstream: { client, transport: 'memory' }, ...(governed ? { governed } : {}) });
  }
  const vouch = createFakeVouch({ decide: () => 'require_approval' });
  const gateway = createGateway({
    upstreams: named,
    vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
    environment: 'production',
  });
  const [down, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(down);
  const agent = new Client({ name: 'agent', version: '0.0.0' });
  await agent.connect(agentSide);
  return {
    agent,
    close: async () => {
      await agent.close();
      await gateway.close();
      for (const close of closers) await close();
    },
  };
}
