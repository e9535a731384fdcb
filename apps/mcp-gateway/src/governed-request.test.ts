// The gateway is on SDK 2.x; the agent (and the upstream servers) stay on 1.x, as many are.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient, type Verdict } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createGateway } from './gateway';
import { type GovernedMethod, governedMatch, spellingsOf } from './governed-request';
import { type ExecutionMeta, META_KEY } from './tool-results';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const SECRET = 'file:///secrets/api-key';
const PUBLIC = 'file:///public/readme';

/** A real MCP server with resources and a prompt, counting what reached it. */
function fileServer() {
  const reads: string[] = [];
  const prompts: string[] = [];
  const server = new McpServer({ name: 'files', version: '1.0.0' }, { capabilities: { resources: {} } });
  for (const uri of [SECRET, PUBLIC]) {
    server.registerResource(uri, uri, { mimeType: 'text/plain' }, async (url) => {
      reads.push(url.href);
      return { contents: [{ uri: url.href, text: `contents of ${url.href}` }] };
    });
  }
  server.registerTool('list_files', {}, async () => ({ content: [{ type: 'text', text: 'readme' }] }));
  server.registerPrompt('greet', { argsSchema: { who: z.string() } }, ({ who }) => {
    prompts.push(who);
    return { messages: [{ role: 'user', content: { type: 'text', text: `Hello ${who}` } }] };
  });
  return { server, reads, prompts };
}

/** Upstream <-> gateway <-> agent over in-memory MCP transports, with a fake Vouch. */
async function setup(options: { governed: GovernedMethod[]; decide?: (target: string) => Verdict }) {
  const upstream = fileServer();
  const vouch = createFakeVouch({
    decide: (proposal) => options.decide?.(String(proposal.target.id)) ?? 'allow',
  });
  const [upstreamSide, gatewayUpSide] = InMemoryTransport.createLinkedPair();
  await upstream.server.connect(upstreamSide);
  const upstreamClient = new UpstreamClient({ name: 'gateway-upstream', version: '0.0.0' });
  await upstreamClient.connect(gatewayUpSide);
  const gateway = createGateway({
    upstream: { client: upstreamClient, transport: 'memory' },
    vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
    serverId: 'files',
    environment: 'production',
    governed: options.governed,
  });
  await gateway.discover();
  const [gatewayDownSide, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(gatewayDownSide);
  const agent = new Client({ name: 'agent', version: '0.0.0' });
  await agent.connect(agentSide);
  closers.push(async () => {
    await agent.close();
    await gateway.close();
    await upstream.server.close();
  });
  return { upstream, vouch, agent };
}

/** The error a request was refused with (fails the test when it succeeded). */
async function refusal(promise: Promise<unknown>): Promise<McpError> {
  const outcome = await promise.then(
    () => null,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(McpError);
  return outcome as McpError;
}

const metaOf = (value: { _meta?: Record<string, unknown> } | undefined) =>
  value?._meta?.[META_KEY] as ExecutionMeta | undefined;

const secrets: GovernedMethod = { method: 'resources/read', match: 'file:///secrets/**' };

describe('governed methods', () => {
  describe('when a matching resources/read is allowed', () => {
    it('reads through execute: proposed, observed in the ledger, answered with the contents and _meta', async () => {
      const { agent, vouch, upstream } = await setup({ governed: [secrets] });
      const result = await agent.readResource({ uri: SECRET });
      expect(result.contents).toEqual([{ uri: SECRET, text: `contents of ${SECRET}` }]);
      expect(metaOf(result)).toMatchObject({ status: 'executed', outcome: 'succeeded', replayed: false });
      expect(upstream.reads).toEqual([SECRET]);
      expect([...vouch.proposals.values()]).toMatchObject([
        {
          action: 'files.resources/read',
          server_id: 'files',
          tool_name: 'resources/read',
          target: { kind: 'mcp_resource', id: SECRET, env: 'production' },
          arguments: { uri: SECRET },
        },
      ]);
      expect(vouch.observations).toHaveLength(1);
      expect(vouch.observations[0]).toMatchObject({ outcome: 'succeeded', tool_error: false });
    });

    it('registers the governed method with Vouch like a tool, so policy can know it', async () => {
      const { vouch, agent } = await setup({ governed: [secrets] });
      expect([...vouch.tools.values()].map((tool) => tool.tool_name).sort()).toEqual([
        'list_files',
        'resources/read',
      ]);
      // ... but the agent's tool list is the upstream's, not the governed methods.
      expect((await agent.listTools()).tools.map((tool) => tool.name)).toEqual(['list_files']);
    });
  });

  describe('when the agent names a governed request with its idempotency key', () => {
    const named = (key: string) => ({ uri: SECRET, _meta: { 'vouch.dev/idempotency_key': key } });

    it('answers the same key again from the record, without asking the upstream twice', async () => {
      const { agent, upstream } = await setup({ governed: [secrets] });
      const first = await agent.readResource(named('read-secret-1'));
      const again = await agent.readResource(named('read-secret-1'));
      expect(metaOf(again)).toMatchObject({
        status: 'executed',
        replayed: true,
        proposal_id: metaOf(first)?.proposal_id,
      });
      expect(again.contents).toEqual(first.contents);
      expect(upstream.reads).toEqual([SECRET]);
    });

    it('reads anew without a key', async () => {
      const { agent, upstream } = await setup({ governed: [secrets] });
      await agent.readResource({ uri: SECRET });
      expect(metaOf(await agent.readResource({ uri: SECRET }))).toMatchObject({ replayed: false });
      expect(upstream.reads).toEqual([SECRET, SECRET]);
    });

    it('refuses a malformed key with IDEMPOTENCY_KEY_INVALID, proposing nothing', async () => {
      const { agent, vouch, upstream } = await setup({ governed: [secrets] });
      const error = await refusal(agent.readResource(named('two words')));
      expect(error.code).toBe(ErrorCode.InvalidParams);
      expect(error.data).toEqual({ code: 'IDEMPOTENCY_KEY_INVALID' });
      expect(vouch.proposals.size).toBe(0);
      expect(upstream.reads).toEqual([]);
    });
  });

  describe('when a resources/read does not match', () => {
    it('passes through ungoverned: nothing in the ledger', async () => {
      const { agent, vouch, upstream } = await setup({ governed: [secrets] });
      const result = await agent.readResource({ uri: PUBLIC });
      expect(result.contents).toEqual([{ uri: PUBLIC, text: `contents of ${PUBLIC}` }]);
      expect(metaOf(result)).toBeUndefined();
      expect(upstream.reads).toEqual([PUBLIC]);
      expect(vouch.proposals.size).toBe(0);
      expect(vouch.observations).toEqual([]);
    });
  });

  describe('when the policy denies a governed read', () => {
    it('answers with an MCP error carrying the reasons, and the upstream is never asked', async () => {
      const { agent, vouch, upstream } = await setup({ governed: [secrets], decide: () => 'deny' });
      const error = await refusal(agent.readResource({ uri: SECRET }));
      expect(error.code).toBe(ErrorCode.InvalidRequest);
      expect(error.message).toContain(`resources/read ${SECRET} was denied by policy`);
      expect(metaOf({ _meta: error.data as Record<string, unknown> })).toMatchObject({ status: 'denied' });
      expect(upstream.reads).toEqual([]);
      expect(vouch.proposals.size).toBe(1);
      expect(vouch.observations).toEqual([]);
    });
  });

  describe('when a governed read needs an approval', () => {
    it('refuses until approved, then reads exactly once', async () => {
      const { agent, vouch, upstream } = await setup({
        governed: [secrets],
        decide: () => 'require_approval',
      });
      const pending = await refusal(agent.readResource({ uri: SECRET }));
      const meta = metaOf({ _meta: pending.data as Record<string, unknown> })!;
      expect(meta.status).toBe('approval_pending');
      expect(pending.message).toContain('needs a human approval first');
      expect(upstream.reads).toEqual([]);

      vouch.approve(meta.approval!.request_id);
      const result = await agent.readResource({ uri: SECRET });
      expect(result.contents[0]).toMatchObject({ uri: SECRET });
      expect(metaOf(result)).toMatchObject({ status: 'executed', proposal_id: meta.proposal_id });
      expect(upstream.reads).toEqual([SECRET]);
    });
  });

  describe('when prompts/get is governed', () => {
    it('proposes the prompt by name with its arguments, and an unmatched prompt passes through', async () => {
      const { agent, vouch, upstream } = await setup({
        governed: [{ method: 'prompts/get', match: 'greet', sideEffect: 'read_only' }],
      });
      const result = await agent.getPrompt({ name: 'greet', arguments: { who: 'Ada' } });
      expect(result.messages[0]!.content).toEqual({ type: 'text', text: 'Hello Ada' });
      expect([...vouch.proposals.values()]).toMatchObject([
        {
          tool_name: 'prompts/get',
          target: { kind: 'mcp_prompt', id: 'greet' },
          arguments: { name: 'greet', arguments: { who: 'Ada' } },
        },
      ]);
      expect(upstream.prompts).toEqual(['Ada']);
      // resources/read is not governed by this configuration.
      await agent.readResource({ uri: SECRET });
      expect(vouch.proposals.size).toBe(1);
    });
  });
});

describe('governedMatch of a URI spelled another way', () => {
  const rules: GovernedMethod[] = [{ method: 'resources/read', match: 'file:///srv/data/secrets/**' }];
  const read = (uri: string) => governedMatch(rules, { method: 'resources/read', params: { uri } });

  it.each([
    'file:///srv/data/secrets/key',
    'file:///srv/data/./secrets/key',
    'file:///srv/data/public/../secrets/key',
    'file:///srv/data/%73ecrets/key',
    'file:///srv/data//secrets/key',
    'FILE:///srv/data/secrets/key',
  ])('governs %s, which an upstream reads as a secret', (uri) => {
    expect(read(uri)).toMatchObject({ target: uri });
  });

  it.each(['file:///srv/data/public/key', 'file:///srv/data/secrets-old/key', 'not a uri'])(
    'leaves %s ungoverned',
    (uri) => {
      expect(read(uri)).toBeNull();
    },
  );

  it('spells a URI with its host in lower case and its query kept', () => {
    expect(spellingsOf('https://Ex.com/a/../b%20c?x=1')).toEqual([
      'https://Ex.com/a/../b%20c?x=1',
      'https://ex.com/b%20c?x=1',
      'https://ex.com/b c?x=1',
    ]);
  });
});
