import { createRecords } from '@vouch/ledger';
import { forgeRecords, testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from './app';
import { createHarness, type Harness } from './testing/app-harness';

// Attacks of the audited party through the HTTP API (the threat model in docs/chain.md:
// the gateway can post anything it likes; it must not be able to change what a reviewer
// reads about its own actions). Each case is one attack and what the API must answer.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(testBackends())('red team: the HTTP API on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  const k = {} as Record<
    'admin' | 'gw' | 'gwAsVerifier' | 'proposerAsVerifier' | 'verifier' | 'auditor',
    string
  >;

  beforeAll(async () => {
    h = await createHarness({ open });
    app = createApp({ ledger: h.ledger, keys: h.keys, records: createRecords(h.ledger) });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.gwAsVerifier = await h.keyFor('agent:gw', ['verifier']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown, raw?: string) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(raw !== undefined ? { body: raw } : body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  let n = 0;
  /** A refund proposed and executed by the gateway, declaring `refund.recorded`. */
  async function executed() {
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `red-${++n}`,
      action: 'pay.refund',
      server_id: 'pay',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'production' },
      arguments: { amount: n },
      side_effect: 'compensatable',
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const proposalId = proposed.body.proposal.id as string;
    expect((await call('POST', `/v1/proposals/${proposalId}/authorize`, k.gw, {})).status).toBe(200);
    const observed = await call('POST', '/v1/observations', k.gw, {
      proposal_id: proposalId,
      outcome: 'succeeded',
    });
    expect(observed.status).toBe(201);
    const observationId = observed.body.observation.id as string;
    const story = async () => (await call('GET', `/v1/proposals/${proposalId}`, k.auditor)).body;
    return { proposalId, observationId, story };
  }
  const pass = { name: 'refund.recorded', status: 'pass', source: 'billing-ledger' };

  describe('the identity that executed, holding a verifier key, posts a pass of its own action', () => {
    it('the check is kept but proves nothing: the outcome stays unverified', async () => {
      const { observationId, story } = await executed();
      const posted = await call('POST', '/v1/verifications', k.gwAsVerifier, {
        observation_id: observationId,
        checks: [pass],
      });
      expect(posted.status).toBe(201);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        checks: [
          { name: 'refund.recorded', status: 'inconclusive', reason: 'NOT_INDEPENDENT', reported: 'pass' },
        ],
      });
      expect((await story()).outcome).toBe('unverified');
      // An independent verifier's pass still proves it.
      await call('POST', '/v1/verifications', k.verifier, { observation_id: observationId, checks: [pass] });
      expect((await story()).outcome).toBe('verified');
    });
  });

  describe('the gateway spells one number several ways', () => {
    const body = (amount: string, key = 'spelled') =>
      `{"idempotency_key":"${key}","action":"pay.refund","server_id":"pay","tool_name":"refund",` +
      `"target":{"kind":"payment","id":"pay_x","env":"production"},"arguments":{"amount":${amount}},"side_effect":"compensatable"}`;

    it('replays the same value whatever its spelling (1, 1.0, 1e0, 10e-1), and shows it as 1', async () => {
      const first = await call('POST', '/v1/proposals', k.gw, undefined, body('1'));
      expect(first.status).toBe(201);
      for (const spelling of ['1.0', '1e0', '10e-1', '1.000']) {
        const again = await call('POST', '/v1/proposals', k.gw, undefined, body(spelling));
        expect(again.status, spelling).toBe(200);
        expect(again.body).toMatchObject({ replayed: true, proposal: { id: first.body.proposal.id } });
      }
      expect(first.body.proposal.arguments).toEqual({ amount: 1 });
    });

    it('treats -0 as 0, and another value as another payload (IDEMPOTENCY_CONFLICT)', async () => {
      const zero = await call('POST', '/v1/proposals', k.gw, undefined, body('0', 'zero'));
      expect(zero.status).toBe(201);
      expect((await call('POST', '/v1/proposals', k.gw, undefined, body('-0', 'zero'))).body.replayed).toBe(
        true,
      );
      const other = await call('POST', '/v1/proposals', k.gw, undefined, body('0.1', 'zero'));
      expect(other).toMatchObject({ status: 409, body: { error: { code: 'IDEMPOTENCY_CONFLICT' } } });
    });

    it.each([
      ['1.00000000000000001', 'more precision than a double'],
      ['1e400', 'overflows'],
      ['1e-400', 'underflows'],
      ['-1e-400', 'underflows'],
      ['9007199254740993', 'beyond 2^53'],
      ['9007199254740992', 'beyond 2^53'],
      ['1e99999999999999999999', 'overflows'],
    ])('refuses %s with NUMBER_NOT_EXACT and writes nothing', async (amount, why) => {
      const before = await h.rowCounts();
      const refused = await call('POST', '/v1/proposals', k.gw, undefined, body(amount, `inexact-${amount}`));
      expect(refused).toMatchObject({
        status: 400,
        body: { error: { code: 'NUMBER_NOT_EXACT', details: { path: '/arguments/amount' } } },
      });
      expect(refused.body.error.message).toContain(why);
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('a verifier names the declared postcondition in another spelling', () => {
    it.each([
      ['another letter case', 'Refund.Recorded'],
      ['a zero-width space', 'refund.recorded\u200b'],
      ['a Cyrillic look-alike', 'refund.rec\u043erded'],
      ['a trailing space', 'refund.recorded '],
    ])('with %s it proves nothing: the pass is undeclared and the outcome unverified', async (_, name) => {
      const { observationId, story } = await executed();
      const posted = await call('POST', '/v1/verifications', k.verifier, {
        observation_id: observationId,
        checks: [{ ...pass, name }],
      });
      expect(posted).toMatchObject({ status: 201, body: { status: 'inconclusive', undeclared: [name] } });
      expect((await story()).outcome).toBe('unverified');
    });
  });

  describe('a key limited to one log reaches for another', () => {
    it('is refused on every route that names the other log, however it names it', async () => {
      const limited = await h.keyFor('user:limited', ['auditor', 'gateway'], { logs: ['default'] });
      const { proposalId } = await executed();
      for (const [method, path] of [
        ['GET', '/v1/logs/other/verify'],
        ['GET', '/v1/logs/system/verify'],
        ['GET', '/v1/logs/oth%65r/checkpoint'],
        ['GET', `/v1/proposals/${proposalId}?log=other`],
        ['POST', '/v1/proposals?log=other'],
      ] as const) {
        const proposal = {
          idempotency_key: 'elsewhere',
          action: 'pay.refund',
          server_id: 'pay',
          tool_name: 'refund',
          target: { kind: 'payment', id: 'pay_y', env: 'production' },
          arguments: { amount: 1 },
          side_effect: 'compensatable',
        };
        const answer = await call(method, path, limited, method === 'POST' ? proposal : undefined);
        expect(answer, `${method} ${path} ${JSON.stringify(answer.body)}`).toMatchObject({
          status: 403,
          body: { error: { code: 'LOG_FORBIDDEN' } },
        });
      }
      // Two logs in one query are refused as a bad query, whichever comes first.
      for (const query of ['log=other&log=default', 'log=default&log=other']) {
        const answer = await call('GET', `/v1/proposals/${proposalId}?${query}`, limited);
        expect(answer, query).toMatchObject({ status: 400, body: { error: { code: 'INVALID_REQUEST' } } });
      }
      expect((await call('GET', `/v1/proposals/${proposalId}?log=default`, limited)).status).toBe(200);
    });

    it('a log nothing was stored under is LOG_NOT_FOUND, not an empty success', async () => {
      expect(await call('GET', '/v1/logs/never-written/verify', k.auditor)).toMatchObject({
        status: 404,
        body: { error: { code: 'LOG_NOT_FOUND' } },
      });
    });
  });

  describe('someone issues a key for a look-alike of an existing identity', () => {
    it.each([
      ['another letter case', 'AGENT:GW'],
      ['a Cyrillic а', '\u0430gent:gw'],
      ['a zero-width joiner', 'agent:\u200dgw'],
    ])('with %s it is refused (IDENTITY_COLLISION)', async (_, identity) => {
      await expect(h.keyFor(identity, ['approver'])).rejects.toMatchObject({ code: 'IDENTITY_COLLISION' });
    });
  });

  describe('the gateway re-posts its observation with the result spelled differently', () => {
    it('the same values replay; another value is a conflict that is recorded, never a second account', async () => {
      const proposed = await call('POST', '/v1/proposals', k.gw, {
        idempotency_key: 'observed-twice',
        action: 'pay.refund',
        server_id: 'pay',
        tool_name: 'refund',
        target: { kind: 'payment', id: 'pay_obs', env: 'production' },
        arguments: { amount: 7 },
        side_effect: 'compensatable',
      });
      expect(
        (await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, k.gw, {})).status,
      ).toBe(200);
      const observe = (result: string) =>
        call(
          'POST',
          '/v1/observations',
          k.gw,
          undefined,
          `{"proposal_id":"${proposed.body.proposal.id}","outcome":"succeeded","result":${result}}`,
        );
      expect((await observe('{"refunded":1,"id":"r1"}')).status).toBe(201);
      for (const same of ['{"id":"r1","refunded":1.0}', '{"refunded":1e0,"id":"r\\u0031"}']) {
        expect(await observe(same), same).toMatchObject({ status: 200, body: { replayed: true } });
      }
      const before = await h.rowCounts();
      const other = await observe('{"refunded":1.5,"id":"r1"}');
      expect(other).toMatchObject({ status: 409, body: { error: { code: 'OBSERVATION_CONFLICT' } } });
      const after = await h.rowCounts();
      expect(after.observations).toBe(before.observations);
      expect(after.refused_executions).toBe(before.refused_executions! + 1);
    });
  });

  describe('the runtime role appends an approval answer without bounds: open-ended, ten years, resolved in 2099', () => {
    it('authorize is refused with 409 APPROVAL_BOUNDS_VIOLATED and /readyz reports the alarm', async () => {
      const tool = { server_id: 'pay', tool_name: 'wire', side_effect: 'irreversible' };
      expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
      const proposed = await call('POST', '/v1/proposals', k.gw, {
        idempotency_key: 'red-unbounded',
        action: 'pay.wire',
        server_id: 'pay',
        tool_name: 'wire',
        target: { kind: 'account', id: 'acc_1', env: 'production' },
        arguments: { amount: 5 },
        side_effect: 'irreversible',
      });
      expect(proposed.body.decision?.verdict).toBe('require_approval');
      await forgeRecords(h.ledger, 'default', (tx) => {
        tx.write('approval_resolution', 'user:root', {
          id: 'res_endless',
          request_id: proposed.body.approval.id,
          resolution: 'approved',
          resolver: 'user:root',
          validity: 'window',
          window_seconds: 315_360_000,
          window_source: 'approver',
          valid_until: null,
          comment: null,
          resolved_at: '2099-01-01T00:00:00.000Z',
        });
      });
      const authorized = await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, k.gw, {});
      expect(authorized).toMatchObject({
        status: 409,
        body: { error: { code: 'APPROVAL_BOUNDS_VIOLATED' } },
      });
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        integrity: {
          alarms: [expect.objectContaining({ code: 'RECORD_RULE_VIOLATION', table: 'approval_resolutions' })],
        },
      });
    });
  });

  describe("the runtime role appends a built-in allow, in the gateway's name, for a tool that needs an approval", () => {
    it('authorize is refused with 409 DECISION_NOT_DERIVED and /readyz reports the alarm', async () => {
      const tool = {
        server_id: 'pay',
        tool_name: 'payout',
        side_effect: 'compensatable',
        approval_required: true,
      };
      expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
      const proposal = {
        action: 'pay.payout',
        server_id: 'pay',
        tool_name: 'payout',
        target: { kind: 'account', id: 'acc_1', env: 'production' },
        arguments: { amount: 5 },
        side_effect: 'compensatable',
      };
      const honest = await call('POST', '/v1/proposals', k.gw, {
        idempotency_key: 'red-payout',
        ...proposal,
      });
      expect(honest.body.decision?.verdict).toBe('require_approval');
      await forgeRecords(h.ledger, 'default', (tx, now) => {
        tx.write('proposal', 'agent:gw', {
          ...honest.body.proposal,
          id: 'prop_forged_allow',
          idempotency_key: 'red-payout-forged',
          proposed_at: now,
        });
        tx.write('decision', 'agent:gw', {
          id: 'dec_forged_allow',
          proposal_id: 'prop_forged_allow',
          verdict: 'allow',
          reasons: [
            { code: 'POLICY_SATISFIED', effect: 'allow', message: 'every rule of the policy is met' },
          ],
          repair: null,
          authorized_identity: 'agent:gw',
          source: 'built_in',
          tool_id: honest.body.decision.tool_id,
          approval_request_id: null,
          decided_by: 'policy:built_in',
          decided_at: now,
        });
      });
      const authorized = await call('POST', '/v1/proposals/prop_forged_allow/authorize', k.gw, {});
      expect(authorized).toMatchObject({ status: 409, body: { error: { code: 'DECISION_NOT_DERIVED' } } });
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        integrity: {
          alarms: expect.arrayContaining([
            expect.objectContaining({ code: 'RECORD_RULE_VIOLATION', table: 'decisions' }),
          ]),
        },
      });
      const verified = await call('GET', '/v1/logs/default/verify', k.auditor);
      // (The log holds the other forgeries of this suite too.)
      expect(verified.body.failures).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            rule: 'DECISION_NOT_DERIVED',
            table: 'decisions',
            id: 'dec_forged_allow',
          }),
        ]),
      );
    });
  });
});
