import { createVerifierRegistry, type FetchGrant, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedFetch } from '../net/guarded-fetch';
import { closedPort, sendJson, startServer, type TestServer } from '../test-support/http-server';
import { prometheusVerifier } from './prometheus-verifier';

// A tiny fake Prometheus on loopback: it answers /api/v1/query like the real HTTP API does,
// with the 5xx ratio per job from this table. Loopback is opened explicitly by the guard's allow-list.
const errorRatio: Record<string, number> = { checkout: 0.002, payments: 0.2 };
let prometheus: TestServer;
beforeAll(async () => {
  prometheus = await startServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/query') return sendJson(res, 404, {});
    const query = url.searchParams.get('query') ?? '';
    if (query.includes('syntax error')) {
      return sendJson(res, 400, { status: 'error', errorType: 'bad_data', error: 'parse error' });
    }
    if (query === 'scalar(1)') {
      return sendJson(res, 200, {
        status: 'success',
        data: { resultType: 'scalar', result: [1700000000, '1'] },
      });
    }
    const job = /job="((?:[^"\\]|\\.)*)"/.exec(query)?.[1];
    const ratio = job === undefined ? undefined : errorRatio[job];
    sendJson(res, 200, {
      status: 'success',
      data: {
        resultType: 'vector',
        result: ratio === undefined ? [] : [{ metric: { job }, value: [1700000000.123, String(ratio)] }],
      },
    });
  });
});
afterAll(() => prometheus.close());

const allowLoopback = createGuardedFetch({ allowHosts: ['127.0.0.1'] });
const errorRate = () => ({
  url: prometheus.url,
  source: 'prometheus',
  query:
    'sum(rate(http_requests_total{job="{target.id}",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="{target.id}"}[5m]))',
  successCondition: 'value < 0.01',
});

async function verify(options: Record<string, unknown>, job: string, fetch: FetchGrant = allowLoopback) {
  const registry = createVerifierRegistry([
    { verifier: prometheusVerifier, handles: ['deploy.healthy'], options, grants: { fetch } },
  ]);
  const outcome = await runVerifiers({
    registry,
    proposal: exampleProposal({
      target: { kind: 'service', id: job, env: 'prod' },
      postconditions: [{ name: 'deploy.healthy' }],
    }),
    observation: exampleObservation({ server_id: 'deploy-mcp' }),
  });
  return { status: outcome.status, check: outcome.checks[0]! };
}

describe('prometheus verifier', () => {
  describe('when the error rate is under the threshold', () => {
    it('passes and records the query and the samples', async () => {
      const { status, check } = await verify(errorRate(), 'checkout');
      expect(status).toBe('passed');
      expect(check).toMatchObject({
        source: 'prometheus',
        observed: { samples: 1, value: 0.002 },
        evidence: { url: `${prometheus.url}/api/v1/query`, samples: [{ metric: { job: 'checkout' } }] },
      });
      expect(prometheus.requests.at(-1)?.url).toContain(encodeURIComponent('job="checkout"'));
    });
  });

  describe('when it is over', () => {
    it('fails', async () => {
      expect((await verify(errorRate(), 'payments')).check.status).toBe('fail');
    });
  });

  describe('when the query returns no sample', () => {
    it('is inconclusive, never failed', async () => {
      expect((await verify(errorRate(), 'unknown-job')).check).toMatchObject({
        status: 'inconclusive',
        reason: 'CONDITION_ERROR',
      });
    });
  });

  describe('when a value from the proposal tries to change the query', () => {
    it('is escaped inside its label string', async () => {
      const { check } = await verify(errorRate(), 'x"} or vector(0) or {job="checkout');
      expect(check.evidence).toMatchObject({
        query: expect.stringContaining('job="x\\"} or vector(0) or {job=\\"checkout"'),
      });
      expect(check.status).toBe('inconclusive');
    });
  });

  describe('when Prometheus refuses the query', () => {
    it('is inconclusive (PROMETHEUS_ERROR)', async () => {
      const { check } = await verify({ ...errorRate(), query: 'syntax error' }, 'checkout');
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'PROMETHEUS_ERROR' });
    });
  });

  describe('when the query is a scalar', () => {
    it('judges its value', async () => {
      expect(
        (await verify({ ...errorRate(), query: 'scalar(1)', successCondition: 'value == 1' }, 'x')).check
          .status,
      ).toBe('pass');
    });
  });

  describe('when the guard is not told to allow loopback', () => {
    it('is refused by the SSRF guard: inconclusive, never failed', async () => {
      const { status, check } = await verify(errorRate(), 'payments', createGuardedFetch());
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
      expect(prometheus.requests.filter((r) => r.url.includes('payments'))).toHaveLength(1);
    });
  });
});

new VerifierTester({
  describe,
  it,
  grants: { fetch: allowLoopback },
  proposal: { target: { kind: 'service', id: 'checkout', env: 'prod' } },
}).run('prometheus under the VerifierTester', prometheusVerifier, {
  pass: [
    {
      get options() {
        return errorRate();
      },
    },
  ],
  fail: [
    {
      get options() {
        return errorRate();
      },
      proposal: { target: { kind: 'service', id: 'payments', env: 'prod' } },
    },
  ],
  inconclusive: [
    {
      name: 'source down',
      reason: 'SOURCE_UNAVAILABLE',
      get options() {
        return { ...errorRate(), url: `http://127.0.0.1:${downPort}` };
      },
    },
  ],
  invalidOptions: [
    {
      name: 'a placeholder outside a label string',
      options: { url: 'http://p.test', query: 'up{job={target.id}}', successCondition: 'true' },
      field: '/options/query',
    },
    {
      name: 'no condition',
      options: { url: 'http://p.test', query: 'up' },
      field: '/options/successCondition',
    },
    {
      name: 'a condition over an unknown variable',
      options: { url: 'http://p.test', query: 'up', successCondition: 'rows > 1' },
      field: '/options/successCondition',
    },
    {
      name: 'a non-http URL',
      options: { url: 'file:///etc', query: 'up', successCondition: 'true' },
      field: '/options/url',
    },
  ],
});

let downPort = 1;
beforeAll(async () => {
  downPort = await closedPort();
});
