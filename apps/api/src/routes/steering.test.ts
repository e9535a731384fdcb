import { testBackends } from '@vouch/ledger/testing';
import {
  type CheckResult,
  createVerifierRegistry,
  defineVerifier,
  MAX_CHECK_RESULT_BYTES,
  VERIFIER_API_VERSION,
} from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// Issue #32: verification the audited party cannot steer. A failure always counts, whatever
// source it names and whatever the gateway says its result came from; independence is
// decided from the operator's configuration, in canonical form; a check proves the
// postcondition it answers by name and params; one verbose check cannot erase the others.

function says(postcondition: string, result: (params: unknown) => Omit<CheckResult, 'name'>) {
  return defineVerifier({
    id: `says-${postcondition.replaceAll('.', '-')}`,
    version: '1.0.0',
    apiVersion: VERIFIER_API_VERSION,
    handles: [postcondition],
    check: ({ postcondition: p }) => ({ name: postcondition, ...result(p.params ?? null) }),
  });
}

const CYRILLIC_A = '\u0430';
const registry = createVerifierRegistry([
  // The ledger the gateway names as its result's channel finds no refund.
  { verifier: says('ledger.refunded', () => ({ status: 'fail', source: 'Billing-Ledger' })) },
  // The tool's own server, and a system it writes to, report a failure.
  { verifier: says('tool.refunded', () => ({ status: 'fail', source: 'payments-mcp' })) },
  { verifier: says('db.refunded', () => ({ status: 'fail', source: 'payments-db' })) },
  // A pass from the tool's own server id spelled with a Cyrillic а.
  { verifier: says('lookalike.refunded', () => ({ status: 'pass', source: `p${CYRILLIC_A}yments-mcp` })) },
  // A pass whose evidence is larger than a check result may be.
  {
    verifier: says('verbose.refunded', () => ({
      status: 'pass',
      source: 'bank-statements',
      evidence: { dump: 'x'.repeat(MAX_CHECK_RESULT_BYTES * 4) },
    })),
  },
  // Reads the refund its params name: only re_1 exists.
  {
    verifier: says('refund.recorded', (params) =>
      (params as { refund_id?: string } | null)?.refund_id === 're_1'
        ? { status: 'pass', source: 'bank-statements' }
        : { status: 'inconclusive', source: 'bank-statements', reason: 'NOT_YET_VISIBLE' },
    ),
  },
]);

describe.each(testBackends())('verification the audited party cannot steer, on $name', ({ open }) => {
  let h: Harness;
  let app: VouchApp;
  const k = {} as Record<'admin' | 'gw' | 'verifier' | 'auditor', string>;
  let n = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    app = createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger, verification: { registry } });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gw = await h.keyFor('agent:gw', ['gateway']);
    k.verifier = await h.keyFor('service:checker', ['verifier']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = {
      server_id: 'payments-mcp',
      tool_name: 'refund',
      side_effect: 'compensatable',
      writes: ['payments-db'],
    };
    expect((await call('POST', '/v1/tools', k.admin, tool)).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function call(method: string, path: string, key: string, body?: unknown) {
    const response = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  /** A refund proposed and executed; the gateway says its result came from `resultSource`. */
  async function executed(postconditions: Json[], resultSource?: string) {
    const proposed = await call('POST', '/v1/proposals', k.gw, {
      idempotency_key: `steer-${++n}`,
      action: 'payments.refund',
      server_id: 'payments-mcp',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'test' },
      arguments: { amount: 5 },
      side_effect: 'compensatable',
      postconditions,
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const authorized = await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, k.gw, {});
    expect(authorized.status).toBe(200);
    const observed = await call('POST', '/v1/observations', k.gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: { refund_id: `re_${n}` },
      ...(resultSource === undefined ? {} : { result_source: resultSource }),
    });
    expect(observed.status).toBe(201);
    const proposalId = proposed.body.proposal.id as string;
    const observationId = observed.body.observation.id as string;
    return {
      observationId,
      verify: () => call('POST', `/v1/observations/${observationId}/verify`, k.gw),
      post: (checks: Json[]) =>
        call('POST', '/v1/verifications', k.verifier, { observation_id: observationId, checks }),
      story: async () => (await call('GET', `/v1/proposals/${proposalId}`, k.auditor)).body,
    };
  }

  describe("when the gateway's result_source names the source of a verifier that fails", () => {
    it('records the fail and the proposal fails, showing result_source as the claim it is', async () => {
      const run = await executed([{ name: 'ledger.refunded' }], 'Billing-Ledger ');
      const verified = await run.verify();
      expect(verified.status).toBe(201);
      expect(verified.body.checks).toMatchObject([{ status: 'fail', source: 'Billing-Ledger' }]);
      // The record's status is what the webhook dispatcher sends `verification.failed` on.
      expect(verified.body.status).toBe('failed');
      const story = await run.story();
      expect(story.outcome).toBe('verification_failed');
      expect(story.observation.result_source).toBe('Billing-Ledger ');
    });

    it('counts an external verifier’s fail from that source too', async () => {
      const run = await executed([{ name: 'ledger.refunded' }], 'billing-ledger');
      const posted = await run.post([{ name: 'ledger.refunded', status: 'fail', source: 'Billing-Ledger' }]);
      expect(posted).toMatchObject({ status: 201, body: { status: 'failed', checks: [{ status: 'fail' }] } });
      expect((await run.story()).outcome).toBe('verification_failed');
    });

    it('counts a pass from that source as independent', async () => {
      const run = await executed([{ name: 'ledger.refunded' }], 'Billing-Ledger');
      const posted = await run.post([{ name: 'ledger.refunded', status: 'pass', source: 'billing-ledger' }]);
      expect(posted.body).toMatchObject({ status: 'passed', checks: [{ status: 'pass' }] });
    });
  });

  describe("when the tool's own server or a system it writes reports a failure", () => {
    it('records each fail and the proposal fails', async () => {
      const run = await executed([{ name: 'tool.refunded' }, { name: 'db.refunded' }]);
      const verified = await run.verify();
      expect(verified.body.checks).toMatchObject([
        { postcondition: 'tool.refunded', status: 'fail', reason: null },
        { postcondition: 'db.refunded', status: 'fail', readsWrittenSystem: true },
      ]);
      expect(verified.body.status).toBe('failed');
      expect((await run.story()).outcome).toBe('verification_failed');
    });
  });

  describe("when a pass names a look-alike of the tool's own server", () => {
    it('counts it NOT_INDEPENDENT when the server runs the verifier', async () => {
      const run = await executed([{ name: 'lookalike.refunded' }]);
      const verified = await run.verify();
      expect(verified.body.checks).toMatchObject([
        { status: 'inconclusive', reason: 'NOT_INDEPENDENT', reported: 'pass' },
      ]);
      expect(verified.body.status).toBe('inconclusive');
    });

    it.each([
      ['Cyrillic а', `p${CYRILLIC_A}yments-mcp`],
      ['Greek Α and upper case', 'P\u0391YMENTS-MCP'],
      ['zero-width space', 'payments\u200b-mcp'],
    ])('counts an external pass NOT_INDEPENDENT (%s)', async (_, source) => {
      const run = await executed([{ name: 'lookalike.refunded' }]);
      const posted = await run.post([{ name: 'lookalike.refunded', status: 'pass', source }]);
      expect(posted.body).toMatchObject({
        status: 'inconclusive',
        checks: [{ status: 'inconclusive', reason: 'NOT_INDEPENDENT' }],
      });
    });
  });

  describe('when two postconditions share a name with different params', () => {
    const twoRefunds = [
      { name: 'refund.recorded', params: { refund_id: 're_1' } },
      { name: 'refund.recorded', params: { refund_id: 're_2' } },
    ];

    it('proves each by its own check when the server runs the verifiers', async () => {
      const run = await executed(twoRefunds);
      const verified = await run.verify();
      expect(verified.body.checks).toMatchObject([
        { params: { refund_id: 're_1' }, status: 'pass' },
        { params: { refund_id: 're_2' }, status: 'inconclusive' },
      ]);
      expect(verified.body.verification_status).toMatchObject({
        status: 'inconclusive',
        postconditions: [
          { name: 'refund.recorded', params: { refund_id: 're_1' }, status: 'passed' },
          { name: 'refund.recorded', params: { refund_id: 're_2' }, status: 'inconclusive' },
        ],
      });
    });

    it('proves only the one an external check names by its params', async () => {
      const run = await executed(twoRefunds);
      const one = { name: 'refund.recorded', status: 'pass', source: 'bank', params: { refund_id: 're_1' } };
      expect((await run.post([one])).body.verification_status.status).toBe('inconclusive');
      const other = { ...one, params: { refund_id: 're_2' } };
      expect((await run.post([other])).body.verification_status.status).toBe('passed');
    });

    it('proves neither by a check that gives no params', async () => {
      const run = await executed(twoRefunds);
      const posted = await run.post([{ name: 'refund.recorded', status: 'pass', source: 'bank' }]);
      expect(posted.body).toMatchObject({ status: 'inconclusive' });
    });
  });

  describe('when one check is over the size limit beside a failing one', () => {
    it('records the oversize one as RESULT_INVALID and the fail, and the proposal fails', async () => {
      const run = await executed([{ name: 'verbose.refunded' }, { name: 'ledger.refunded' }]);
      const verified = await run.verify();
      expect(verified.status).toBe(201);
      expect(verified.body.checks).toMatchObject([
        {
          postcondition: 'verbose.refunded',
          status: 'error',
          reason: 'RESULT_INVALID',
          evidence: { limit: MAX_CHECK_RESULT_BYTES },
        },
        { postcondition: 'ledger.refunded', status: 'fail' },
      ]);
      expect(verified.body.checks[0].evidence.bytes).toBeGreaterThan(MAX_CHECK_RESULT_BYTES);
      expect(verified.body.status).toBe('failed');
      expect((await run.story()).outcome).toBe('verification_failed');
    });
  });

  describe("when an external verifier's check names a configured verifier", () => {
    it('refuses it with 422 and writes nothing', async () => {
      const run = await executed([{ name: 'ledger.refunded' }]);
      const before = await h.rowCounts();
      const posted = await run.post([
        {
          name: 'ledger.refunded',
          status: 'pass',
          source: 'bank',
          verifier: {
            id: 'says-ledger-refunded',
            version: '1.0.0',
            apiVersion: 1,
            name: 'says-ledger-refunded',
          },
        },
      ]);
      expect(posted.status).toBe(422);
      expect(posted.body.error).toMatchObject({
        code: 'VERIFICATION_INVALID',
        details: { field: '/checks/0/verifier' },
      });
      expect(await h.rowCounts()).toEqual(before);
    });
  });
});
