import { createVouchClient } from '@vouch/client';
import { createRecords } from '@vouch/ledger';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

// What must be proven belongs to the operator (issue #32): the tool registration's required
// postconditions are added to every proposal at propose, bound to its payload, whatever the
// gateway declares; names an approver reads are plain identifiers; idempotency keys are each
// requester's own. Everything through HTTP, on both backends.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

const REFUND_RECORDED = {
  name: 'refund.recorded',
  params: {
    order_id: { pointer: '/arguments/order_id' },
    cents: { cel: 'arguments.amount * 100.0' },
    currency: { value: 'EUR' },
  },
};

describe.each(testBackends())('required postconditions on $name', ({ open }) => {
  let h: Harness;
  let external: VouchApp;
  const k = {} as Record<'admin' | 'gw' | 'gwB' | 'verifier' | 'approver' | 'auditor', string>;
  let logNo = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    // The same database, with an external policy engine deciding later (no decision URL: 202).
    external = createApp({
      ledger: h.ledger,
      keys: h.keys,
      records: createRecords(h.ledger, { policy: 'external' }),
    });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw-a', ['gateway']);
    k.gwB = await h.keyFor('agent:gw-b', ['gateway']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.approver = await h.keyFor('user:alice', ['approver']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown, app: VouchApp = h.app) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** A fresh log with `pay/refund` registered as given; `q` is its query string. */
  async function freshLog(tool: Json = { postconditions: [REFUND_RECORDED] }) {
    const q = `?log=refunds-${++logNo}`;
    const registered = await call('POST', `/v1/tools${q}`, k.admin, {
      server_id: 'pay',
      tool_name: 'refund',
      side_effect: 'compensatable',
      ...tool,
    });
    expect(registered.status).toBe(201);
    return { q, tool: registered.body.tool as Json };
  }

  let n = 0;
  const refund = (extra: Json = {}) => ({
    idempotency_key: `r-${++n}`,
    action: 'pay.refund',
    server_id: 'pay',
    tool_name: 'refund',
    target: { kind: 'payment', id: 'pay_1', env: 'production' },
    arguments: { order_id: 'ord_7', amount: 5 },
    side_effect: 'compensatable',
    ...extra,
  });

  describe('when a name an approver reads is not a plain identifier', () => {
    it.each([
      [
        'a postcondition named with a zero-width space',
        { postconditions: [{ name: 'refund.recorded\u200b' }] },
        '/postconditions/0/name',
      ],
      [
        'a precondition with a Cyrillic а',
        { preconditions: [{ name: 'p\u0430yment.exists' }] },
        '/preconditions/0/name',
      ],
      ['an action with a space', { action: 'pay refund' }, '/action'],
      ['a tool name with a right-to-left mark', { tool_name: 'refund\u200f' }, '/tool_name'],
      [
        'a target kind in fullwidth letters',
        { target: { kind: 'ｐayment', id: 'p', env: 'production' } },
        '/target/kind',
      ],
    ])('refuses %s with 400 IDENTIFIER_INVALID and writes nothing', async (_, body, path) => {
      const { q } = await freshLog();
      const before = await h.rowCounts();
      const refused = await call('POST', `/v1/proposals${q}`, k.gw, refund(body));
      expect(refused).toMatchObject({
        status: 400,
        body: { error: { code: 'IDENTIFIER_INVALID', details: { path } } },
      });
      expect(await h.rowCounts()).toEqual(before);
    });

    it('refuses a tool registration whose name or required postcondition is not one', async () => {
      const q = `?log=refunds-${++logNo}`;
      const before = await h.rowCounts();
      for (const [body, path] of [
        [{ server_id: 'p\u0430y', tool_name: 'refund' }, '/server_id'],
        [
          { server_id: 'pay', tool_name: 'refund', postconditions: [{ name: 'refund.recorded\u200b' }] },
          '/postconditions/0/name',
        ],
      ] as const) {
        const refused = await call('POST', `/v1/tools${q}`, k.admin, body);
        expect(refused).toMatchObject({
          status: 400,
          body: { error: { code: 'IDENTIFIER_INVALID', details: { path } } },
        });
      }
      expect(await h.rowCounts()).toEqual(before);
    });

    it('keeps target ids, environments and idempotency keys free text (they are matched, not shown as labels)', async () => {
      const { q } = await freshLog({});
      const accepted = await call(
        'POST',
        `/v1/proposals${q}`,
        k.gw,
        refund({
          idempotency_key: 'clé 1',
          target: { kind: 'file', id: 'file:///srv/Überweisung 1.pdf', env: 'production' },
        }),
      );
      expect(accepted.status).toBe(201);
    });
  });

  describe('when the tool requires a postcondition and the agent declares none', () => {
    it('adds it, bound by pointer, CEL and literal, and a verifier’s fail makes the proposal failed', async () => {
      const { q } = await freshLog();
      const proposed = await call('POST', `/v1/proposals${q}`, k.gw, refund());
      expect(proposed.status).toBe(201);
      expect(proposed.body.proposal.postconditions).toEqual([
        {
          name: 'refund.recorded',
          params: { order_id: 'ord_7', cents: 500, currency: 'EUR' },
          origin: 'registry',
        },
      ]);
      const authorized = await call(
        'POST',
        `/v1/proposals/${proposed.body.proposal.id}/authorize${q}`,
        k.gw,
        {},
      );
      expect(authorized.status).toBe(200);
      const observed = await call('POST', `/v1/observations${q}`, k.gw, {
        proposal_id: proposed.body.proposal.id,
        outcome: 'succeeded',
      });
      expect(observed.status).toBe(201);
      const verified = await call('POST', `/v1/verifications${q}`, k.verifier, {
        observation_id: observed.body.observation.id,
        checks: [{ name: 'refund.recorded', status: 'fail', source: 'billing-ledger' }],
      });
      expect(verified).toMatchObject({
        status: 201,
        body: { status: 'failed', verification_status: { status: 'failed' } },
      });
      const story = await call('GET', `/v1/proposals/${proposed.body.proposal.id}${q}`, k.auditor);
      expect(story.body).toMatchObject({
        outcome: 'verification_failed',
        verification_status: { status: 'failed' },
      });
      expect(story.body.verification_status.reason).not.toBe('NO_POSTCONDITIONS');
    });

    it('adds it with an external policy engine too, where the decision comes later', async () => {
      const { q } = await freshLog();
      const proposed = await call('POST', `/v1/proposals${q}`, k.gw, refund(), external);
      expect(proposed.status).toBe(202);
      expect(proposed.body.proposal.postconditions).toEqual([
        {
          name: 'refund.recorded',
          params: { order_id: 'ord_7', cents: 500, currency: 'EUR' },
          origin: 'registry',
        },
      ]);
    });
  });

  describe('when the agent declares postconditions of its own', () => {
    it('keeps them beside the required one, merging an identical duplicate instead of doubling it', async () => {
      const { q } = await freshLog();
      const required = {
        name: 'refund.recorded',
        params: { order_id: 'ord_7', cents: 500, currency: 'EUR' },
      };
      const proposed = await call(
        'POST',
        `/v1/proposals${q}`,
        k.gw,
        refund({
          postconditions: [
            { name: 'email.sent' },
            required,
            { name: 'refund.recorded', params: { order_id: 'ord_8' } },
          ],
        }),
      );
      expect(proposed.status).toBe(201);
      expect(proposed.body.proposal.postconditions).toEqual([
        { ...required, origin: 'registry' },
        { name: 'email.sent' },
        { name: 'refund.recorded', params: { order_id: 'ord_8' } },
      ]);
    });

    it.each([
      ['origin', { name: 'refund.recorded', origin: 'registry' }],
      ['verifiers', { name: 'refund.recorded', verifiers: ['service:checker'] }],
    ])('refuses a postcondition that sends %s itself (400) and writes nothing', async (field, condition) => {
      const { q } = await freshLog();
      const before = await h.rowCounts();
      const refused = await call('POST', `/v1/proposals${q}`, k.gw, refund({ postconditions: [condition] }));
      // An unknown key of the strict request schema, refused before the ledger is asked.
      expect(refused).toMatchObject({
        status: 400,
        body: { error: { code: 'INVALID_REQUEST', details: { issues: [{ keys: [field] }] } } },
      });
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('when a binding cannot be evaluated against the proposal', () => {
    it.each([
      ['the pointer names nothing', { arguments: { amount: 5 } }, 'order_id', 'POINTER_MISSING'],
      [
        'CEL fails (a string times a double)',
        { arguments: { order_id: 'ord_7', amount: '5' } },
        'cents',
        'CEL_ERROR',
      ],
    ])(
      'refuses it when %s with 422 POSTCONDITION_BINDING_FAILED and writes nothing',
      async (_, body, param, reason) => {
        const { q } = await freshLog();
        const before = await h.rowCounts();
        for (const app of [h.app, external]) {
          const refused = await call('POST', `/v1/proposals${q}`, k.gw, refund(body), app);
          expect(refused).toMatchObject({
            status: 422,
            body: {
              error: {
                code: 'POSTCONDITION_BINDING_FAILED',
                details: { postcondition: 'refund.recorded', param, reason },
              },
            },
          });
        }
        expect(await h.rowCounts()).toEqual(before);
      },
    );

    it('refuses a CEL result that JSON cannot carry (a timestamp) with reason NOT_JSON', async () => {
      const { q } = await freshLog({
        postconditions: [
          { name: 'refund.recorded', params: { at: { cel: 'timestamp("2026-01-01T00:00:00Z")' } } },
        ],
      });
      const refused = await call('POST', `/v1/proposals${q}`, k.gw, refund());
      expect(refused).toMatchObject({
        status: 422,
        body: { error: { code: 'POSTCONDITION_BINDING_FAILED', details: { reason: 'NOT_JSON' } } },
      });
    });

    it('refuses a registration whose CEL does not parse, or whose pointer is not one (400)', async () => {
      const q = `?log=refunds-${++logNo}`;
      for (const [binding, code] of [
        [{ cel: 'arguments.amount *' }, 'VALIDATION_FAILED'],
        [{ pointer: 'arguments/order_id' }, 'INVALID_REQUEST'],
      ] as const) {
        const refused = await call('POST', `/v1/tools${q}`, k.admin, {
          server_id: 'pay',
          tool_name: 'refund',
          postconditions: [{ name: 'refund.recorded', params: { x: binding } }],
        });
        expect(refused).toMatchObject({ status: 400, body: { error: { code } } });
      }
    });
  });

  describe('when an approver reads the request', () => {
    it('shows which postconditions the registry requires (and who may prove them) and which the agent added', async () => {
      const { q } = await freshLog({
        approval_required: true,
        postconditions: [{ ...REFUND_RECORDED, verifiers: ['billing-ledger'] }],
      });
      const proposed = await call(
        'POST',
        `/v1/proposals${q}`,
        k.gw,
        refund({ postconditions: [{ name: 'email.sent' }] }),
      );
      expect(proposed.body.decision.verdict).toBe('require_approval');
      const shown = await call('GET', `/v1/approvals/${proposed.body.approval.id}${q}`, k.approver);
      expect(shown.status).toBe(200);
      const expected = [
        {
          name: 'refund.recorded',
          params: { order_id: 'ord_7', cents: 500, currency: 'EUR' },
          origin: 'registry',
          verifiers: ['billing-ledger'],
        },
        { name: 'email.sent' },
      ];
      expect(shown.body.payload.postconditions).toEqual(expected);
      expect(shown.body.proposal.postconditions).toEqual(expected);
      // The bytes approved carry the origin: an agent's condition cannot be passed off as required.
      expect(JSON.parse(shown.body.canonical_payload).postconditions).toEqual(expected);
      const pending = await call('GET', `/v1/approvals${q}&status=pending`, k.approver);
      expect(pending.body.approvals[0].payload.postconditions).toEqual(expected);
    });
  });

  describe('when a gateway registers a tool it discovered', () => {
    it('refuses postconditions from it (403 ROLE_FORBIDDEN): what must be proven is the operator’s', async () => {
      const q = `?log=refunds-${++logNo}`;
      const body = { server_id: 'pay', tool_name: 'refund', source: 'discovery' };
      const refused = await call('POST', `/v1/tools${q}`, k.gw, {
        ...body,
        postconditions: [{ name: 'nothing' }],
      });
      expect(refused).toMatchObject({ status: 403, body: { error: { code: 'ROLE_FORBIDDEN' } } });
      expect((await call('POST', `/v1/tools${q}`, k.gw, body)).status).toBe(201);
    });
  });

  describe('when a registration changes', () => {
    it('replays the same registration and refuses other postconditions without replaces_version', async () => {
      const { q, tool } = await freshLog();
      const again = await call('POST', `/v1/tools${q}`, k.admin, {
        server_id: 'pay',
        tool_name: 'refund',
        side_effect: 'compensatable',
        postconditions: [REFUND_RECORDED],
      });
      expect(again).toMatchObject({ status: 200, body: { tool: { id: tool.id } } });
      const other = {
        server_id: 'pay',
        tool_name: 'refund',
        side_effect: 'compensatable',
        postconditions: [],
      };
      expect((await call('POST', `/v1/tools${q}`, k.admin, other)).body.error.code).toBe('TOOL_EXISTS');
    });

    it('replays a proposal made under the earlier version instead of calling it a conflict', async () => {
      const { q, tool } = await freshLog();
      const body = refund();
      const first = await call('POST', `/v1/proposals${q}`, k.gw, body);
      const changed = await call('POST', `/v1/tools${q}`, k.admin, {
        server_id: 'pay',
        tool_name: 'refund',
        side_effect: 'compensatable',
        postconditions: [{ name: 'refund.settled' }],
        replaces_version: tool.version,
      });
      expect(changed.status).toBe(201);
      const replayed = await call('POST', `/v1/proposals${q}`, k.gw, body);
      expect(replayed).toMatchObject({
        status: 200,
        body: { replayed: true, proposal: { id: first.body.proposal.id } },
      });
      const next = await call('POST', `/v1/proposals${q}`, k.gw, refund());
      expect(next.body.proposal.postconditions).toEqual([{ name: 'refund.settled', origin: 'registry' }]);
    });
  });

  describe('when a gateway executes through @vouch/client', () => {
    it('accepts the required postconditions the server added, authorizes the recorded payload and runs once', async () => {
      const { q } = await freshLog();
      const log = q.slice('?log='.length);
      const client = createVouchClient({
        baseUrl: 'http://vouch.test',
        apiKey: k.gw,
        log,
        fetch: ((url: string, init: RequestInit) => h.app.request(url, init)) as unknown as typeof fetch,
      });
      let calls = 0;
      const { idempotency_key: _, ...action } = refund({ postconditions: [{ name: 'email.sent' }] });
      const result = await client.execute(
        action as Parameters<typeof client.execute>[0],
        async () => {
          calls++;
          return { refund_id: 'rf_1' };
        },
        { verify: false },
      );
      expect(result.status).toBe('executed');
      expect(calls).toBe(1);
      expect(result.proposal.postconditions.map((c) => [c.name, c.origin])).toEqual([
        ['refund.recorded', 'registry'],
        ['email.sent', undefined],
      ]);
    });
  });

  describe('when two gateways use the same idempotency key', () => {
    it('gives each its own proposal, and each replays its own', async () => {
      const { q } = await freshLog();
      const a = await call('POST', `/v1/proposals${q}`, k.gw, refund({ idempotency_key: 'shared-key' }));
      expect(a.status).toBe(201);
      const otherPayload = refund({
        idempotency_key: 'shared-key',
        arguments: { order_id: 'ord_9', amount: 7 },
      });
      const b = await call('POST', `/v1/proposals${q}`, k.gwB, otherPayload);
      expect(b).toMatchObject({
        status: 201,
        body: { replayed: false, proposal: { requester: 'agent:gw-b' } },
      });
      expect(b.body.proposal.id).not.toBe(a.body.proposal.id);
      const aAgain = await call('POST', `/v1/proposals${q}`, k.gw, refund({ idempotency_key: 'shared-key' }));
      expect(aAgain).toMatchObject({
        status: 200,
        body: { replayed: true, proposal: { id: a.body.proposal.id } },
      });
      const bAgain = await call('POST', `/v1/proposals${q}`, k.gwB, otherPayload);
      expect(bAgain).toMatchObject({
        status: 200,
        body: { replayed: true, proposal: { id: b.body.proposal.id } },
      });
      const aConflict = await call('POST', `/v1/proposals${q}`, k.gw, otherPayload);
      expect(aConflict).toMatchObject({ status: 409, body: { error: { code: 'IDEMPOTENCY_CONFLICT' } } });
    });
  });

  describe('when an auditor verifies the log', () => {
    it('finds every proposal with required postconditions as the server wrote it', async () => {
      const { q } = await freshLog({
        postconditions: [{ ...REFUND_RECORDED, verifiers: ['billing-ledger'] }],
      });
      await call('POST', `/v1/proposals${q}`, k.gw, refund({ postconditions: [{ name: 'email.sent' }] }));
      await call('POST', `/v1/proposals${q}`, k.gw, refund({ idempotency_key: 'same' }));
      await call('POST', `/v1/proposals${q}`, k.gwB, refund({ idempotency_key: 'same' }));
      await call('POST', `/v1/proposals${q}`, k.gw, refund(), external);
      const log = q.slice('?log='.length);
      const verified = await call('GET', `/v1/logs/${log}/verify`, k.auditor);
      expect(verified.body).toMatchObject({ ok: true, failures: [] });
    });
  });
});
