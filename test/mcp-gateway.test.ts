// Done-when for the MCP gateway, with every peer real and in its own process:
// an MCP client (the agent) -> `vouch-mcp-gateway` over stdio -> the bank MCP server over
// stdio, and the gateway -> `vouch serve` over HTTP. What ran is read from the bank's own
// books, never from the gateway's or Vouch's account of it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient, type Role, type VouchClient } from '@vouch/client';
import { type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { accountsDir, type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream, type GatewayAgent, startGatewayAgent } from './helpers/mcp-gateway-process';
import { startVouchServer, type VouchServer } from './helpers/server';

let dir: string;
let server: VouchServer;
let gateway: GatewayAgent;
let booksPath: string;
let gatewaySecret = '';
const as = {} as Record<'admin' | 'gatewayKey' | 'alice' | 'auditor', VouchClient>;

const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;
const callsTo = (tool: string) => readBooks(booksPath).calls.filter((c) => c.tool === tool);

async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await gateway.agent.callTool({ name, arguments: args })) as CallToolResult;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-e2e-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, { accounts: { 'acct-1': 100, 'acct-2': 250 }, calls: [] } satisfies BankBooks);
  // The server's verifier reads the bank's own account files: a source independent of the
  // tool's answer (the observation's server is `bank`, the check's source `bank-books`).
  writeFileSync(
    join(dir, 'vouch.config.json'),
    JSON.stringify({
      verifiers: [
        {
          use: 'file',
          name: 'bank-books',
          handles: ['balance.reported'],
          options: {
            roots: [accountsDir(booksPath)],
            path: '{arguments.account}.json',
            source: 'bank-books',
            assertions: [
              {
                op: 'json',
                assert: {
                  op: 'equals',
                  pointer: '/balance',
                  from: 'observation.result.tool_result.structuredContent.balance',
                },
              },
            ],
          },
        },
      ],
    }),
  );
  server = await startVouchServer({ storage: { VOUCH_DATA_DIR: join(dir, 'data') }, cwd: dir });
  const clientFor = (apiKey: string) => createVouchClient({ baseUrl: server.url, apiKey });
  as.admin = clientFor(server.adminKey);
  const issue = async (identity: string, roles: Role[], extra = {}) => {
    const { secret } = await as.admin.keys.create({ identity, roles, ...extra });
    if (roles.includes('gateway')) gatewaySecret = secret;
    return clientFor(secret);
  };
  as.gatewayKey = await issue('agent:bank-gateway', ['gateway'], { environments: ['production'] });
  as.alice = await issue('user:alice', ['approver']);
  as.auditor = await issue('user:auditor', ['auditor']);

  // The operator declares the read tool as read_only; the destructive one is left to discovery.
  await as.admin.tools.register({
    server_id: 'bank',
    tool_name: 'get_balance',
    side_effect: 'read_only',
    allowed_environments: ['production'],
  });

  const configPath = join(dir, 'gateway.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      upstream: bankUpstream(booksPath),
      vouch: { url: server.url },
      serverId: 'bank',
      environment: 'production',
      tools: {
        get_balance: {
          target: { kind: 'account', idArgument: 'account' },
          postconditions: [{ name: 'balance.reported' }],
        },
        close_account: { target: { kind: 'account', idArgument: 'account' } },
      },
    }),
  );
  gateway = await startGatewayAgent({ configPath, apiKey: gatewaySecret });
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('vouch-mcp-gateway in front of a real MCP server', () => {
  describe('when the agent lists tools', () => {
    it('serves the upstream tools and registers the unknown one as discovered and irreversible', async () => {
      const { tools } = await gateway.agent.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['close_account', 'get_balance', 'wire_transfer']);
      const registry = await as.auditor.tools.list();
      expect(registry.find((t) => t.tool_name === 'close_account')).toMatchObject({
        side_effect: 'irreversible',
        source: 'discovery',
        registered_by: 'agent:bank-gateway',
      });
      // An operator's registration is never overwritten by discovery.
      expect(registry.find((t) => t.tool_name === 'get_balance')).toMatchObject({
        side_effect: 'read_only',
        source: 'manual',
      });
    });
  });

  describe('when the agent calls the read-only tool', () => {
    it('runs it once, records it, and the server verifies it against an independent source', async () => {
      const result = await call('get_balance', { account: 'acct-1' });
      expect(result.structuredContent).toEqual({ account: 'acct-1', balance: 100 });
      const meta = metaOf(result);
      expect(meta).toMatchObject({
        status: 'executed',
        outcome: 'succeeded',
        verification: { status: 'passed' },
      });
      expect(callsTo('get_balance')).toHaveLength(1);

      const story = await as.auditor.proposals.get(String(meta.proposal_id));
      expect(story.observation).toMatchObject({
        outcome: 'succeeded',
        tool_error: false,
        transport_status: null,
      });
      expect(story.verification?.checks).toEqual([
        expect.objectContaining({ name: 'balance.reported', status: 'pass', source: 'bank-books' }),
      ]);
      expect(story.outcome).toBe('verified');
      expect(story.stage).toBe('executed');
    });
  });

  describe('when the agent calls the destructive tool', () => {
    let requestId: string;

    it('answers approval-pending and does not run it', async () => {
      const result = await call('close_account', { account: 'acct-2' });
      expect(result.isError).toBe(true);
      const meta = metaOf(result);
      expect(meta.status).toBe('approval_pending');
      expect(meta.approval).toMatchObject({ status: 'pending', request_id: expect.any(String) });
      requestId = meta.approval!.request_id;
      expect(callsTo('close_account')).toEqual([]);
    });

    it('cannot be approved by the gateway itself', async () => {
      await expect(as.gatewayKey.approvals.approve(requestId)).rejects.toMatchObject({
        code: 'ROLE_FORBIDDEN',
      });
    });

    it('shows the approver exactly the arguments that will run, and is approved by another identity', async () => {
      const shown = await as.alice.approvals.get(requestId);
      expect(shown.payload.arguments).toEqual({ account: 'acct-2' });
      expect(shown.proposal.requester).toBe('agent:bank-gateway');
      const approved = await as.alice.approvals.approve(requestId, { comment: 'customer asked' });
      expect(approved.status).toBe('approved');
    });

    it('runs exactly once when the agent calls again with the same arguments', async () => {
      const result = await call('close_account', { account: 'acct-2' });
      expect(result.structuredContent).toEqual({ closed: 'acct-2' });
      expect(metaOf(result)).toMatchObject({ status: 'executed', outcome: 'succeeded' });
      expect(callsTo('close_account')).toEqual([{ tool: 'close_account', arguments: { account: 'acct-2' } }]);
      expect(readBooks(booksPath).accounts).not.toHaveProperty('acct-2');

      // The single-use approval is spent: the same call again needs a new approval.
      const again = metaOf(await call('close_account', { account: 'acct-2' }));
      expect(again.status).toBe('approval_pending');
      expect(again.approval?.request_id).not.toBe(requestId);
      expect(callsTo('close_account')).toHaveLength(1);
    });

    it('is pending again, under its own request, when the arguments change', async () => {
      const meta = metaOf(await call('close_account', { account: 'acct-1' }));
      expect(meta.status).toBe('approval_pending');
      expect(meta.approval?.request_id).not.toBe(requestId);
      expect(callsTo('close_account')).toHaveLength(1);
    });
  });

  describe('when the gateway gets SIGTERM during a call', () => {
    it('lets the call finish, records its outcome, then exits', async () => {
      const release = join(dir, 'release');
      const configPath = join(dir, 'gateway-hold.json');
      writeFileSync(
        configPath,
        JSON.stringify({
          upstream: bankUpstream(booksPath, { BANK_HOLD_UNTIL: release }),
          vouch: { url: server.url },
          serverId: 'bank',
          environment: 'production',
          drainTimeoutMs: 600_000,
        }),
      );
      const held = await startGatewayAgent({ configPath, apiKey: gatewaySecret });
      const before = callsTo('get_balance').length;
      const running = held.agent
        .callTool({ name: 'get_balance', arguments: { account: 'acct-1' } })
        .catch((error: unknown) => error);
      await vi.waitFor(() => expect(callsTo('get_balance')).toHaveLength(before + 1), { timeout: 30_000 });
      process.kill(held.pid, 'SIGTERM');
      // Only once the gateway is draining does the upstream answer: the call outlives the signal.
      await vi.waitFor(() => expect(held.stderr()).toContain('"draining"'), { timeout: 30_000 });
      writeFileSync(release, '');
      await running;
      await vi.waitFor(
        () => {
          expect(() => process.kill(held.pid, 0)).toThrow();
        },
        { timeout: 30_000 },
      );
      const { events } = await as.auditor.audit.events('default', { limit: 1000 });
      const proposed = events.filter((e) => e.kind === 'proposal').at(-1)!;
      const story = await as.auditor.proposals.get(proposed.entity);
      expect(story.proposal).toMatchObject({ tool_name: 'get_balance', arguments: { account: 'acct-1' } });
      expect(story.observation).toMatchObject({ outcome: 'succeeded' });
    }, 120_000);
  });

  describe('when the auditor verifies the chain afterwards', () => {
    it('finds it intact', async () => {
      const report = await as.auditor.audit.verify('default');
      expect(report.failures).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.checked).toBeGreaterThan(0);
    });
  });
});
