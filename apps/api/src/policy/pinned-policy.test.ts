import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRecords, type Records } from '@vouch/ledger';
import { forgeRecords, testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createMemoryLogger } from '../logger';
import type { PolicySettings } from '../settings/server-settings';
import { createHarness, type Harness } from '../testing/app-harness';
import { createExternalDecider } from './external-decider';
import { pinnedPolicyOf } from './pinned-policy';

// docs/chain.md, "The policy is pinned", through the HTTP API: the server pins the policy its
// settings name (`pinnedPolicyOf`, as `vouch serve` does) and never acts on a decision from
// another source, whoever appended it.

// biome-ignore lint/suspicious/noExplicitAny: answers are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

/** A loopback engine that allows everything. */
async function allowingEngine(): Promise<{ url: string; stop: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ result: { decision: 'allow' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/data/vouch/decision`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe.each(testBackends())('the pinned policy through the HTTP API on $name', ({ open }) => {
  let h: Harness;
  let engine: Awaited<ReturnType<typeof allowingEngine>>;
  const k = {} as Record<'admin' | 'gw' | 'opa' | 'auditor', string>;
  let logs = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    engine = await allowingEngine();
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.opa = await h.keyFor('service:opa', ['policy']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
  });
  afterAll(async () => {
    await engine?.stop();
    await h?.close();
  });

  /** A server over the shared database with these policy settings (a start of `vouch serve`). */
  const serverWith = (policy: PolicySettings): { app: VouchApp; records: Records } => {
    const records = createRecords(h.ledger, { pinnedPolicy: pinnedPolicyOf(policy) });
    const asked =
      'decisionUrl' in policy
        ? { policyEngine: createExternalDecider({ engine: policy, records, logger: createMemoryLogger() }) }
        : {};
    return { app: createApp({ ledger: h.ledger, keys: h.keys, records, ...asked }), records };
  };
  const builtIn = () => serverWith({ engine: 'built_in' });
  const askingOpa = () =>
    serverWith({
      engine: 'external',
      // A query in the URL (it could carry a credential) must not end up in the log.
      decisionUrl: `${engine.url}?token=t0ken`,
      allowHosts: ['127.0.0.1'],
      identity: 'service:opa',
      source: 'opa',
      timeoutMs: 10_000,
      retrySeconds: 60,
    });

  async function call(app: VouchApp, method: string, path: string, key: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** A log with the payout tool, which needs an approval under the built-in policy. */
  const newLog = async (app: VouchApp) => {
    const log = `pinned-${++logs}`;
    const tool = {
      server_id: 'pay',
      tool_name: 'payout',
      side_effect: 'compensatable',
      approval_required: true,
    };
    expect((await call(app, 'POST', `/v1/tools?log=${log}`, k.admin, tool)).status).toBe(201);
    return log;
  };
  let n = 0;
  const propose = (app: VouchApp, log: string) =>
    call(app, 'POST', `/v1/proposals?log=${log}`, k.gw, {
      idempotency_key: `pin-${++n}`,
      action: 'pay.payout',
      server_id: 'pay',
      tool_name: 'payout',
      target: { kind: 'account', id: `acc_${n}`, env: 'production' },
      arguments: { amount: n },
      side_effect: 'compensatable',
    });
  const allow = {
    verdict: 'allow',
    source: 'opa',
    reasons: [{ code: 'OPA', effect: 'allow', message: 'ok' }],
  };
  const verify = async (app: VouchApp, log: string) =>
    (await call(app, 'GET', `/v1/logs/${log}/verify`, k.auditor)).body;

  describe('a server of the built-in policy; the runtime role appends an allow labelled external, by a live policy key', () => {
    it('authorize and the story refuse it (409 DECISION_SOURCE_NOT_PINNED), /readyz raises the alarm, and verify reports it', async () => {
      const { app } = builtIn();
      const log = await newLog(app);
      const honest = await propose(app, log);
      expect(honest.body.decision.verdict).toBe('require_approval');
      await forgeRecords(h.ledger, log, (tx, now) => {
        tx.write('proposal', 'agent:gw', {
          ...honest.body.proposal,
          id: 'prop_forged',
          idempotency_key: 'pin-forged',
          proposed_at: now,
        });
        tx.write('decision', 'service:opa', {
          id: 'dec_forged',
          proposal_id: 'prop_forged',
          verdict: 'allow',
          reasons: [{ code: 'OPA', effect: 'allow', message: 'ok' }],
          repair: null,
          authorized_identity: 'agent:gw',
          source: 'opa',
          tool_id: honest.body.decision.tool_id,
          approval_request_id: null,
          decided_by: 'service:opa',
          decided_at: now,
        });
      });
      const authorized = await call(app, 'POST', `/v1/proposals/prop_forged/authorize?log=${log}`, k.gw, {});
      expect(authorized).toMatchObject({
        status: 409,
        body: { error: { code: 'DECISION_SOURCE_NOT_PINNED' } },
      });
      const story = await call(app, 'GET', `/v1/proposals/prop_forged?log=${log}`, k.auditor);
      expect(story).toMatchObject({ status: 409, body: { error: { code: 'DECISION_SOURCE_NOT_PINNED' } } });
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        integrity: {
          alarms: expect.arrayContaining([
            expect.objectContaining({ code: 'RECORD_RULE_VIOLATION', log, table: 'decisions' }),
          ]),
        },
      });
      expect((await verify(app, log)).failures).toEqual([
        expect.objectContaining({ rule: 'DECISION_SOURCE_NOT_PINNED', table: 'decisions', id: 'dec_forged' }),
      ]);
    });

    it('a policy key cannot post a decision to it (409, nothing written)', async () => {
      const { app } = builtIn();
      const log = await newLog(app);
      const { proposal } = (await propose(app, log)).body;
      const head = (await h.ledger.head(log))!.seq;
      const posted = await call(
        app,
        'POST',
        `/v1/proposals/${proposal.id}/decision?log=${log}`,
        k.opa,
        allow,
      );
      expect(posted).toMatchObject({ status: 409, body: { error: { code: 'DECISION_SOURCE_NOT_PINNED' } } });
      expect((await h.ledger.head(log))!.seq).toBe(head);
    });
  });

  it('a server that asks an external engine pins it without secrets, and its decisions execute and verify', async () => {
    const { app } = askingOpa();
    const log = await newLog(app);
    const proposed = await propose(app, log);
    expect(proposed).toMatchObject({ status: 201, body: { decision: { verdict: 'allow', source: 'opa' } } });
    const id = proposed.body.proposal.id;
    expect((await call(app, 'POST', `/v1/proposals/${id}/authorize?log=${log}`, k.gw, {})).status).toBe(200);
    const events = (await call(app, 'GET', `/v1/logs/${log}/events`, k.auditor)).body.events as Json[];
    const pins = events.filter((e) => e.kind === 'policy.configured');
    expect(pins.map((e) => JSON.parse(e.payload))).toEqual([
      {
        format: 'policy/1',
        policy: {
          engine: 'external',
          decisions: 'asked',
          decision_url: engine.url,
          identity: 'service:opa',
          source: 'opa',
        },
      },
    ]);
    expect(JSON.stringify(events)).not.toMatch(/t0ken/);
    expect(await verify(app, log)).toMatchObject({ ok: true, failures: [] });
  });

  it('a change of configuration is recorded, and decisions before and after are judged by theirs', async () => {
    const first = builtIn();
    const log = await newLog(first.app);
    const before = await propose(first.app, log);
    expect(before.body.decision.verdict).toBe('require_approval');
    // Restarted with an engine that posts its decisions.
    const second = serverWith({ engine: 'external' });
    const after = await propose(second.app, log);
    expect(after.status).toBe(202);
    const id = after.body.proposal.id;
    expect(
      (await call(second.app, 'POST', `/v1/proposals/${id}/decision?log=${log}`, k.opa, allow)).status,
    ).toBe(201);
    expect(
      (await call(second.app, 'POST', `/v1/proposals/${id}/authorize?log=${log}`, k.gw, {})).status,
    ).toBe(200);
    // The built-in decision of before still reads: it is judged by the pin of its time.
    const told = await call(
      second.app,
      'GET',
      `/v1/proposals/${before.body.proposal.id}?log=${log}`,
      k.auditor,
    );
    expect(told).toMatchObject({ status: 200, body: { decision: { source: 'built_in' } } });
    const events = (await call(second.app, 'GET', `/v1/logs/${log}/events`, k.auditor)).body.events as Json[];
    expect(
      events.filter((e) => e.kind === 'policy.configured').map((e) => JSON.parse(e.payload).policy),
    ).toEqual([{ engine: 'built_in' }, { engine: 'external', decisions: 'posted' }]);
    expect(await verify(second.app, log)).toMatchObject({ ok: true, failures: [] });
  });
});
