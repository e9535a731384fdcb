import { createVerifierRegistry, defineVerifier, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

// A plugin that says whatever source it likes; the registration decides which named system it
// really reads. `claims` is what it says, so a test can show that the claim does not count.
function reads(postcondition: string, claims: string) {
  return defineVerifier({
    id: `reads-${postcondition.replaceAll('.', '-')}`,
    version: '1.0.0',
    apiVersion: VERIFIER_API_VERSION,
    handles: [postcondition],
    check: () => ({ name: postcondition, status: 'pass' as const, source: claims }),
  });
}

// The independence rule (docs/verification.md), one case per postcondition:
// the tool itself, the response channel the gateway claims, a system it writes to, an
// unrelated system, and a plugin that claims an independent name while its configured system
// is the tool.
const registry = createVerifierRegistry([
  { verifier: reads('via.tool', 'payments-mcp') },
  { verifier: reads('via.channel', 'gateway-cache') },
  { verifier: reads('via.written', 'payments-db') },
  { verifier: reads('via.unrelated', 'bank-statements') },
  { verifier: reads('via.claim', 'totally-independent'), source: 'payments-mcp' },
]);
const POSTCONDITIONS = ['via.tool', 'via.channel', 'via.written', 'via.unrelated', 'via.claim'];

describe('independence of checks, over HTTP', () => {
  let h: Harness;
  let app: VouchApp;
  let admin: string;
  let gw: string;
  let verifier: string;
  let n = 0;

  beforeAll(async () => {
    h = await createHarness();
    app = createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger, verification: { registry } });
    admin = await h.keyFor('user:root', ['admin']);
    gw = await h.keyFor('agent:gw', ['gateway']);
    verifier = await h.keyFor('service:checker', ['verifier']);
    const tool = {
      server_id: 'payments-mcp',
      tool_name: 'refund',
      side_effect: 'compensatable',
      writes: ['payments-db', 'stripe'],
    };
    const registered = await call('POST', '/v1/tools', admin, tool);
    expect(registered).toMatchObject({ status: 201, body: { tool: { writes: ['payments-db', 'stripe'] } } });
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

  async function executed(postconditions: string[]) {
    const proposed = await call('POST', '/v1/proposals', gw, {
      idempotency_key: `ind-${++n}`,
      action: 'payments.refund',
      server_id: 'payments-mcp',
      tool_name: 'refund',
      target: { kind: 'payment', id: `pay_${n}`, env: 'test' },
      arguments: { amount: 5 },
      side_effect: 'compensatable',
      postconditions: postconditions.map((name) => ({ name })),
    });
    expect(proposed.body.decision?.verdict).toBe('allow');
    const authorized = await call('POST', `/v1/proposals/${proposed.body.proposal.id}/authorize`, gw, {});
    expect(authorized.status).toBe(200);
    const observed = await call('POST', '/v1/observations', gw, {
      proposal_id: proposed.body.proposal.id,
      outcome: 'succeeded',
      result: { refund_id: `re_${n}` },
      // The gateway read the result back from its own cache of the tool's answers.
      result_source: 'gateway-cache',
    });
    expect(observed.status).toBe(201);
    expect(observed.body.observation.result_source).toBe('gateway-cache');
    return observed.body.observation.id as string;
  }

  describe('when the server runs the configured verifiers', () => {
    let checks: Record<string, Json>;
    beforeAll(async () => {
      const verified = await call('POST', `/v1/observations/${await executed(POSTCONDITIONS)}/verify`, gw);
      expect(verified.status).toBe(201);
      checks = Object.fromEntries(verified.body.checks.map((c: Json) => [c.name, c]));
    });

    it('counts a check sourced at the tool itself as NOT_INDEPENDENT', () => {
      expect(checks['via.tool']).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
        reported: 'pass',
      });
    });

    it("counts a check sourced at the observation's result_source: the gateway's claim decides nothing", () => {
      expect(checks['via.channel']).toMatchObject({ status: 'pass', source: 'gateway-cache', reason: null });
    });

    it('counts a check of a system the tool writes to, marked readsWrittenSystem', () => {
      expect(checks['via.written']).toMatchObject({
        status: 'pass',
        source: 'payments-db',
        readsWrittenSystem: true,
      });
    });

    it('counts a check of an unrelated system, unmarked', () => {
      expect(checks['via.unrelated']).toMatchObject({ status: 'pass', source: 'bank-statements' });
      expect(checks['via.unrelated']).not.toHaveProperty('readsWrittenSystem');
    });

    it("judges the configured system, not the plugin's claim", () => {
      expect(checks['via.claim']).toMatchObject({
        status: 'inconclusive',
        reason: 'NOT_INDEPENDENT',
        source: 'payments-mcp',
        reportedSource: 'totally-independent',
      });
    });
  });

  describe('when an external verifier posts checks', () => {
    it('applies the same rule to the sources it names', async () => {
      const observationId = await executed(['via.channel', 'via.written']);
      const posted = await call('POST', '/v1/verifications', verifier, {
        observation_id: observationId,
        checks: [
          { name: 'via.channel', status: 'pass', source: 'gateway-cache' },
          { name: 'via.written', status: 'pass', source: 'Stripe' },
        ],
      });
      expect(posted.status).toBe(201);
      expect(posted.body.checks).toMatchObject([
        { name: 'via.channel', status: 'pass' },
        { name: 'via.written', status: 'pass', readsWrittenSystem: true },
      ]);
      expect(posted.body.status).toBe('passed');
    });
  });

  describe('when a registration declares writes that are not names', () => {
    it('refuses it with 400 and writes nothing', async () => {
      const before = await h.rowCounts();
      const refused = await call('POST', '/v1/tools', admin, {
        server_id: 'payments-mcp',
        tool_name: 'payout',
        writes: ['payments-db', ''],
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { issues: [expect.objectContaining({ path: '/writes/1' })] },
      });
      expect(await h.rowCounts()).toEqual(before);
    });
  });
});
