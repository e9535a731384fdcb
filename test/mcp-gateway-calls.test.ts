// Replays and crashes through the real `vouch-mcp-gateway` bin, with every peer in its own
// process: the agent (the MCP SDK's own client, over stdio or Streamable HTTP) -> the gateway
// -> the bank MCP server (stdio), and the gateway -> `vouch serve`, on each backend.
// What ran is read from the bank's own books, never from the gateway's or Vouch's account.
//
// - A recorded result is replayed only for the same agent and the same call, named by the
//   agent's idempotency key; a read always reads anew; agents never share a call.
// - After a crash (kill -9 of the gateway, the SDK's own close(), the upstream dying) the call
//   in flight is recorded `unknown` by the gateway itself, well before its claim's deadline
//   (asked from the invoke time limit), and the same call again does not run a second time.
// - After an agent cancels a read, the same read runs again.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createVouchClient, type VouchClient } from '@vouch/client';
import { type ExecutionMeta, META_KEY } from '@vouch/mcp-gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serverBackends } from './helpers/backends';
import { eventually, isRunning } from './helpers/eventually';
import { type BankBooks, readBooks, writeBooks } from './helpers/mcp-bank-upstream';
import {
  bankUpstream,
  type GatewayAgent,
  type HttpGatewayProcess,
  startGatewayAgent,
  startHttpGatewayProcess,
} from './helpers/mcp-gateway-process';
import { startVouchServer, type VouchServer } from './helpers/server';

type ProposalStory = Awaited<ReturnType<VouchClient['proposals']['get']>>;

const GATEWAY_IDENTITY = 'agent:bank-gateway';
const INVOKE_TIMEOUT_MS = 20_000;
const KEY_META = 'vouch.dev/idempotency_key';

const metaOf = (result: CallToolResult) => result._meta?.[META_KEY] as ExecutionMeta;
const textOf = (result: CallToolResult) =>
  result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n');

const killIfAlive = (pid: number) => {
  if (isRunning(pid)) process.kill(pid, 'SIGKILL');
};

describe.each(serverBackends())('calls through the gateway on $name', { timeout: 240_000 }, (backend) => {
  let dir: string;
  let server: VouchServer;
  let drop: () => Promise<void>;
  let booksPath: string;
  let gatewaySecret: string;
  let auditor: VouchClient;
  let approver: VouchClient;
  const open: GatewayAgent[] = [];

  /** A gateway config for the bank; `name` makes its file, `extra` is merged in. */
  const configOf = (
    name: string,
    extra: Record<string, unknown> = {},
    upstreamEnv: Record<string, string> = {},
  ) => {
    const path = join(dir, `${name}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        upstream: bankUpstream(booksPath, upstreamEnv),
        vouch: { url: server.url },
        serverId: 'bank',
        environment: 'production',
        tools: { wire_transfer: { target: { kind: 'account', idArgument: 'account' } } },
        invokeTimeoutMs: INVOKE_TIMEOUT_MS,
        journal: join(dir, 'journal'),
        ...extra,
      }),
    );
    return path;
  };
  const startAgent = async (configPath: string) => {
    const gateway = await startGatewayAgent({ configPath, apiKey: gatewaySecret });
    open.push(gateway);
    return gateway;
  };
  const call = async (gateway: GatewayAgent, name: string, args: Record<string, unknown>, key?: string) =>
    (await gateway.agent.callTool({
      name,
      arguments: args,
      ...(key === undefined ? {} : { _meta: { [KEY_META]: key } }),
    })) as CallToolResult;
  const callsTo = (tool: string, account: string) =>
    readBooks(booksPath).calls.filter((c) => c.tool === tool && c.arguments.account === account);

  /** The stories of every proposal for `tool` on `account`, oldest first. */
  const storiesOf = async (tool: string, account: string): Promise<ProposalStory[]> => {
    const page = await auditor.audit.events('default', { after: 0, limit: 1000 });
    const ids = page.events
      .filter(
        (e) => e.kind === 'proposal' && (JSON.parse(e.payload) as { tool_name: string }).tool_name === tool,
      )
      .map((e) => e.entity);
    const stories = await Promise.all(ids.map((id) => auditor.proposals.get(id)));
    return stories.filter((story) => story.proposal.arguments.account === account);
  };

  /** The one `wire_transfer` proposal for `account`: recorded `unknown` by the gateway, claimed with its own deadline. */
  const expectRecordedInDoubt = async (account: string, code: string) => {
    const stories = await storiesOf('wire_transfer', account);
    expect(stories).toHaveLength(1);
    const story = stories[0]!;
    expect(story.observation).toMatchObject({
      executed_by: GATEWAY_IDENTITY,
      outcome: 'unknown',
      result: { error: { code } },
    });
    expect(story.stage).not.toBe('authorized');
    const claim = story.claim!;
    expect((Date.parse(claim.deadline) - Date.parse(claim.claimed_at)) / 1000).toBe(
      INVOKE_TIMEOUT_MS / 1000 + 30,
    );
  };

  /** Start a gateway on `configPath`, send `wire_transfer` for `account`, resolve once the bank has the call. */
  const wireInFlight = async (configPath: string, account: string) => {
    const gateway = await startAgent(configPath);
    // Never answered by the bank: left pending (its rejection, when a process stops, is ignored).
    gateway.agent.callTool({ name: 'wire_transfer', arguments: { account } }).catch(() => {});
    const taken = await eventually('the bank to take the call', () => callsTo('wire_transfer', account)[0]);
    return { gateway, upstreamPid: taken.pid! };
  };

  /** A new gateway on `configPath` sends the same `wire_transfer`: it must not reach the bank again. */
  const expectNoSecondRun = async (configPath: string, account: string) => {
    const gateway = await startAgent(configPath);
    const again = await call(gateway, 'wire_transfer', { account }).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(Error);
    expect(String((again as Error).message)).toMatch(/unknown/);
    expect(callsTo('wire_transfer', account)).toHaveLength(1);
    await gateway.close();
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vouch-mcp-calls-'));
    const storage = await backend.setup(dir);
    drop = storage.drop;
    booksPath = join(dir, 'books.json');
    const accounts = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`acct-${i + 1}`, 100]));
    writeBooks(booksPath, { accounts, calls: [] } satisfies BankBooks);
    // The server's own claim deadline and sweep stay at their defaults (600 s): whatever is
    // recorded here in time, the gateway recorded.
    server = await startVouchServer({ storage: storage.storage, cwd: dir });
    const admin = createVouchClient({ baseUrl: server.url, apiKey: server.adminKey });
    gatewaySecret = (await admin.keys.create({ identity: GATEWAY_IDENTITY, roles: ['gateway'] })).secret;
    auditor = createVouchClient({
      baseUrl: server.url,
      apiKey: (await admin.keys.create({ identity: 'user:auditor', roles: ['auditor'] })).secret,
    });
    approver = createVouchClient({
      baseUrl: server.url,
      apiKey: (await admin.keys.create({ identity: 'user:alice', roles: ['approver'] })).secret,
    });
    for (const [tool_name, side_effect] of [
      ['get_balance', 'read_only'],
      ['close_account', 'idempotent'],
      ['wire_transfer', 'idempotent'],
    ] as const) {
      await admin.tools.register({
        server_id: 'bank',
        tool_name,
        side_effect,
        allowed_environments: ['production'],
      });
    }
  }, 120_000);

  afterAll(async () => {
    for (const gateway of open) await gateway.close().catch(() => {});
    for (const call of readBooks(booksPath).calls) if (call.pid) killIfAlive(call.pid);
    await server?.stop();
    await drop?.();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('when a gateway with a fixed session restarts', () => {
    it('a read answers what the account holds now, never an earlier result', async () => {
      const configPath = configOf('fixed-session', { session: 'desk-1' });
      const first = await startAgent(configPath);
      expect(textOf(await call(first, 'get_balance', { account: 'acct-1' }))).toBe('acct-1: 100');
      await first.close();
      const books = readBooks(booksPath);
      writeBooks(booksPath, { ...books, accounts: { ...books.accounts, 'acct-1': 150 } });

      const second = await startAgent(configPath);
      const read = await call(second, 'get_balance', { account: 'acct-1' });
      expect(textOf(read)).toBe('acct-1: 150');
      expect(metaOf(read)).toMatchObject({ status: 'executed', replayed: false });
      expect(callsTo('get_balance', 'acct-1')).toHaveLength(2);
      await second.close();
    });

    it('an identical write without a key is a new call, not a replay of the earlier one', async () => {
      const configPath = configOf('fixed-session-write', { session: 'desk-2' });
      const first = await startAgent(configPath);
      expect(metaOf(await call(first, 'close_account', { account: 'acct-2' }))).toMatchObject({
        replayed: false,
      });
      await first.close();
      const second = await startAgent(configPath);
      const again = await call(second, 'close_account', { account: 'acct-2' });
      // It ran, and the bank says so (the account is closed already).
      expect(metaOf(again)).toMatchObject({ status: 'executed', replayed: false, outcome: 'failed' });
      expect(textOf(again)).toBe('no account acct-2');
      expect(callsTo('close_account', 'acct-2')).toHaveLength(2);
      await second.close();
    });
  });

  describe('when a call waits for an approval and the gateway restarts', () => {
    it('the same call through the new gateway continues that proposal and runs once approved', async () => {
      // Claimed stricter than registered, so the policy asks a human.
      const configPath = configOf('approval', { tools: { close_account: { sideEffect: 'irreversible' } } });
      const first = await startAgent(configPath);
      const pending = metaOf(await call(first, 'close_account', { account: 'acct-14' }));
      expect(pending).toMatchObject({ status: 'approval_pending' });
      await first.close();
      await approver.approvals.approve(pending.approval!.request_id);

      const second = await startAgent(configPath);
      const ran = await call(second, 'close_account', { account: 'acct-14' });
      expect(metaOf(ran)).toMatchObject({
        status: 'executed',
        proposal_id: pending.proposal_id,
        replayed: false,
      });
      expect(textOf(ran)).toBe('closed acct-14');
      expect(callsTo('close_account', 'acct-14')).toHaveLength(1);
      await second.close();
    });
  });

  describe('when the agent names its call with an idempotency key', () => {
    it('replays the recorded result for that key, across a restart, and never runs it twice', async () => {
      const configPath = configOf('agent-key');
      const first = await startAgent(configPath);
      const ran = await call(first, 'close_account', { account: 'acct-3' }, 'close-acct-3');
      expect(metaOf(ran)).toMatchObject({ status: 'executed', replayed: false, outcome: 'succeeded' });
      await first.close();
      const second = await startAgent(configPath);
      const replayed = await call(second, 'close_account', { account: 'acct-3' }, 'close-acct-3');
      expect(metaOf(replayed)).toMatchObject({
        status: 'executed',
        replayed: true,
        proposal_id: metaOf(ran).proposal_id,
      });
      expect(textOf(replayed)).toBe('closed acct-3');
      expect(callsTo('close_account', 'acct-3')).toHaveLength(1);
      await second.close();
    });

    it('refuses the same key for other arguments, without calling that safe to try again', async () => {
      const gateway = await startAgent(configOf('agent-key-conflict'));
      await call(gateway, 'close_account', { account: 'acct-4' }, 'close-once');
      const conflict = await call(gateway, 'close_account', { account: 'acct-5' }, 'close-once');
      expect(conflict.isError).toBe(true);
      expect(metaOf(conflict)).toMatchObject({ status: 'error', code: 'IDEMPOTENCY_CONFLICT' });
      expect(textOf(conflict)).not.toMatch(/safe to call again/);
      expect(textOf(conflict)).toMatch(/new key/);
      expect(callsTo('close_account', 'acct-5')).toHaveLength(0);
      await gateway.close();
    });

    it('refuses a malformed key with IDEMPOTENCY_KEY_INVALID, proposing nothing', async () => {
      const gateway = await startAgent(configOf('agent-key-invalid'));
      const refused = await call(gateway, 'close_account', { account: 'acct-6' }, 'has a space').catch(
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({ code: -32602, data: { code: 'IDEMPOTENCY_KEY_INVALID' } });
      expect(await storiesOf('close_account', 'acct-6')).toEqual([]);
      await gateway.close();
    });
  });

  describe('when two agents over HTTP share a Vouch identity and make the same call', () => {
    let http: HttpGatewayProcess;
    let httpConfig: string;
    let httpEnv: Record<string, string>;
    const tokens = { a: randomBytes(24).toString('base64url'), b: randomBytes(24).toString('base64url') };
    const agentOver = async (token: string) => {
      const agent = new Client({ name: 'http-agent', version: '0.0.0' });
      await agent.connect(
        new StreamableHTTPClientTransport(new URL(http.url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      return agent;
    };

    beforeAll(async () => {
      const admin = createVouchClient({ baseUrl: server.url, apiKey: server.adminKey });
      const keyOf = async () =>
        (await admin.keys.create({ identity: 'agent:desk', roles: ['gateway'] })).secret;
      const sha = (token: string) => createHash('sha256').update(token).digest('hex');
      httpConfig = configOf('http', {
        session: 'shared',
        agentServer: {
          port: 0,
          agents: [
            { name: 'agent-a', tokenSha256: sha(tokens.a), apiKeyEnv: 'AGENT_A_KEY' },
            { name: 'agent-b', tokenSha256: sha(tokens.b), apiKeyEnv: 'AGENT_B_KEY' },
          ],
        },
      });
      httpEnv = { AGENT_A_KEY: await keyOf(), AGENT_B_KEY: await keyOf() };
      http = await startHttpGatewayProcess({ configPath: httpConfig, env: httpEnv });
    });
    afterAll(async () => {
      await http?.stop();
    });

    it('runs agent B’s call for agent B: never agent A’s result, never a conflict', async () => {
      const a = await agentOver(tokens.a);
      const ranForA = (await a.callTool({
        name: 'close_account',
        arguments: { account: 'acct-7' },
      })) as CallToolResult;
      expect(textOf(ranForA)).toBe('closed acct-7');
      await a.close();

      const b = await agentOver(tokens.b);
      for (let attempt = 0; attempt < 2; attempt++) {
        const ranForB = (await b.callTool({
          name: 'close_account',
          arguments: { account: 'acct-7' },
        })) as CallToolResult;
        expect(metaOf(ranForB)).toMatchObject({ status: 'executed', replayed: false });
        expect(metaOf(ranForB).proposal_id).not.toBe(metaOf(ranForA).proposal_id);
        expect(textOf(ranForB)).toBe('no account acct-7');
      }
      expect(callsTo('close_account', 'acct-7')).toHaveLength(3);
      await b.close();
    });

    it('after a kill -9, the restarted gateway records the agent’s call unknown and does not run it again', async () => {
      const a = await agentOver(tokens.a);
      a.callTool({ name: 'wire_transfer', arguments: { account: 'acct-13' } }).catch(() => {});
      const taken = await eventually(
        'the bank to take the call',
        () => callsTo('wire_transfer', 'acct-13')[0],
      );
      process.kill(http.pid, 'SIGKILL');
      killIfAlive(taken.pid!);
      await a.close().catch(() => {});
      http = await startHttpGatewayProcess({ configPath: httpConfig, env: httpEnv });
      // Recorded before the gateway listened, by the agent's own identity.
      const [story] = await storiesOf('wire_transfer', 'acct-13');
      expect(story!.observation).toMatchObject({
        executed_by: 'agent:desk',
        outcome: 'unknown',
        result: { error: { code: 'EXECUTION_IN_DOUBT' } },
      });
      const again = await agentOver(tokens.a);
      const refused = await again
        .callTool({ name: 'wire_transfer', arguments: { account: 'acct-13' } })
        .catch((error: unknown) => error);
      expect(String((refused as Error).message)).toMatch(/unknown/);
      expect(callsTo('wire_transfer', 'acct-13')).toHaveLength(1);
      await again.close();
    });

    it('keeps the keys agents send apart: the same key from agent B is agent B’s own call', async () => {
      const a = await agentOver(tokens.a);
      const b = await agentOver(tokens.b);
      const args = {
        name: 'close_account',
        arguments: { account: 'acct-8' },
        _meta: { [KEY_META]: 'same-key' },
      };
      expect(metaOf((await a.callTool(args)) as CallToolResult)).toMatchObject({ replayed: false });
      const ofB = (await b.callTool(args)) as CallToolResult;
      expect(metaOf(ofB)).toMatchObject({ status: 'executed', replayed: false });
      expect(callsTo('close_account', 'acct-8')).toHaveLength(2);
      await a.close();
      await b.close();
    });
  });

  describe('when the agent cancels a read', () => {
    it('the same read afterwards runs and answers', async () => {
      const release = join(dir, 'release-reads');
      const gateway = await startAgent(configOf('cancel', {}, { BANK_HOLD_UNTIL: release }));
      const cancel = new AbortController();
      const cancelled = gateway.agent
        .callTool({ name: 'get_balance', arguments: { account: 'acct-9' } }, undefined, {
          signal: cancel.signal,
        })
        .catch((error: unknown) => error);
      await eventually('the bank to take the read', () => callsTo('get_balance', 'acct-9')[0]);
      cancel.abort('the agent changed its mind');
      expect(await cancelled).toBeInstanceOf(Error);
      writeFileSync(release, '');
      const read = await call(gateway, 'get_balance', { account: 'acct-9' });
      expect(read.isError ?? false).toBe(false);
      expect(textOf(read)).toBe('acct-9: 100');
      expect(metaOf(read)).toMatchObject({ status: 'executed', replayed: false });
      expect(callsTo('get_balance', 'acct-9')).toHaveLength(2);
      await gateway.close();
    });
  });

  describe('when the gateway is killed (SIGKILL) mid-call', () => {
    it('the restarted gateway records the call unknown at once, and the same call does not run again', async () => {
      const configPath = configOf('kill-9');
      const { gateway, upstreamPid } = await wireInFlight(configPath, 'acct-10');
      process.kill(gateway.pid, 'SIGKILL');
      killIfAlive(upstreamPid);
      // Nothing has recorded the call yet: its claim is `authorized` until its deadline.
      expect((await storiesOf('wire_transfer', 'acct-10'))[0]!.stage).toBe('authorized');
      await expectNoSecondRun(configPath, 'acct-10');
      await expectRecordedInDoubt('acct-10', 'EXECUTION_IN_DOUBT');
    });
  });

  describe('when the agent stops the gateway with the SDK’s own close()', () => {
    it('the gateway records the running call unknown before it is killed, and the same call does not run again', async () => {
      const configPath = configOf('sdk-close');
      const { gateway, upstreamPid } = await wireInFlight(configPath, 'acct-11');
      // StdioClientTransport.close(): stdin closed, 2 s, SIGTERM, 2 s, SIGKILL. Only the live
      // gateway records INVOKE_ABORTED (a restart records EXECUTION_IN_DOUBT instead).
      await gateway.close();
      killIfAlive(upstreamPid);
      await expectRecordedInDoubt('acct-11', 'INVOKE_ABORTED');
      await expectNoSecondRun(configPath, 'acct-11');
    });
  });

  describe('when the upstream MCP server dies mid-call', () => {
    it('the gateway records the call unknown, and the same call through a new gateway does not run again', async () => {
      const configPath = configOf('upstream-crash');
      const { gateway, upstreamPid } = await wireInFlight(configPath, 'acct-12');
      process.kill(upstreamPid, 'SIGKILL');
      // Without its upstream the gateway stops (after recording what it saw).
      await eventually('the gateway to stop', () => (isRunning(gateway.pid) ? undefined : true));
      const stories = await storiesOf('wire_transfer', 'acct-12');
      expect(stories[0]!.observation).toMatchObject({ executed_by: GATEWAY_IDENTITY, outcome: 'unknown' });
      await expectNoSecondRun(configPath, 'acct-12');
      expect(await storiesOf('wire_transfer', 'acct-12')).toHaveLength(1);
    });
  });
});
