// The gateway is on SDK 2.x; the agent (and the upstream servers) stay on 1.x, as many are.
import { InMemoryTransport, Client as UpstreamClient } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient, type Verdict } from '@vouch/client';
import { createFakeVouch } from '@vouch/client/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createGateway, type GatewayOptions } from './gateway';
import { createExampleUpstream } from './testing/example-upstream';
import { type ExecutionMeta, META_KEY } from './tool-results';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Upstream <-> gateway <-> agent, all over in-memory MCP transports, with a fake Vouch. */
async function setup(
  options: { decide?: (tool: string) => Verdict; gateway?: Partial<GatewayOptions> } = {},
) {
  const upstream = createExampleUpstream();
  const vouch = createFakeVouch({
    decide: (proposal) =>
      options.decide?.(proposal.tool_name) ??
      (proposal.tool_name === 'close_account' ? 'require_approval' : 'allow'),
  });
  const [upstreamSide, gatewayUpSide] = InMemoryTransport.createLinkedPair();
  await upstream.server.connect(upstreamSide);
  const upstreamClient = new UpstreamClient({ name: 'gateway-upstream', version: '0.0.0' });
  await upstreamClient.connect(gatewayUpSide);

  const gateway = createGateway({
    upstream: { client: upstreamClient, transport: 'memory' },
    vouch: createVouchClient({ baseUrl: 'http://vouch.test', apiKey: 'k', fetch: vouch.fetch }),
    serverId: 'bank',
    environment: 'production',
    ...options.gateway,
  });
  const [gatewayDownSide, agentSide] = InMemoryTransport.createLinkedPair();
  await gateway.server.connect(gatewayDownSide);
  const agent = new Client({ name: 'agent', version: '0.0.0' });
  await agent.connect(agentSide);
  closers.push(async () => {
    await agent.close();
    await gateway.close();
    await upstream.server.close();
  });
  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await agent.callTool({ name, arguments: args })) as CallToolResult;
  const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;
  return { upstream, vouch, gateway, agent, call, metaOf };
}

describe('createGateway', () => {
  describe('when the agent lists tools', () => {
    it('serves the upstream tools and registers each with Vouch as discovered and irreversible', async () => {
      const { agent, vouch } = await setup();
      const { tools } = await agent.listTools();
      expect(tools.map((t) => t.name)).toContain('close_account');
      const registered = [...vouch.tools.values()];
      expect(registered.map((t) => t.tool_name).sort()).toEqual(tools.map((t) => t.name).sort());
      // readOnlyHint is the governed server's own claim: discovery is not authorization.
      expect(registered.every((t) => t.side_effect === 'irreversible' && t.source === 'discovery')).toBe(
        true,
      );
    });

    it('proposes with the class an operator registered instead of the discovered one', async () => {
      const { agent, vouch, call } = await setup();
      await createVouchClient({
        baseUrl: 'http://vouch.test',
        apiKey: 'k',
        fetch: vouch.fetch,
      }).tools.register({
        server_id: 'bank',
        tool_name: 'get_balance',
        side_effect: 'read_only',
      });
      await agent.listTools();
      await call('get_balance', { account: 'acct-1' });
      expect([...vouch.proposals.values()][0]!.side_effect).toBe('read_only');
    });
  });

  describe('when a call is allowed', () => {
    it('calls the upstream once, records the tool result layer and passes the result through', async () => {
      const { call, upstream, vouch, metaOf } = await setup();
      const result = await call('get_balance', { account: 'acct-1' });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ account: 'acct-1', balance: 100 });
      expect(upstream.calls).toEqual([{ tool: 'get_balance', arguments: { account: 'acct-1' } }]);
      expect(vouch.observations[0]).toMatchObject({
        outcome: 'succeeded',
        tool_error: false,
        transport_status: null,
      });
      expect((vouch.observations[0]!.result as { layer: string }).layer).toBe('tool_result');
      expect(metaOf(result)).toMatchObject({ status: 'executed', outcome: 'succeeded', replayed: false });
      expect(metaOf(result).verification).toMatchObject({ status: 'passed' });
    });

    it('proposes the configured target, environment and postconditions', async () => {
      const { call, vouch } = await setup({
        gateway: {
          tools: {
            get_balance: {
              action: 'balance.read',
              target: { kind: 'account', idArgument: 'account' },
              postconditions: [{ name: 'balance.matches' }],
            },
          },
        },
      });
      await call('get_balance', { account: 'acct-2' });
      expect([...vouch.proposals.values()][0]).toMatchObject({
        action: 'balance.read',
        server_id: 'bank',
        tool_name: 'get_balance',
        target: { kind: 'account', id: 'acct-2', env: 'production' },
        postconditions: [{ name: 'balance.matches' }],
      });
    });
  });

  describe('when a call needs approval', () => {
    it('answers with an approval-pending tool result and does not call the upstream', async () => {
      const { call, upstream, metaOf } = await setup();
      const result = await call('close_account', { account: 'acct-1' });
      expect(result.isError).toBe(true);
      expect(result.content[0]).toMatchObject({ type: 'text' });
      const meta = metaOf(result);
      expect(meta.status).toBe('approval_pending');
      expect(meta.approval).toMatchObject({ status: 'pending', request_id: expect.any(String) });
      expect(upstream.calls).toEqual([]);
    });

    it('runs the same call exactly once after approval, and the next identical call needs a new approval', async () => {
      const { call, upstream, vouch, metaOf } = await setup();
      const pending = metaOf(await call('close_account', { account: 'acct-1' }));
      expect(metaOf(await call('close_account', { account: 'acct-1' })).approval!.request_id).toBe(
        pending.approval!.request_id,
      );
      vouch.approve(pending.approval!.request_id);
      const ran = await call('close_account', { account: 'acct-1' });
      expect(ran.structuredContent).toEqual({ closed: 'acct-1' });
      expect(metaOf(ran).status).toBe('executed');
      const again = metaOf(await call('close_account', { account: 'acct-1' }));
      expect(again.status).toBe('approval_pending');
      expect(again.approval!.request_id).not.toBe(pending.approval!.request_id);
      expect(upstream.calls.filter((c) => c.tool === 'close_account')).toHaveLength(1);
    });

    it('asks for a separate approval when the arguments change', async () => {
      const { call, vouch, upstream, metaOf } = await setup();
      const first = metaOf(await call('close_account', { account: 'acct-1' }));
      vouch.approve(first.approval!.request_id);
      const other = metaOf(await call('close_account', { account: 'acct-2' }));
      expect(other.status).toBe('approval_pending');
      expect(other.approval!.request_id).not.toBe(first.approval!.request_id);
      expect(upstream.calls).toEqual([]);
    });

    it('reports a denied approval and lets a later identical call ask again', async () => {
      const { call, vouch, upstream, metaOf } = await setup();
      const first = metaOf(await call('close_account', { account: 'acct-1' }));
      vouch.deny(first.approval!.request_id);
      const refused = metaOf(await call('close_account', { account: 'acct-1' }));
      expect(refused).toMatchObject({ status: 'not_authorized', code: 'APPROVAL_DENIED' });
      expect(metaOf(await call('close_account', { account: 'acct-1' })).status).toBe('approval_pending');
      expect(upstream.calls).toEqual([]);
    });
  });

  describe('when the policy denies', () => {
    it('answers with every reason and does not call the upstream', async () => {
      const { call, upstream, metaOf } = await setup({ decide: () => 'deny' });
      const result = await call('get_balance', { account: 'acct-1' });
      expect(result.isError).toBe(true);
      expect(metaOf(result)).toMatchObject({ status: 'denied', reasons: [{ code: 'TOOL_NOT_REGISTERED' }] });
      expect(upstream.calls).toEqual([]);
    });
  });

  describe('when the policy asks for a repair', () => {
    it('answers with the suggested action and does not call the upstream', async () => {
      const { call, upstream, metaOf } = await setup({ decide: () => 'repair' });
      const meta = metaOf(await call('close_account', { account: 'acct-1' }));
      expect(meta).toMatchObject({ status: 'repair', repair: { tool_name: 'close_account_dry_run' } });
      expect(upstream.calls).toEqual([]);
    });
  });

  describe('when the tool reports its own failure', () => {
    it('records outcome failed with tool_error true and passes the error result through', async () => {
      const { call, vouch } = await setup();
      const result = await call('flaky_tool');
      expect(result.isError).toBe(true);
      expect(result.content[0]).toMatchObject({ text: 'the backend said no' });
      expect(vouch.observations[0]).toMatchObject({ outcome: 'failed', tool_error: true });
    });
  });

  describe('when the upstream answers with a JSON-RPC error', () => {
    it('records it apart from tool errors and answers the agent with the same JSON-RPC error', async () => {
      const { call, vouch } = await setup();
      const error = await call('rpc_error_tool').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
      expect(vouch.observations[0]).toMatchObject({ outcome: 'failed', tool_error: null });
      expect(vouch.observations[0]!.result).toEqual({
        layer: 'jsonrpc_error',
        jsonrpc_error: {
          code: ErrorCode.InvalidParams,
          message: 'bad params from upstream',
          data: { field: 'x' },
        },
      });
    });
  });

  describe('when the upstream does not answer in time', () => {
    it('records unknown once and never calls the upstream again for the same call', async () => {
      const { call, vouch, upstream } = await setup({ gateway: { invokeTimeoutMs: 20 } });
      const first = await call('hang_tool').catch((e: unknown) => e);
      expect(first).toBeInstanceOf(McpError);
      const second = await call('hang_tool').catch((e: unknown) => e);
      expect(second).toBeInstanceOf(McpError);
      expect(upstream.calls).toHaveLength(1);
      expect(vouch.observations.map((o) => o.outcome)).toEqual(['unknown']);
    });
  });

  describe('when the gateway drains before stopping', () => {
    it('lets a running call finish and record its outcome, and refuses new calls meanwhile', async () => {
      const { call, gateway, upstream, vouch } = await setup();
      const running = call('slow_tool');
      await vi.waitFor(() => expect(upstream.calls.map((c) => c.tool)).toEqual(['slow_tool']));
      const drained = gateway.drain(600_000);
      const refused = await call('get_balance', { account: 'acct-1' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(McpError);
      upstream.releaseSlow();
      await drained;
      expect((await running).content[0]).toMatchObject({ text: 'slow and done' });
      expect(vouch.observations.map((o) => o.outcome)).toEqual(['succeeded']);
      expect(vouch.proposals.size).toBe(1);
    });

    it('stops a call still running past the bound and records it unknown', async () => {
      const { call, gateway, upstream, vouch } = await setup();
      const running = call('slow_tool').catch((e: unknown) => e);
      await vi.waitFor(() => expect(upstream.calls).toHaveLength(1));
      await gateway.drain(0);
      expect(await running).toBeInstanceOf(McpError);
      expect(vouch.observations.map((o) => o.outcome)).toEqual(['unknown']);
    });
  });

  describe('when the agent disconnects mid-call', () => {
    it('lets the call finish and records its real outcome', async () => {
      const { call, agent, upstream, vouch } = await setup();
      const running = call('slow_tool').catch((e: unknown) => e);
      await vi.waitFor(() => expect(upstream.calls).toHaveLength(1));
      await agent.close();
      await running;
      upstream.releaseSlow();
      await vi.waitFor(() => expect(vouch.observations.map((o) => o.outcome)).toEqual(['succeeded']));
    });
  });

  describe('when a precondition does not hold', () => {
    it('answers precondition_failed, does not call the upstream, and the same call later continues the proposal', async () => {
      const { call, vouch, upstream, metaOf } = await setup();
      vouch.failNext('POST /v1/proposals/prp_1/authorize', { status: 412, code: 'PRECONDITION_FAILED' });
      const refused = metaOf(await call('get_balance', { account: 'acct-1' }));
      expect(refused).toMatchObject({ status: 'precondition_failed', proposal_id: 'prp_1' });
      expect(upstream.calls).toEqual([]);
      const ran = metaOf(await call('get_balance', { account: 'acct-1' }));
      expect(ran).toMatchObject({ status: 'executed', proposal_id: 'prp_1' });
      expect(upstream.calls).toHaveLength(1);
    });
  });

  describe('when the answer to the observation is lost', () => {
    it('reports an error, and the same call again is recorded unknown instead of running twice', async () => {
      const { call, vouch, upstream } = await setup();
      vouch.failNext('POST /v1/observations', 'network');
      const first = await call('get_balance', { account: 'acct-1' }).catch((e: unknown) => e);
      expect(first).toBeInstanceOf(McpError);
      const second = await call('get_balance', { account: 'acct-1' }).catch((e: unknown) => e);
      expect(second).toBeInstanceOf(McpError);
      expect(upstream.calls).toHaveLength(1);
      expect(vouch.observations.map((o) => o.outcome)).toEqual(['unknown']);
    });
  });

  describe('when Vouch cannot be reached', () => {
    it('fails closed: an error result, no upstream call', async () => {
      const { call, vouch, upstream, metaOf } = await setup();
      vouch.failNext('POST /v1/proposals', 'network', 3);
      const result = await call('get_balance', { account: 'acct-1' });
      expect(result.isError).toBe(true);
      expect(metaOf(result)).toMatchObject({ status: 'error', code: 'NETWORK_ERROR' });
      expect(upstream.calls).toEqual([]);
    });
  });
});
