// Crash safety, with every peer real and in its own process: the agent (MCP SDK client) ->
// `vouch-mcp-gateway` -> the bank MCP server, and the gateway -> `vouch serve`. A call is
// left in flight (the bank's `wire_transfer` takes the call, writes it down and never
// answers), then one of the processes is stopped. Whatever stops, the server's claim sweep
// must leave no proposal without an outcome, never run it again, and `vouch verify` must
// find the log intact.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVouchClient, type VouchClient } from '@vouch/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './helpers/eventually';
import { type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import { bankUpstream, type GatewayAgent, startGatewayAgent } from './helpers/mcp-gateway-process';
import { runVouch, startVouchServer, type VouchServer } from './helpers/server';

type ProposalStory = Awaited<ReturnType<VouchClient['proposals']['get']>>;

let dir: string;
let server: VouchServer;
let booksPath: string;
let configPath: string;
let gatewaySecret: string;
let auditor: VouchClient;
/** The identity the server records a lapsed claim's outcome under (`CLAIM_SWEEPER_IDENTITY`). */
const CLAIM_SWEEPER_IDENTITY = 'vouch:claim-sweeper';
const storage = () => ({ VOUCH_DATA_DIR: join(dir, 'data') });

/** The stories of every `wire_transfer` proposal in the log. */
async function wireStories(): Promise<ProposalStory[]> {
  const page = await auditor.audit.events('default', { after: 0, limit: 1000 });
  const ids = page.events
    .filter((e) => e.kind === 'proposal' && JSON.parse(e.payload).tool_name === 'wire_transfer')
    .map((e) => e.entity);
  return Promise.all(ids.map((id) => auditor.proposals.get(id)));
}

/** Start a gateway, send `wire_transfer` for `account`, and resolve once the bank has the call. */
async function callInFlight(account: string): Promise<{ gateway: GatewayAgent; upstreamPid: number }> {
  const gateway = await startGatewayAgent({ configPath, apiKey: gatewaySecret });
  // Never answered: the promise is left pending (its rejection, when a process stops, is ignored).
  gateway.agent.callTool({ name: 'wire_transfer', arguments: { account } }).catch(() => {});
  const call = await eventually('the bank to take the call', () =>
    readBooks(booksPath).calls.find((c) => c.tool === 'wire_transfer' && c.arguments.account === account),
  );
  return { gateway, upstreamPid: call.pid! };
}

/** Wait for the server's sweep to record `account`'s call, and check what it recorded. */
async function sweptStory(account: string): Promise<ProposalStory> {
  const story = await eventually('the sweep to record the outcome', async () => {
    const found = (await wireStories()).find((s) => s.proposal.arguments.account === account);
    return found?.observation ? found : undefined;
  });
  expect(story.claim).not.toBeNull();
  expect(story.observation).toMatchObject({
    executed_by: CLAIM_SWEEPER_IDENTITY,
    outcome: 'unknown',
    result: { reason: 'EXECUTION_CLAIM_LAPSED', claim_id: story.claim!.id },
  });
  expect(story).toMatchObject({ stage: 'executed', outcome: 'awaiting_resolution' });
  return story;
}

/** SIGKILL `pid` if it still runs (the upstream usually stops with its gateway). */
const killIfAlive = (pid: number) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-crash-'));
  booksPath = join(dir, 'books.json');
  writeBooks(booksPath, {
    accounts: { 'acct-1': 100, 'acct-2': 100, 'acct-3': 100 },
    calls: [],
  } satisfies BankBooks);
  // A claim lapses 2 s after authorize, and the server sweeps every 250 ms.
  server = await startVouchServer({
    storage: storage(),
    cwd: dir,
    env: { VOUCH_EXECUTION_CLAIM_SECONDS: '2', VOUCH_CLAIM_SWEEP_INTERVAL_MS: '250' },
  });
  const admin = createVouchClient({ baseUrl: server.url, apiKey: server.adminKey });
  gatewaySecret = (await admin.keys.create({ identity: 'agent:bank-gateway', roles: ['gateway'] })).secret;
  auditor = createVouchClient({
    baseUrl: server.url,
    apiKey: (await admin.keys.create({ identity: 'user:auditor', roles: ['auditor'] })).secret,
  });
  // Allowed without approval: the crash, not the approval, is under test here.
  await admin.tools.register({
    server_id: 'bank',
    tool_name: 'wire_transfer',
    side_effect: 'idempotent',
    allowed_environments: ['production'],
  });
  configPath = join(dir, 'gateway.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      upstream: bankUpstream(booksPath),
      vouch: { url: server.url },
      serverId: 'bank',
      environment: 'production',
      tools: { wire_transfer: { target: { kind: 'account', idArgument: 'account' } } },
    }),
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Each step starts real processes on a shared, loaded machine: generous limits, no timing asserted.
describe('a governed call in flight when a process stops', { timeout: 180_000 }, () => {
  describe('when the gateway is killed (SIGKILL) mid-call', () => {
    it('the sweep records the outcome as unknown, and the call is not run again', async () => {
      const { gateway, upstreamPid } = await callInFlight('acct-1');
      process.kill(gateway.pid, 'SIGKILL');
      await sweptStory('acct-1');
      // The bank took the call once; nothing ran it a second time.
      expect(readBooks(booksPath).calls.filter((c) => c.arguments.account === 'acct-1')).toHaveLength(1);
      killIfAlive(upstreamPid);
    });
  });

  describe('when the upstream MCP server is killed mid-call', () => {
    it('the call gets an outcome', async () => {
      const { gateway, upstreamPid } = await callInFlight('acct-2');
      process.kill(upstreamPid, 'SIGKILL');
      // The gateway may record what it saw itself (the call failed or its outcome is unknown);
      // if it stops first, the sweep records `unknown`. Either way the proposal has an outcome.
      const story = await eventually('an outcome', async () => {
        const found = (await wireStories()).find((s) => s.proposal.arguments.account === 'acct-2');
        return found?.observation ? found : undefined;
      });
      expect(story.observation!.outcome).not.toBe('succeeded');
      await gateway.close().catch(() => {});
    });
  });

  describe('when the agent disconnects mid-call', () => {
    it('the call gets an outcome', async () => {
      const { gateway, upstreamPid } = await callInFlight('acct-3');
      await gateway.close();
      const story = await eventually('an outcome', async () => {
        const found = (await wireStories()).find((s) => s.proposal.arguments.account === 'acct-3');
        return found?.observation ? found : undefined;
      });
      expect(story.observation!.outcome).not.toBe('succeeded');
      killIfAlive(upstreamPid);
    });
  });

  describe('after every crash above', () => {
    it('leaves no proposal without an outcome, and `vouch verify` finds the log intact', async () => {
      const stories = await wireStories();
      expect(stories).toHaveLength(3);
      for (const story of stories) expect(story.observation, story.proposal.id).not.toBeNull();
      // PGlite is one process's: stop the server, then verify the database as an auditor would.
      expect(await server.stop()).toBe(0);
      const verified = await runVouch(['verify'], { storage: storage(), cwd: dir });
      expect(verified.code, verified.stderr + verified.stdout).toBe(0);
    });
  });
});
