// Governed methods against the real app: a `resources/read` the gateway's configuration
// governs is a proposal in the ledger with an approval and a recorded outcome; one it does not
// govern leaves no record; a refused one never reaches the upstream. The upstream is a real
// MCP server (the SDK's McpServer) that counts what it served.

// The gateway is on SDK 2.x; the agent and the upstream server stay on 1.x, as many are.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { createApp, createKeyStore } from '@vouch/api';
import { createVouchClient, type Role, type VouchClient } from '@vouch/client';
import { createLedger, type Database, migrate, OPERATOR_ACTOR, openDatabase } from '@vouch/ledger';
import { createGateway, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SECRET = 'file:///srv/secrets/api-key';
const README = 'file:///srv/docs/readme';

let database: Database;
let agent: Client;
let auditor: VouchClient;
let approver: VouchClient;
const reads: string[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await openDatabase();
  await migrate(database);
  const ledger = createLedger(database);
  const keys = createKeyStore(ledger);
  const app = createApp({ ledger, keys });
  const clientAs = async (identity: string, roles: Role[]) => {
    const { secret } = await keys.create({
      identity,
      roles,
      scopes: [],
      environments: null,
      logs: null,
      createdBy: OPERATOR_ACTOR,
    });
    return createVouchClient({
      baseUrl: 'http://vouch.test',
      apiKey: secret,
      fetch: async (input, init) => app.request(input instanceof URL ? input.href : input, init),
    });
  };
  auditor = await clientAs('user:auditor', ['auditor']);
  approver = await clientAs('user:approver', ['approver']);

  const upstream = new McpServer({ name: 'files', version: '1.0.0' }, { capabilities: { resources: {} } });
  for (const uri of [SECRET, `${SECRET}-2`, README]) {
    upstream.registerResource(uri, uri, { mimeType: 'text/plain' }, async (url) => {
      reads.push(url.href);
      return { contents: [{ uri: url.href, text: `contents of ${url.href}` }] };
    });
  }
  upstream.registerTool('list_files', {}, async () => ({ content: [{ type: 'text', text: 'readme' }] }));
  const [upstreamSide, gatewayUpSide] = InMemoryTransport.createLinkedPair();
  await upstream.connect(upstreamSide);
  const upstreamClient = new UpstreamClient({ name: 'gateway-upstream', version: '0.0.0' });
  await upstreamClient.connect(gatewayUpSide);

  const gateway = createGateway({
    upstream: { client: upstreamClient, transport: 'memory' },
    vouch: await clientAs('agent:files-gateway', ['gateway']),
    serverId: 'files',
    environment: 'production',
    governed: [{ method: 'resources/read', match: 'file:///srv/secrets/**' }],
  });
  await gateway.discover();
  const [gatewaySide, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(gatewaySide);
  agent = new Client({ name: 'agent', version: '0.0.0' });
  await agent.connect(agentSide);
  closers.push(
    () => agent.close(),
    () => gateway.close(),
    () => upstream.close(),
  );
});

afterAll(async () => {
  for (const close of closers) await close();
  await database?.close();
});

async function refusal(promise: Promise<unknown>): Promise<{ error: McpError; meta: ExecutionMeta }> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  const data = (error as McpError).data as Record<string, unknown>;
  return { error: error as McpError, meta: data[META_KEY] as ExecutionMeta };
}

async function readsInLedger(): Promise<Array<{ target: string; outcome: string }>> {
  const { proposals } = await auditor.proposals.list();
  return proposals
    .flatMap((p) => ('proposal' in p && p.proposal.tool_name === 'resources/read' ? [p] : []))
    .map((p) => ({ target: String(p.proposal.target.id), outcome: p.outcome }));
}

describe('the MCP gateway with governed resources/read, on the real app', () => {
  it('registers resources/read with Vouch as a discovered tool (irreversible until an operator says otherwise)', async () => {
    const tools = await auditor.tools.list();
    expect(tools.find((t) => t.tool_name === 'resources/read')).toMatchObject({
      server_id: 'files',
      side_effect: 'irreversible',
      source: 'discovery',
    });
  });

  it('holds a governed read for approval, then reads once and records it in the ledger', async () => {
    const pending = await refusal(agent.readResource({ uri: SECRET }));
    expect(pending.error.code).toBe(ErrorCode.InvalidRequest);
    expect(pending.meta.status).toBe('approval_pending');
    expect(reads).toEqual([]);

    await approver.approvals.approve(pending.meta.approval!.request_id);
    const result = await agent.readResource({ uri: SECRET });
    expect(result.contents).toEqual([{ uri: SECRET, text: `contents of ${SECRET}` }]);
    expect(result._meta?.[META_KEY]).toMatchObject({
      status: 'executed',
      proposal_id: pending.meta.proposal_id,
    });
    expect(reads).toEqual([SECRET]);

    const story = await auditor.proposals.get(pending.meta.proposal_id!);
    expect(story.proposal).toMatchObject({
      action: 'files.resources/read',
      tool_name: 'resources/read',
      requester: 'agent:files-gateway',
      target: { kind: 'mcp_resource', id: SECRET, env: 'production' },
      arguments: { uri: SECRET },
    });
    expect(story.observation).toMatchObject({ outcome: 'succeeded', tool_error: false });
  });

  it('passes an ungoverned read through with nothing in the ledger', async () => {
    const before = await readsInLedger();
    const result = await agent.readResource({ uri: README });
    expect(result.contents[0]).toMatchObject({ uri: README });
    expect(result._meta?.[META_KEY]).toBeUndefined();
    expect(reads.at(-1)).toBe(README);
    expect(await readsInLedger()).toEqual(before);
  });

  it('answers a read whose approval was denied with an MCP error, and the upstream is never asked', async () => {
    const uri = `${SECRET}-2`;
    const pending = await refusal(agent.readResource({ uri }));
    await approver.approvals.deny(pending.meta.approval!.request_id);
    const refused = await refusal(agent.readResource({ uri }));
    expect(refused.error.code).toBe(ErrorCode.InvalidRequest);
    expect(refused.error.message).toContain('the approver denied it');
    expect(refused.meta).toMatchObject({ status: 'not_authorized', code: 'APPROVAL_DENIED' });
    expect(reads).not.toContain(uri);
    expect(await readsInLedger()).toContainEqual({ target: uri, outcome: expect.any(String) });
  });
});
