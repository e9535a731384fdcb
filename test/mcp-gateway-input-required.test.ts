// A pending approval, to a client on the MCP TypeScript SDK 2.x speaking 2026-07-28, is an
// input_required round; to a client on SDK 1.x (2025-11-25), the _meta result as before. Real
// Vouch (in process, on the test's database), a real stdio upstream, the SDKs' own transports.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2HttpTransport,
} from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { VouchClient } from '@vouch/client';
import type { Database } from '@vouch/ledger';
import { type AgentHttpServer, type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream } from './helpers/mcp-gateway-process';
import { connectHttpAgent, inProcessVouch, startAgentGateway } from './helpers/mcp-vouch-app';

const TOKEN = 'agent-token-on-two-sdks';
let dir: string;
let booksPath: string;
let database: Database;
let gateway: AgentHttpServer;
let alice: VouchClient;
let auditor: VouchClient;
const closers: (() => Promise<void>)[] = [];

const closes = () => readBooks(booksPath).calls.filter((call) => call.tool === 'close_account');
const metaOf = (result: { _meta?: Record<string, unknown> }) => result._meta?.[META_KEY] as ExecutionMeta;

/** An SDK 2.x agent pinned to 2026-07-28 whose user answers each prompt with `answer`. */
async function modernAgent(answer: (message: string) => Promise<'accept' | 'decline'>) {
  const asked: string[] = [];
  const agent = new V2Client(
    { name: 'agent-2026', version: '0.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  agent.setRequestHandler('elicitation/create', async (request) => {
    const message = String(request.params.message);
    asked.push(message);
    return { action: await answer(message), content: {} };
  });
  await agent.connect(
    new V2HttpTransport(new URL(gateway.url), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    }),
  );
  closers.push(() => agent.close());
  return { agent, asked };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-mrtr-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, {
    accounts: { 'acct-21': 1, 'acct-22': 1, 'acct-23': 1 },
    calls: [],
  } satisfies BankBooks);
  const vouch = await inProcessVouch();
  ({ database } = vouch);
  alice = vouch.clientOf(await vouch.secretOf('user:alice', ['approver']));
  auditor = vouch.clientOf(await vouch.secretOf('user:auditor', ['auditor']));
  gateway = await startAgentGateway(
    vouch,
    {
      upstream: bankUpstream(booksPath),
      serverId: 'bank',
      environment: 'production',
      elicitationWaitMs: 0,
    },
    [{ name: 'teller', token: TOKEN, apiKey: await vouch.secretOf('agent:teller', ['gateway']) }],
  );
}, 60_000);

afterAll(async () => {
  for (const close of closers.splice(0)) await close();
  await gateway?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a call that needs a human approval, from an SDK 2.x client on 2026-07-28', () => {
  it('is asked as input_required; approved in Vouch by another, the retry runs it once', async () => {
    const { agent, asked } = await modernAgent(async (message) => {
      await alice.approvals.approve(/Approval request: (\S+)/.exec(message)![1]!);
      return 'accept';
    });
    const result = await agent.callTool({ name: 'close_account', arguments: { account: 'acct-21' } });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('close_account on bank (production)');
    expect(metaOf(result).status).toBe('executed');
    expect(closes().map((call) => call.arguments)).toEqual([{ account: 'acct-21' }]);
    const story = await auditor.proposals.get(metaOf(result).proposal_id!);
    expect(story.proposal.requester).toBe('agent:teller');
  });

  it('does not run when the user accepts but nobody approved', async () => {
    const { agent } = await modernAgent(async () => 'accept');
    const result = await agent.callTool({ name: 'close_account', arguments: { account: 'acct-22' } });
    expect(metaOf(result).status).toBe('approval_pending');
    expect(closes().map((call) => call.arguments)).not.toContainEqual({ account: 'acct-22' });
  });
});

describe('the same call from an SDK 1.x client (2025-11-25, no elicitation)', () => {
  it('gets approval_pending in _meta, as before', async () => {
    const agent = await connectHttpAgent(gateway, TOKEN);
    closers.push(() => agent.close());
    const result = (await agent.callTool({
      name: 'close_account',
      arguments: { account: 'acct-23' },
    })) as CallToolResult;
    expect(metaOf(result).status).toBe('approval_pending');
    expect(closes().map((call) => call.arguments)).not.toContainEqual({ account: 'acct-23' });
  });
});
