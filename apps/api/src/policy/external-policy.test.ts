import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createLedger,
  createRecords,
  type Database,
  type Ledger,
  OPERATOR_ACTOR,
  type Records,
} from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { createMemoryLogger } from '../logger';
import { createMetrics, type Metrics } from '../metrics/metrics';
import type { PolicyEngineSettings } from '../settings/server-settings';
import { createExternalDecider, type ExternalDecider, startPolicyRetryLoop } from './external-decider';

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

const TOKEN = 'opa-token-s3cr3t-0123456789abcdef';

/** A loopback OPA stand-in: answers with whatever `reply` says, and remembers what it was asked. */
class FakeEngine {
  reply: (input: Json) => { status?: number; body: string | Json; delayMs?: number } = () => ({
    body: { result: { decision: 'allow' } },
  });
  asked: Array<{ headers: IncomingMessage['headers']; body: Json }> = [];
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    this.asked.push({ headers: req.headers, body });
    const answer = this.reply(body.input);
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    if (res.destroyed) return;
    res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
    res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
  }
}

describe.each(testBackends())('an external policy engine the server asks, on $name', ({ open }) => {
  let database: Database;
  let ledger: Ledger;
  let records: Records;
  let app: VouchApp;
  let decider: ExternalDecider;
  let metrics: Metrics;
  const logger = createMemoryLogger();
  const engine = new FakeEngine();
  const key = {} as Record<'admin' | 'gw' | 'alice' | 'auditor', string>;
  let settings: PolicyEngineSettings;
  let keys: ReturnType<typeof createKeyStore>;

  beforeAll(async () => {
    await engine.start();
    settings = {
      decisionUrl: `http://127.0.0.1:${engine.port}/v1/data/vouch/decision`,
      allowHosts: ['127.0.0.1'],
      identity: 'service:opa',
      source: 'opa',
      // Generous: an answer must never miss it on a loaded machine. The timeout test sets its own.
      timeoutMs: 10_000,
      retrySeconds: 60,
      token: { header: 'authorization', value: TOKEN },
    };
    database = await open();
    ledger = createLedger(database);
    records = createRecords(ledger, { policy: 'external' });
    metrics = createMetrics({ database });
    decider = createExternalDecider({ engine: settings, records, logger, metrics });
    keys = createKeyStore(ledger);
    app = createApp({ ledger, keys, records, logger, metrics, policyEngine: decider });
    const issue = async (
      identity: string,
      roles: Array<'admin' | 'gateway' | 'approver' | 'auditor' | 'policy'>,
    ) =>
      (
        await keys.create({
          identity,
          roles,
          scopes: [],
          environments: null,
          logs: null,
          createdBy: OPERATOR_ACTOR,
        })
      ).secret;
    key.admin = await issue('user:root', ['admin']);
    key.gw = await issue('agent:gw', ['gateway']);
    key.alice = await issue('user:alice', ['approver']);
    key.auditor = await issue('user:audrey', ['auditor']);
    // The engine's identity holds a policy key, unused: the decisions it is asked for are written in
    // its name, and verification judges every record's writer by the keys it held (docs/chain.md).
    await issue('service:opa', ['policy']);
    for (const tool of [
      { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' },
      { server_id: 'pay', tool_name: 'lookup', side_effect: 'read_only' },
    ]) {
      expect((await call('POST', '/v1/tools', key.admin, tool)).status).toBe(201);
    }
  });
  afterAll(async () => {
    await engine.stop();
    await ledger.close();
    await database.close();
  });

  async function call(method: string, path: string, bearer: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  let n = 0;
  const propose = (tool = 'refund') => {
    n++;
    return call('POST', '/v1/proposals', key.gw, {
      idempotency_key: `ext-${n}`,
      action: `pay.${tool}`,
      server_id: 'pay',
      tool_name: tool,
      target: { kind: 'account', id: `acct-${n}`, env: 'production' },
      arguments: { amount: n },
      side_effect: tool === 'lookup' ? 'read_only' : 'compensatable',
    });
  };
  const story = async (id: string) => (await call('GET', `/v1/proposals/${id}`, key.auditor)).body;
  const warnings = (code: string) =>
    logger.lines.filter((line) => line.level === 'warn' && line.code === code);

  it('records an allow as the decision, by the engine identity, from an OPA-style question', async () => {
    engine.asked = [];
    engine.reply = () => ({ body: { result: { decision: 'allow', reason: 'refunds under 100 are fine' } } });
    const proposed = await propose();
    expect(proposed.status).toBe(201);
    expect(proposed.body.decision).toMatchObject({
      verdict: 'allow',
      source: 'opa',
      decided_by: 'service:opa',
      authorized_identity: 'agent:gw',
      reasons: [{ code: 'EXTERNAL_ALLOW', effect: 'allow', message: 'refunds under 100 are fine' }],
    });
    expect(engine.asked).toHaveLength(1);
    expect(engine.asked[0]!.body).toEqual({
      input: {
        log: 'default',
        proposal: expect.objectContaining({ id: proposed.body.proposal.id, tool_name: 'refund' }),
      },
    });
    expect(engine.asked[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(engine.asked[0]!.headers['vouch-proposal']).toBe(proposed.body.proposal.id);
    const told = await story(proposed.body.proposal.id);
    expect(told.decision.id).toBe(proposed.body.decision.id);
    // The decision event's actor is the engine, as if it had posted the decision itself.
    const event = told.events.find((e: Json) => e.kind === 'decision');
    expect(event.actor).toBe('service:opa');
  });

  it('records a deny with its reasons, and the gateway cannot execute it', async () => {
    engine.reply = () => ({
      body: {
        result: {
          decision: 'deny',
          reasons: [{ code: 'OVER_LIMIT', message: 'refund above the limit', details: { limit: 100 } }],
          ignored_by_vouch: true,
        },
      },
    });
    const proposed = await propose();
    expect(proposed.status).toBe(201);
    expect(proposed.body.decision).toMatchObject({
      verdict: 'deny',
      authorized_identity: null,
      reasons: [
        { code: 'OVER_LIMIT', effect: 'deny', message: 'refund above the limit', details: { limit: 100 } },
      ],
    });
    const authorize = await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, key.gw, {});
    expect(authorize.status).toBe(403);
    expect(authorize.body.error.code).toBe('EXECUTION_NOT_AUTHORIZED');
  });

  it('opens an approval request for require_approval, which a human then answers', async () => {
    engine.reply = () => ({
      body: { result: { decision: 'require_approval', code: 'FOUR_EYES', reason: 'a human looks' } },
    });
    const proposed = await propose();
    expect(proposed.status).toBe(201);
    expect(proposed.body.decision).toMatchObject({
      verdict: 'require_approval',
      reasons: [{ code: 'FOUR_EYES' }],
    });
    expect(proposed.body.approval).toMatchObject({ id: proposed.body.decision.approval_request_id });
    const approved = await call('POST', `/v1/approvals/${proposed.body.approval.id}/approve`, key.alice, {});
    expect(approved.status).toBe(200);
  });

  it('leaves the proposal waiting when the engine is down, and the retry loop records the decision once it is up', async () => {
    const port = engine.port;
    await engine.stop();
    const before = await metrics.scrape();
    const proposed = await propose();
    expect(proposed.status).toBe(202);
    expect(proposed.body.decision).toBeNull();
    expect(warnings('ENGINE_UNREACHABLE').at(-1)).toMatchObject({ proposal_id: proposed.body.proposal.id });
    expect(await metrics.scrape()).not.toBe(before);
    expect(await metrics.scrape()).toMatch(
      /vouch_policy_engine_answers_total\{outcome="ENGINE_UNREACHABLE"\} [1-9]/,
    );
    // Down: a retry round decides nothing and allows nothing.
    expect(await decider.retryUndecided()).toBe(0);
    expect((await story(proposed.body.proposal.id)).decision).toBeNull();
    await engine.start(port);
    engine.reply = (input) => ({
      body: { result: { decision: input.proposal.id === proposed.body.proposal.id ? 'deny' : 'allow' } },
    });
    expect(await decider.retryUndecided()).toBeGreaterThanOrEqual(1);
    const told = await story(proposed.body.proposal.id);
    expect(told.decision).toMatchObject({ verdict: 'deny', decided_by: 'service:opa' });
  });

  it('asks about proposals left undecided before a restart, from a fresh process', async () => {
    engine.reply = () => ({ status: 503, body: { error: 'warming up' } });
    const proposed = await propose('lookup');
    expect(proposed.status).toBe(202);
    expect(warnings('ENGINE_HTTP_STATUS').at(-1)).toMatchObject({ status: 503 });
    engine.reply = () => ({ body: { result: { decision: 'allow' } } });
    // A new server over the same database: its loop's first round runs at once.
    const restarted = createExternalDecider({
      engine: settings,
      records: createRecords(ledger, { policy: 'external' }),
      logger,
    });
    const loop = startPolicyRetryLoop({ decider: restarted, intervalMs: 60_000, logger });
    await loop.close();
    expect((await story(proposed.body.proposal.id)).decision).toMatchObject({ verdict: 'allow' });
  });

  it.each([
    ['not JSON', '<html>oops</html>', 'not JSON'],
    ['no result (an undefined rule)', {}, 'no result'],
    ['an unknown decision', { result: { decision: 'maybe' } }, 'result.decision'],
    ['a repair without the repair', { result: { decision: 'repair' } }, 'repair'],
    ['a reason that is not text', { result: { decision: 'deny', reason: 42 } }, 'result.reason'],
    // JSON.parse keeps the last of two keys, another reader the first: which was the engine's answer?
    ['a decision given twice', '{"result":{"decision":"deny","decision":"allow"}}', 'twice'],
    ['a result given twice', '{"result":{"decision":"deny"},"result":{"decision":"allow"}}', 'twice'],
    [
      'a reason code given twice',
      '{"result":{"decision":"allow","reasons":[{"code":"A","message":"m","code":"B"}]}}',
      'twice',
    ],
  ])('never records a malformed answer (%s): the proposal waits', async (_name, body, why) => {
    engine.reply = () => ({ body });
    const proposed = await propose();
    expect(proposed.status).toBe(202);
    expect(proposed.body.decision).toBeNull();
    const warning = warnings('ENGINE_ANSWER_INVALID').at(-1);
    expect(warning).toMatchObject({ proposal_id: proposed.body.proposal.id });
    expect(String(warning?.reason)).toContain(why);
    expect((await story(proposed.body.proposal.id)).decision).toBeNull();
    engine.reply = () => ({ body: { result: { decision: 'deny' } } });
    await decider.retryUndecided();
    expect((await story(proposed.body.proposal.id)).decision.verdict).toBe('deny');
  });

  it('gives up on a slow engine after the timeout and leaves the proposal waiting', async () => {
    // The engine would allow, but only after 2 s; this server waits 200 ms for it.
    const impatient = createApp({
      ledger,
      keys,
      records,
      logger,
      metrics,
      policyEngine: createExternalDecider({
        engine: { ...settings, timeoutMs: 200 },
        records,
        logger,
        metrics,
      }),
    });
    engine.reply = () => ({ delayMs: 2_000, body: { result: { decision: 'allow' } } });
    n++;
    const response = await impatient.request('/v1/proposals', {
      method: 'POST',
      headers: { authorization: `Bearer ${key.gw}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        idempotency_key: `ext-${n}`,
        action: 'pay.refund',
        server_id: 'pay',
        tool_name: 'refund',
        target: { kind: 'account', id: `acct-${n}`, env: 'production' },
        arguments: { amount: n },
        side_effect: 'compensatable',
      }),
    });
    const proposed = { status: response.status, body: (await response.json()) as Json };
    expect(proposed.status).toBe(202);
    expect(warnings('ENGINE_TIMEOUT').at(-1)).toMatchObject({ proposal_id: proposed.body.proposal.id });
    // The late allow, once it arrives, is not taken as the decision.
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    expect((await story(proposed.body.proposal.id)).decision).toBeNull();
    engine.reply = () => ({ body: { result: { decision: 'allow' } } });
    await decider.retryUndecided();
  });

  it('keeps an unregistered tool unexecutable whatever the engine says (DECISION_REFUSED)', async () => {
    engine.reply = () => ({ body: { result: { decision: 'allow' } } });
    const proposed = await propose('wire');
    expect(proposed.status).toBe(202);
    expect(warnings('DECISION_REFUSED').at(-1)).toMatchObject({ ledger_code: 'TOOL_NOT_REGISTERED' });
    // Its own decision, posted by hand, settles it for good.
    await records.decide(
      { log: 'default', caller: { identity: 'service:opa' } },
      {
        proposal_id: proposed.body.proposal.id,
        verdict: 'deny',
        source: 'opa',
        reasons: [{ code: 'X', effect: 'deny', message: 'no' }],
      },
    );
  });

  it('refuses an engine on an internal address without allowHosts (ENGINE_FORBIDDEN)', async () => {
    const guarded = createExternalDecider({ engine: { ...settings, allowHosts: [] }, records, logger });
    const { proposal } = await records.propose(
      { log: 'default', caller: { identity: 'agent:gw' } },
      {
        idempotency_key: 'ssrf-1',
        action: 'pay.refund',
        server_id: 'pay',
        tool_name: 'refund',
        target: { kind: 'account', id: 'a', env: 'production' },
        arguments: {},
        side_effect: 'compensatable',
      },
    );
    engine.asked = [];
    expect(await guarded.decide('default', proposal)).toMatchObject({
      status: 'undecided',
      code: 'ENGINE_FORBIDDEN',
    });
    expect(engine.asked).toHaveLength(0);
    await decider.decide('default', proposal);
  });

  it('walks every undecided proposal of every log in pages, past ones that stay stuck', async () => {
    engine.reply = () => ({ body: { result: { decision: 'allow' } } });
    const direct = (log: string, tool: string, key: string) =>
      records.propose(
        { log, caller: { identity: 'agent:gw' } },
        {
          idempotency_key: key,
          action: `pay.${tool}`,
          server_id: 'pay',
          tool_name: tool,
          target: { kind: 'account', id: key, env: 'production' },
          arguments: {},
          side_effect: 'read_only',
        },
      );
    // First in order, and never decidable: an allow of an unregistered tool.
    const stuck = await direct('a-first', 'wire', 'page-stuck');
    await call('POST', '/v1/tools?log=b-second', key.admin, {
      server_id: 'pay',
      tool_name: 'lookup',
      side_effect: 'read_only',
    });
    const waiting = [
      await direct('a-first', 'wire', 'page-stuck-2'),
      await direct('b-second', 'lookup', 'page-1'),
      await direct('b-second', 'lookup', 'page-2'),
    ];
    const paged = createExternalDecider({ engine: settings, records, logger, pageSize: 1 });
    expect(await paged.retryUndecided()).toBe(2);
    for (const { proposal } of waiting.slice(1)) {
      expect((await records.story('b-second', proposal.id)).decision).toMatchObject({ verdict: 'allow' });
    }
    for (const { proposal } of [stuck, waiting[0]!]) {
      expect((await records.story('a-first', proposal.id)).decision).toBeNull();
    }
  });

  it('keeps the token out of the log, the answers and the ledger', async () => {
    const lines = JSON.stringify(logger.lines);
    expect(lines).not.toContain(TOKEN);
    expect(lines).toContain('ENGINE_TIMEOUT');
    const rows = await database.rows(sql`select * from audit_events`);
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain(TOKEN);
    expect(await metrics.scrape()).not.toContain(TOKEN);
    const verify = await call('GET', '/v1/logs/default/verify', key.auditor);
    expect(verify.body).toMatchObject({ ok: true });
  });
});
