import { createVerifierRegistry, type FetchGrant, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedFetch, type ResolveHost } from '../net/guarded-fetch';
import { closedPort, sendJson, startServer, type TestServer } from '../test-support/http-server';
import { httpJsonVerifier } from './http-json-verifier';

// The "ledger API" is a real HTTP server on 127.0.0.1; loopback is allowed explicitly for it.
let api: TestServer;
const refunds: Record<string, unknown> = {
  re_1: { id: 're_1', payment_id: 'pay_123', status: 'succeeded', amount: 1250, currency: 'EUR' },
  re_2: { id: 're_2', payment_id: 'pay_123', status: 'pending', amount: 1250, currency: 'EUR' },
  // Another payment's refund of the same amount: what a gateway could name instead of its own.
  re_other: { id: 're_other', payment_id: 'pay_999', status: 'succeeded', amount: 1250, currency: 'EUR' },
};
beforeAll(async () => {
  api = await startServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const [, kind, id] = url.pathname.split('/');
    if (kind === 'refunds' && id !== undefined && refunds[decodeURIComponent(id)]) {
      return sendJson(res, 200, refunds[decodeURIComponent(id)]);
    }
    if (kind === 'refunds') return sendJson(res, 404, { error: 'not found' });
    if (kind === 'problem')
      return sendJson(res, 200, { status: 'succeeded' }, 'application/problem+json; charset=utf-8');
    if (kind === 'html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p>hi</p>');
      return;
    }
    if (kind === 'broken') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":');
      return;
    }
    if (kind === 'big') {
      // Chunked (no content-length), so the cap must hold while streaming.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"pad":"');
      res.write('x'.repeat(4096));
      res.end('"}');
      return;
    }
    if (kind === 'error') return sendJson(res, 503, { error: 'down' });
    if (kind === 'moved') {
      res.writeHead(301, { location: `/refunds/${id}` }).end();
      return;
    }
    if (kind === 'to-private') {
      res.writeHead(302, { location: 'http://192.168.1.20/refunds/re_1' }).end();
      return;
    }
    if (kind === 'to-evil-name') {
      res.writeHead(302, { location: 'http://evil.test/refunds/re_1' }).end();
      return;
    }
    if (kind === 'loop') {
      res.writeHead(302, { location: '/loop/again' }).end();
      return;
    }
    if (kind === 'hang') return; // never answers
    if (kind === 'echo') return sendJson(res, 200, { path: req.url });
    sendJson(res, 404, {});
  });
});
afterAll(() => api.close());

const resolveHost: ResolveHost = async (hostname) => {
  const table: Record<string, string[]> = { 'ledger.test': ['127.0.0.1'], 'evil.test': ['10.1.2.3'] };
  const found = table[hostname];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};
const allowLoopback = createGuardedFetch({ allowHosts: ['127.0.0.1'], resolveHost });

async function verify(
  options: Record<string, unknown>,
  more: { fetch?: FetchGrant; args?: Record<string, string>; result?: Record<string, string> } = {},
) {
  const registry = createVerifierRegistry([
    {
      verifier: httpJsonVerifier,
      handles: ['refund.recorded'],
      options,
      grants: { fetch: more.fetch ?? allowLoopback },
    },
  ]);
  const outcome = await runVerifiers({
    registry,
    proposal: exampleProposal({
      arguments: { amount: 1250, refund_id: 're_1', ...more.args },
      postconditions: [{ name: 'refund.recorded' }],
    }),
    observation: exampleObservation({
      server_id: 'payments-mcp',
      result: more.result ?? { refund_id: 're_1' },
    }),
  });
  return { ...outcome, check: outcome.checks[0]! };
}

const url = (path: string) => `${api.url}${path}`;

describe('http-json verifier', () => {
  describe('when every assertion holds', () => {
    it('passes, recording the URL, status and each assertion', async () => {
      const { status, check } = await verify({
        url: url('/refunds/{arguments.refund_id}'),
        source: 'ledger-api',
        assertions: [
          { op: 'exists', pointer: '/id' },
          { op: 'equals', pointer: '/status', value: 'succeeded' },
          { op: 'equals', pointer: '/amount', from: 'arguments.amount' },
          { op: 'matches', pointer: '/id', pattern: '^re_' },
          { op: 'gte', pointer: '/amount', value: 1000 },
          { op: 'absent', pointer: '/deleted_at' },
        ],
      });
      expect(status).toBe('passed');
      expect(check).toMatchObject({
        status: 'pass',
        source: 'ledger-api',
        observed: { '/id': 're_1', '/status': 'succeeded', '/amount': 1250 },
        evidence: { url: url('/refunds/re_1'), status: 200 },
      });
    });
  });

  describe('when an assertion does not hold', () => {
    it.each([
      ['a different value', { op: 'equals', pointer: '/status', value: 'succeeded' }],
      ['a missing pointer', { op: 'exists', pointer: '/settled_at' }],
      ['a failed comparison', { op: 'gt', pointer: '/amount', value: 5000 }],
      ['a pattern that does not match', { op: 'matches', pointer: '/status', pattern: '^succ' }],
    ])('fails on %s', async (_label, assertion) => {
      const { status, check } = await verify({ url: url('/refunds/re_2'), assertions: [assertion] });
      expect(status).toBe('failed');
      expect(check.status).toBe('fail');
    });
  });

  describe('when the source says the resource does not exist', () => {
    it('fails on 404', async () => {
      const { check } = await verify(
        { url: url('/refunds/{arguments.refund_id}'), assertions: [] },
        { args: { refund_id: 're_9' } },
      );
      expect(check).toMatchObject({ status: 'fail', observed: { status: 404 } });
    });
  });

  describe('when values are substituted into the URL', () => {
    it('URL-encodes them so they stay inside one path segment', async () => {
      const { check } = await verify(
        {
          url: url('/echo/{arguments.refund_id}?env={target.env}'),
          assertions: [{ op: 'exists', pointer: '/path' }],
        },
        { args: { refund_id: 'a b/../c?d=1#e' } },
      );
      expect(check.observed).toEqual({ '/path': '/echo/a%20b%2F..%2Fc%3Fd%3D1%23e?env=test' });
    });

    it.each([
      ['missing', 'arguments.nothing', 'TEMPLATE_VALUE_MISSING'],
      ['a dot-dot segment', 'arguments.refund_id', 'TEMPLATE_VALUE_INVALID'],
    ])('is inconclusive when a value is %s', async (_label, path, reason) => {
      const { check } = await verify({ url: url(`/refunds/{${path}}`) }, { args: { refund_id: '..' } });
      expect(check).toMatchObject({ status: 'inconclusive', reason });
    });

    it('is inconclusive when a from value is missing', async () => {
      const { check } = await verify({
        url: url('/refunds/re_1'),
        assertions: [{ op: 'equals', pointer: '/amount', from: 'params.amount' }],
      });
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'TEMPLATE_VALUE_MISSING' });
    });
  });

  describe('when the answer is not usable JSON', () => {
    it.each([
      ['HTML', '/html/x', 'UNEXPECTED_CONTENT_TYPE'],
      ['truncated JSON', '/broken/x', 'INVALID_JSON'],
      ['a body over the cap', '/big/x', 'RESPONSE_TOO_LARGE'],
      ['a 503', '/error/x', 'UNEXPECTED_STATUS'],
    ])('is inconclusive on %s, never failed', async (_label, path, reason) => {
      const { status, check } = await verify({
        url: url(path),
        maxBytes: 1024,
        assertions: [{ op: 'exists', pointer: '' }],
      });
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'inconclusive', reason });
    });

    it('accepts a +json media type', async () => {
      const { check } = await verify({
        url: url('/problem/x'),
        assertions: [{ op: 'equals', pointer: '/status', value: 'succeeded' }],
      });
      expect(check.status).toBe('pass');
    });

    it('is inconclusive when the declared length is over the cap', async () => {
      const { check } = await verify({ url: url('/refunds/re_1'), maxBytes: 10 });
      expect(check).toMatchObject({ reason: 'RESPONSE_TOO_LARGE' });
    });
  });

  describe('when the source redirects', () => {
    it('follows within the cap and records every hop', async () => {
      const { check } = await verify({
        url: url('/moved/re_1'),
        assertions: [{ op: 'exists', pointer: '/id' }],
      });
      expect(check).toMatchObject({
        status: 'pass',
        evidence: { hops: [url('/moved/re_1'), url('/refunds/re_1')] },
      });
    });

    it('is inconclusive past the cap', async () => {
      const { check } = await verify({ url: url('/loop/x'), maxRedirects: 2 });
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'TOO_MANY_REDIRECTS' });
    });

    it('refuses a hop to a private address with SOURCE_FORBIDDEN', async () => {
      const { status, check } = await verify({ url: url('/to-private/x') });
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({
        status: 'error',
        reason: 'SOURCE_FORBIDDEN',
        evidence: { address: '192.168.1.20' },
      });
    });

    it('refuses a hop to a hostname that resolves to a private address', async () => {
      const { check } = await verify({ url: url('/to-evil-name/x') });
      expect(check).toMatchObject({
        status: 'error',
        reason: 'SOURCE_FORBIDDEN',
        evidence: { host: 'evil.test' },
      });
    });
  });

  describe('when the configured host is not allowed', () => {
    it('refuses loopback by default with SOURCE_FORBIDDEN, never fail', async () => {
      const before = api.requests.length;
      const { status, check } = await verify(
        { url: url('/refunds/re_1') },
        { fetch: createGuardedFetch({ resolveHost }) },
      );
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
      expect(api.requests.length).toBe(before);
    });

    it('refuses a hostname that resolves to a private address', async () => {
      const { check } = await verify({ url: 'http://evil.test/refunds/{arguments.refund_id}' });
      expect(check).toMatchObject({
        status: 'error',
        reason: 'SOURCE_FORBIDDEN',
        evidence: { range: 'private' },
      });
    });

    it('reaches an allowed name through its checked address', async () => {
      const { check } = await verify({
        url: `http://ledger.test:${api.port}/refunds/re_1`,
        assertions: [{ op: 'exists', pointer: '/id' }],
      });
      expect(check).toMatchObject({ status: 'pass', source: `http://ledger.test:${api.port}` });
    });
  });

  describe('when the source is down or slow', () => {
    it('records SOURCE_UNAVAILABLE when nothing listens', async () => {
      const port = await closedPort();
      const { status, check } = await verify({ url: `http://127.0.0.1:${port}/refunds/re_1` });
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });

    it('records VERIFIER_TIMEOUT at the deadline', async () => {
      const registry = createVerifierRegistry([
        {
          verifier: httpJsonVerifier,
          handles: ['r'],
          options: { url: url('/hang/x') },
          grants: { fetch: allowLoopback },
          timeoutMs: 100,
        },
      ]);
      const outcome = await runVerifiers({
        registry,
        proposal: exampleProposal({ postconditions: [{ name: 'r' }] }),
        observation: exampleObservation(),
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'VERIFIER_TIMEOUT' });
    });
  });

  describe('with HEAD', () => {
    it('passes on the expected status and fails on 404', async () => {
      expect((await verify({ url: url('/refunds/re_1'), method: 'HEAD' })).check.status).toBe('pass');
      expect((await verify({ url: url('/refunds/re_9'), method: 'HEAD' })).check.status).toBe('fail');
    });
  });
});

describe("http-json verifier looking up what the tool's result names", () => {
  // The refund id exists only once the tool ran, so the lookup reads the result; the
  // binding ties what it finds to the payment the approver saw.
  const bound = () => ({
    url: url('/refunds/{observation.result.refund_id}'),
    source: 'ledger-api',
    bind: [{ pointer: '/payment_id', from: 'target.id' }],
    evidenceRef: 'refund:{result.id}',
    assertions: [
      { op: 'equals', pointer: '/status', value: 'succeeded' },
      { op: 'equals', pointer: '/amount', from: 'arguments.amount' },
    ],
  });

  describe("when the result names the proposal's own refund", () => {
    it('passes and names the refund it found', async () => {
      const { status, check } = await verify(bound());
      expect(status).toBe('passed');
      expect(check).toMatchObject({ status: 'pass', evidence_ref: 'refund:re_1' });
    });
  });

  describe("when the result names another payment's refund of the same amount", () => {
    it('fails: the refund does not belong to the payment the proposal names', async () => {
      const { status, check } = await verify(bound(), { result: { refund_id: 're_other' } });
      expect(status).toBe('failed');
      expect(check.status).toBe('fail');
      expect(check.observed).toMatchObject({ '/payment_id': 'pay_999' });
      expect(check.evidence_ref).toBe('refund:re_other');
    });
  });

  describe('when the evidence cannot be named', () => {
    it('is inconclusive (EVIDENCE_REF_MISSING), never passed', async () => {
      const { check } = await verify({ ...bound(), evidenceRef: 'refund:{result.settlement_id}' });
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'EVIDENCE_REF_MISSING' });
    });
  });

  describe('when the options read the result without binding it', () => {
    it.each([
      ['no bind', { bind: undefined }],
      ['no evidenceRef', { evidenceRef: undefined }],
    ])('refuses them at registration with %s (OPTIONS_INVALID at /options/url)', (_label, change) => {
      expect(() =>
        createVerifierRegistry([
          {
            verifier: httpJsonVerifier,
            options: { ...bound(), ...change },
            grants: { fetch: allowLoopback },
          },
        ]),
      ).toThrow(expect.objectContaining({ code: 'OPTIONS_INVALID', field: '/options/url' }));
    });
  });
});

describe('http-json verifier with CEL conditions', () => {
  describe('when the successCondition holds over the body and the proposal', () => {
    it('passes and records the condition with its value', async () => {
      const { status, check } = await verify({
        url: url('/refunds/{arguments.refund_id}'),
        successCondition:
          'result.status == "succeeded" && result.amount == arguments.amount && status == 200',
      });
      expect(status).toBe('passed');
      expect(check.evidence).toMatchObject({
        conditions: { successCondition: { value: true } },
      });
    });
  });

  describe('when the failureCondition holds', () => {
    it('fails', async () => {
      const { check } = await verify({
        url: url('/refunds/re_2'),
        failureCondition: 'result.status == "pending"',
      });
      expect(check).toMatchObject({ status: 'fail' });
    });
  });

  describe('when the condition cannot be evaluated on the body', () => {
    it('is inconclusive with CONDITION_ERROR, never failed', async () => {
      const { status, check } = await verify({
        url: url('/refunds/re_1'),
        successCondition: 'result.settlement.date != ""',
      });
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'inconclusive', reason: 'CONDITION_ERROR' });
    });
  });

  describe('when assertions pass but the condition does not', () => {
    it('fails', async () => {
      const { check } = await verify({
        url: url('/refunds/re_1'),
        assertions: [{ op: 'exists', pointer: '/id' }],
        successCondition: 'result.amount > 5000',
      });
      expect(check.status).toBe('fail');
    });
  });
});

new VerifierTester({
  describe,
  it,
  grants: { fetch: allowLoopback },
  proposal: { arguments: { refund_id: 're_1' } },
}).run('http-json under the VerifierTester', httpJsonVerifier, {
  // Getters: the server's port is known only once beforeAll has run.
  pass: [
    {
      postcondition: 'http-json',
      get options() {
        return { url: url('/refunds/{arguments.refund_id}'), assertions: [{ op: 'exists', pointer: '/id' }] };
      },
    },
  ],
  fail: [
    {
      postcondition: 'http-json',
      get options() {
        return {
          url: url('/refunds/re_2'),
          assertions: [{ op: 'equals', pointer: '/status', value: 'succeeded' }],
        };
      },
    },
  ],
  inconclusive: [
    {
      postcondition: 'http-json',
      reason: 'SOURCE_FORBIDDEN',
      grants: { fetch: createGuardedFetch({ resolveHost }) },
      get options() {
        return { url: url('/refunds/re_1') };
      },
    },
  ],
  invalidOptions: [
    {
      name: 'a placeholder in the host',
      options: { url: 'http://{arguments.host}/x' },
      field: '/options/url',
    },
    { name: 'a relative URL', options: { url: '/refunds/1' }, field: '/options/url' },
    { name: 'a non-http scheme', options: { url: 'file:///etc/passwd' }, field: '/options/url' },
    {
      name: 'an unknown placeholder root',
      options: { url: 'http://x.test/{env.HOME}' },
      field: '/options/url',
    },
    {
      name: 'assertions on HEAD',
      options: { url: 'http://x.test/', method: 'HEAD', assertions: [{ op: 'exists', pointer: '/a' }] },
      field: '/options/assertions',
    },
    {
      name: 'a bad pointer',
      options: { url: 'http://x.test/', assertions: [{ op: 'exists', pointer: 'a' }] },
      field: '/options/assertions/0/pointer',
    },
    {
      name: 'equals without a value',
      options: { url: 'http://x.test/', assertions: [{ op: 'equals', pointer: '/a' }] },
      field: '/options/assertions/0/value',
    },
    { name: 'an unknown option', options: { url: 'http://x.test/', follow: true }, field: '/options' },
    {
      name: 'a successCondition that does not parse',
      options: { url: 'http://x.test/', successCondition: 'result.status ==' },
      field: '/options/successCondition',
    },
    {
      name: 'a failureCondition over an unknown variable',
      options: { url: 'http://x.test/', failureCondition: 'process.env.X == "1"' },
      field: '/options/failureCondition',
    },
    {
      name: 'a status both ways',
      options: { url: 'http://x.test/', absentStatus: [200] },
      field: '/options/absentStatus',
    },
  ],
});
