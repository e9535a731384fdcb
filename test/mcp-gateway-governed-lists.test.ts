import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type HttpUpstream, serveMcpOverHttp } from './helpers/mcp-http-upstream';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKEN = 'agent-token-for-governed-lists';
let database: Database;
let upstream: HttpUpstream;
let gateway: AgentHttpServer;
let agent: Client;
let auditor: VouchClient;
let approver: VouchClient;

function filesServer(): McpServer {
  const server = new McpServer({ name: 'files', version: '1.0.0' });
  server.registerResource('readme', 'file:///srv/readme', {}, async (uri) => ({
    contents: [{ uri: uri.href, text: 'readme' }],
  }));
  server.registerResource(
    'any',
    new ResourceTemplate('file:///srv/{name}', { list: undefined }),
    {},
    async (uri) => ({ contents: [{ uri: uri.href, text: uri.href }] }),
  );
  const table = completable(z.string(), (value) => ['accounts', 'audit'].filter((t) => t.startsWith(value)));
  server.registerPrompt('secret_query', { argsSchema: { table } }, ({ table }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `select * from ${table}` } }],
  }));
  server.registerPrompt('public_query', { argsSchema: { table } }, ({ table }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `count ${table}` } }],
  }));
  return server;
}

async function refusal(promise: Promise<unknown>): Promise<ExecutionMeta> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return ((error as McpError).data as Record<string, unknown>)[META_KEY] as ExecutionMeta;
}

const reached = (method: string) => upstream.methods.filter((m) => m === method).length;
const proposalsFor = async (toolName: string) =>
  (await auditor.proposals.list()).proposals.filter(
    (p) => 'proposal' in p && p.proposal.tool_name === toolName,
  );

beforeAll(async () => {
  upstream = await serveMcpOverHttp({ build: filesServer, transport: 'streamable-http' });
  const vouch = await inProcessVouch();
  ({ database } = vouch);
  const { secretOf, clientOf } = vouch;
  auditor = clientOf(await secretOf('user:auditor', ['auditor']));
  approver = clientOf(await secretOf('user:approver', ['approver']));
  // The operator declares listing prompts harmless: it runs without a human, still recorded.
  await clientOf(await secretOf('user:admin', ['admin'])).tools.register({
    server_id: 'files',
    tool_name: 'prompts/list',
    side_effect: 'read_only',
    allowed_environments: ['production'],
  });

  gateway = await startAgentGateway(
    vouch,
    {
      upstream: { url: upstream.url },
      serverId: 'files',
      environment: 'production',
      governed: [
        { method: 'resources/list' },
        { method: 'prompts/list' },
        { method: 'completion/complete', match: 'secret_*' },
      ],
    },
    [{ name: 'lister', token: TOKEN, apiKey: await secretOf('agent:lister', ['gateway']) }],
  );
  agent = await connectHttpAgent(gateway, TOKEN);
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await gateway?.close();
  await upstream?.close();
  await database?.close();
});

describe('governed list methods', () => {
  it('holds resources/list for approval, reaching no upstream, then lists once approved', async () => {
    const pending = await refusal(agent.listResources());
    expect(pending.status).toBe('approval_pending');
    expect(reached('resources/list')).toBe(0);

    await approver.approvals.approve(pending.approval!.request_id);
    const listed = await agent.listResources();
    expect(listed.resources.map((r) => r.uri)).toEqual(['file:///srv/readme']);
    expect(listed._meta?.[META_KEY]).toMatchObject({ status: 'executed', proposal_id: pending.proposal_id });
    expect(reached('resources/list')).toBe(1);
    const story = await auditor.proposals.get(pending.proposal_id!);
    expect(story.proposal).toMatchObject({
      tool_name: 'resources/list',
      server_id: 'files',
      target: { kind: 'mcp_server', id: 'files', env: 'production' },
    });
  });

  it('runs prompts/list the operator declared harmless without a human, and records it', async () => {
    const listed = await agent.listPrompts();
    expect(listed.prompts.map((p) => p.name).sort()).toEqual(['public_query', 'secret_query']);
    expect(listed._meta?.[META_KEY]).toMatchObject({ status: 'executed' });
    expect(await proposalsFor('prompts/list')).toHaveLength(1);
  });

  it('passes resources/templates/list, which it does not govern, through with no record', async () => {
    const { resourceTemplates } = await agent.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['file:///srv/{name}']);
    expect(await proposalsFor('resources/templates/list')).toEqual([]);
  });
});

describe('governed completion/complete', () => {
  const complete = (name: string) =>
    agent.complete({ ref: { type: 'ref/prompt', name }, argument: { name: 'table', value: 'a' } });

  it('holds a completion of a matching prompt for approval, reaching no upstream', async () => {
    const before = reached('completion/complete');
    const pending = await refusal(complete('secret_query'));
    expect(pending.status).toBe('approval_pending');
    expect(reached('completion/complete')).toBe(before);
    const story = await auditor.proposals.get(pending.proposal_id!);
    expect(story.proposal).toMatchObject({
      tool_name: 'completion/complete',
      target: { kind: 'mcp_completion', id: 'secret_query' },
      arguments: {
        ref: { type: 'ref/prompt', name: 'secret_query' },
        argument: { name: 'table', value: 'a' },
      },
    });
  });

  it('passes a completion of another prompt through with no record', async () => {
    const before = (await proposalsFor('completion/complete')).length;
    const { completion } = await complete('public_query');
    expect(completion.values).toEqual(['accounts', 'audit']);
    expect((await proposalsFor('completion/complete')).length).toBe(before);
  });
});
