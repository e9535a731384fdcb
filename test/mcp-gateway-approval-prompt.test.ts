import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { isVouchClientError, type VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream } from './helpers/mcp-gateway-process';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKENS = { withPrompt: 'agent-token-with-elicitation', plain: 'agent-token-without-elicitation' };
let dir: string;
let booksPath: string;
let database: Database;
let gateway: AgentHttpServer;
let alice: VouchClient;
let agentAsApprover: VouchClient;
let auditor: VouchClient;
const agents: Client[] = [];

const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;
const closes = () => readBooks(booksPath).calls.filter((call) => call.tool === 'close_account');

/** What the user does when asked, with the request the gateway sent. */
type Answer = (request: ElicitRequest) => Promise<'accept' | 'decline' | 'cancel'>;

async function connectAgent(
  token: string,
  answer?: Answer,
): Promise<{ agent: Client; asked: ElicitRequest[] }> {
  const asked: ElicitRequest[] = [];
  const agent = new Client(
    { name: 'agent', version: '0.0.0' },
    { capabilities: answer ? { elicitation: { form: {} } } : {} },
  );
  if (answer) {
    agent.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request);
      return { action: await answer(request) };
    });
  }
  await connectHttpAgent(gateway, token, agent);
  agents.push(agent);
  return { agent, asked };
}

const close = (agent: Client, account: string) =>
  agent.callTool({ name: 'close_account', arguments: { account } }) as Promise<CallToolResult>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-prompt-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, {
    accounts: { 'acct-11': 1, 'acct-12': 1, 'acct-13': 1, 'acct-14': 1, 'acct-15': 1 },
    calls: [],
  } satisfies BankBooks);
  const vouch = await inProcessVouch({ allowRoleCombinations: true });
  ({ database } = vouch);
  const { secretOf, clientOf } = vouch;
  alice = clientOf(await secretOf('user:alice', ['approver']));
  auditor = clientOf(await secretOf('user:auditor', ['auditor']));
  // The agent may approve others' requests, so only SELF_APPROVAL stands between it and its own.
  const agentSecret = await secretOf('agent:teller', ['gateway', 'approver']);
  agentAsApprover = clientOf(agentSecret);

  gateway = await startAgentGateway(
    vouch,
    {
      upstream: bankUpstream(booksPath),
      serverId: 'bank',
      environment: 'production',
      consoleUrl: 'https://vouch.example/ui/',
      // Look once after the answer: no approval means pending at once.
      elicitationWaitMs: 0,
    },
    [
      { name: 'with-prompt', token: TOKENS.withPrompt, apiKey: agentSecret },
      { name: 'plain', token: TOKENS.plain, apiKey: agentSecret },
    ],
  );
}, 60_000);

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
});

afterAll(async () => {
  await gateway?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a call waiting for an approval, from a client with elicitation', () => {
  it('shows the user the exact call, its payload hash, the approval request and the console link', async () => {
    const { agent, asked } = await connectAgent(TOKENS.withPrompt, async () => 'decline');
    const result = await close(agent, 'acct-11');
    const meta = metaOf(result);
    expect(meta.status).toBe('approval_pending');
    expect(asked).toHaveLength(1);
    const { message, requestedSchema } = asked[0]!.params as { message: string; requestedSchema: unknown };
    expect(message).toContain('close_account on bank (production)');
    expect(message).toContain('"account": "acct-11"');
    expect(message).toContain(`Payload hash: ${meta.payload_hash}`);
    expect(message).toContain(`Approval request: ${meta.approval!.request_id}`);
    expect(message).toContain(`https://vouch.example/ui/#/proposal/${meta.proposal_id}`);
    expect(requestedSchema).toEqual({ type: 'object', properties: {} });
    expect(closes()).toEqual([]);
  });

  it('stays pending after "accept" when nobody else approved, and the requester cannot approve it itself', async () => {
    let selfApproval: unknown;
    const { agent, asked } = await connectAgent(TOKENS.withPrompt, async (request) => {
      const meta = request.params._meta?.[META_KEY] as ExecutionMeta;
      // The agent (approver role and all) tries to approve its own request: Vouch refuses.
      selfApproval = await agentAsApprover.approvals
        .approve(meta.approval!.request_id)
        .catch((e: unknown) => e);
      return 'accept';
    });
    const result = await close(agent, 'acct-12');
    const meta = metaOf(result);
    expect(asked).toHaveLength(1);
    expect(isVouchClientError(selfApproval) && selfApproval.code).toBe('SELF_APPROVAL');
    expect(meta.status).toBe('approval_pending');
    expect((await auditor.approvals.get(meta.approval!.request_id)).status).toBe('pending');
    expect(closes()).toEqual([]);
  });

  it('runs the call once another human approves it while the prompt is open and the user accepts', async () => {
    const { agent, asked } = await connectAgent(TOKENS.withPrompt, async (request) => {
      const meta = request.params._meta?.[META_KEY] as ExecutionMeta;
      await alice.approvals.approve(meta.approval!.request_id);
      return 'accept';
    });
    const result = await close(agent, 'acct-13');
    const meta = metaOf(result);
    expect(asked).toHaveLength(1);
    expect(meta.status).toBe('executed');
    expect(closes().map((call) => call.arguments)).toEqual([{ account: 'acct-13' }]);
    const story = await auditor.proposals.get(meta.proposal_id!);
    expect(story.proposal.requester).toBe('agent:teller');
    expect(story.observation).toMatchObject({ outcome: expect.any(String) });
  });

  it('does not run an approved call when the user declines: it stays for the next identical call', async () => {
    const before = closes().length;
    const { agent } = await connectAgent(TOKENS.withPrompt, async (request) => {
      const meta = request.params._meta?.[META_KEY] as ExecutionMeta;
      await alice.approvals.approve(meta.approval!.request_id);
      return 'decline';
    });
    expect(metaOf(await close(agent, 'acct-14')).status).toBe('approval_pending');
    expect(closes().length).toBe(before);
  });
});

describe('a call waiting for an approval, from a client without elicitation', () => {
  it('answers pending as before, asking nothing', async () => {
    const before = closes().length;
    const { agent } = await connectAgent(TOKENS.plain);
    const result = await close(agent, 'acct-15');
    expect(metaOf(result).status).toBe('approval_pending');
    expect(result.isError).toBe(true);
    expect(closes().length).toBe(before);
  });
});
