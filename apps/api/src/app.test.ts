import { OPERATOR_ACTOR } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from './app';
import { hashApiKey } from './auth/api-key';
import type { KeyStore } from './auth/key-store';
import { createMemoryLogger } from './logger';
import { createHarness, type Harness } from './testing/app-harness';

let h: Harness;
let admin: string;
let gateway: string;
const validKey = { identity: 'user:bob', roles: ['approver'] };

beforeAll(async () => {
  h = await createHarness({ limits: { bodyBytes: 4096, jsonDepth: 8 } });
  admin = await h.keyFor('user:root', ['admin']);
  gateway = await h.keyFor('agent:gw', ['gateway']);
});
afterAll(async () => {
  await h.close();
});

async function errorOf(response: Response) {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  return { status: response.status, ...body.error };
}

describe('createApp', () => {
  describe('when a JSON body is bad', () => {
    const deep = (n: number): unknown => (n === 0 ? 1 : [deep(n - 1)]);
    const cases: Array<{
      name: string;
      headers?: Record<string, string>;
      body: string | undefined;
      status: number;
      code: string;
    }> = [
      {
        name: 'wrong content type',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify(validKey),
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      },
      {
        name: 'form content type',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'identity=user:x',
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      },
      {
        name: 'non-UTF-8 charset',
        headers: { 'content-type': 'application/json; charset=latin1' },
        body: JSON.stringify(validKey),
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      },
      { name: 'malformed JSON', body: '{"identity": "user:bob", ', status: 400, code: 'MALFORMED_JSON' },
      { name: 'empty body', body: '', status: 400, code: 'MALFORMED_JSON' },
      {
        name: 'body over the limit',
        body: JSON.stringify({ ...validKey, pad: 'x'.repeat(5000) }),
        status: 413,
        code: 'BODY_TOO_LARGE',
      },
      {
        name: 'Content-Length over the limit',
        headers: { 'content-length': '999999' },
        body: JSON.stringify(validKey),
        status: 413,
        code: 'BODY_TOO_LARGE',
      },
      {
        name: 'a body over the limit behind a small Content-Length',
        headers: { 'content-length': '10' },
        body: JSON.stringify({ ...validKey, pad: 'x'.repeat(5000) }),
        status: 413,
        code: 'BODY_TOO_LARGE',
      },
      {
        name: 'nesting deeper than the limit',
        body: JSON.stringify({ ...validKey, x: deep(12) }),
        status: 400,
        code: 'NESTING_TOO_DEEP',
      },
      {
        name: 'duplicate keys',
        body: '{"identity":"user:bob","roles":["approver"],"identity":"user:eve"}',
        status: 400,
        code: 'DUPLICATE_KEY',
      },
      {
        name: 'duplicate keys spelled with escapes',
        body: '{"identity":"user:bob","roles":["approver"],"\\u0069dentity":"user:eve"}',
        status: 400,
        code: 'DUPLICATE_KEY',
      },
      {
        name: 'a number JSON cannot carry',
        body: '{"identity":"user:bob","roles":["approver"],"x":1e999}',
        status: 400,
        code: 'NUMBER_NOT_EXACT',
      },
      {
        name: 'a NUL character',
        body: '{"identity":"user:a\\u0000b","roles":["approver"]}',
        status: 400,
        code: 'NUL_CHARACTER',
      },
      {
        name: 'a lone surrogate',
        body: '{"identity":"user:\\ud800","roles":["approver"]}',
        status: 400,
        code: 'LONE_SURROGATE',
      },
      { name: 'not UTF-8', headers: {}, body: undefined, status: 400, code: 'MALFORMED_JSON' },
      {
        name: 'an unknown field',
        body: JSON.stringify({ ...validKey, is_admin: true }),
        status: 400,
        code: 'INVALID_REQUEST',
      },
      {
        name: 'a wrong type',
        body: JSON.stringify({ identity: 'user:bob', roles: 'approver' }),
        status: 400,
        code: 'INVALID_REQUEST',
      },
      {
        name: 'a missing field',
        body: JSON.stringify({ identity: 'user:bob' }),
        status: 400,
        code: 'INVALID_REQUEST',
      },
      {
        name: 'an unknown role',
        body: JSON.stringify({ identity: 'user:bob', roles: ['root'] }),
        status: 400,
        code: 'INVALID_REQUEST',
      },
      {
        name: 'no body at all',
        headers: { 'content-type': 'application/json' },
        body: undefined,
        status: 400,
        code: 'MALFORMED_JSON',
      },
    ];

    it.each(cases)(
      'refuses $name with $status $code and writes nothing',
      async ({ name, headers, body, status, code }) => {
        const before = await h.rowCounts();
        const init: RequestInit = {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...headers },
        };
        if (name === 'not UTF-8')
          init.body = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]);
        else if (body !== undefined) init.body = body;
        const response = await h.app.request('/v1/keys', init);
        const error = await errorOf(response);
        expect({ status: error.status, code: error.code }).toEqual({ status, code });
        expect(error.request_id).toMatch(/.+/);
        expect(await h.rowCounts()).toEqual(before);
      },
    );

    it('streams a chunked body and stops reading past the limit', async () => {
      let pulled = 0;
      const chunk = new TextEncoder().encode(`{"pad":"${'x'.repeat(1000)}`);
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled++;
          controller.enqueue(chunk);
          if (pulled > 1000) controller.close();
        },
      });
      const response = await h.app.request('/v1/keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect((await errorOf(response)).code).toBe('BODY_TOO_LARGE');
      expect(pulled).toBeLessThan(10);
    });
  });

  describe('when a proposal body is bad', () => {
    const proposal = {
      idempotency_key: 'k1',
      action: 'refund.issue',
      server_id: 'billing',
      tool_name: 'refund.issue',
      target: { kind: 'order', id: 'A-1', env: 'staging' },
      arguments: { amount: 1 },
      side_effect: 'compensatable',
    };
    const text = JSON.stringify(proposal);
    const withArgs = (args: string) => text.replace('{"amount":1}', args);
    it.each([
      ['wrong content type', text, { 'content-type': 'text/plain' }, 'UNSUPPORTED_MEDIA_TYPE'],
      ['malformed JSON', text.slice(0, -1), {}, 'MALFORMED_JSON'],
      ['too large', withArgs(`{"pad":"${'x'.repeat(5000)}"}`), {}, 'BODY_TOO_LARGE'],
      ['too deep', withArgs(`${'{"a":'.repeat(10)}1${'}'.repeat(10)}`), {}, 'NESTING_TOO_DEEP'],
      ['a duplicate key', withArgs('{"amount":1,"amount":100}'), {}, 'DUPLICATE_KEY'],
      ['a number JSON cannot carry', withArgs('{"amount":1e400}'), {}, 'NUMBER_NOT_EXACT'],
      ['a lone surrogate', withArgs('{"note":"\\udc00"}'), {}, 'LONE_SURROGATE'],
      ['a NUL character', withArgs('{"note":"a\\u0000"}'), {}, 'NUL_CHARACTER'],
      ['an unknown field', JSON.stringify({ ...proposal, requester: 'user:root' }), {}, 'INVALID_REQUEST'],
      ['a wrong type', JSON.stringify({ ...proposal, arguments: [1] }), {}, 'INVALID_REQUEST'],
    ])('refuses %s with %s and writes nothing', async (_name, body, headers, code) => {
      const before = await h.rowCounts();
      const response = await h.call('POST', '/v1/proposals', { key: gateway, body, headers });
      expect((await errorOf(response)).code).toBe(code);
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('when the arguments hold an own "__proto__" key', () => {
    it('records, hashes and shows them as sent', async () => {
      const body = JSON.stringify({
        idempotency_key: 'k-proto',
        action: 'refund.issue',
        server_id: 'billing',
        tool_name: 'refund.issue',
        target: { kind: 'order', id: 'A-2', env: 'staging' },
        arguments: { amount: 1 },
        side_effect: 'compensatable',
      }).replace('{"amount":1}', '{"amount":1,"__proto__":{"amount":5000}}');
      const response = await h.call('POST', '/v1/proposals', { key: gateway, body });
      expect(response.status).toBe(201);
      const text = await response.text();
      const { proposal } = JSON.parse(text) as { proposal: { id: string; arguments: object } };
      // Not dropped: the tool that receives the body sees the key, so the approver must too.
      expect(Object.getOwnPropertyDescriptor(proposal.arguments, '__proto__')?.value).toEqual({
        amount: 5000,
      });
      const shown = await (await h.call('GET', `/v1/proposals/${proposal.id}`, { key: gateway })).text();
      expect(shown).toContain('"arguments":{"__proto__":{"amount":5000},"amount":1}');
      // Its content is a field of its own, read back for verification like any other.
      const auditor = await h.keyFor('user:audrey', ['auditor']);
      const verified = await h.call('GET', '/v1/logs/default/verify', { key: auditor });
      expect(await verified.json()).toMatchObject({ ok: true, failures: [] });
    });
  });

  describe('when the body is good', () => {
    it('accepts it with a charset parameter', async () => {
      const response = await h.call('POST', '/v1/keys', {
        key: admin,
        body: validKey,
        headers: { 'content-type': 'application/json; charset=UTF-8' },
      });
      expect(response.status).toBe(201);
    });
  });

  describe('when the caller is not authenticated', () => {
    it.each([
      ['no Authorization header', undefined],
      ['another scheme', 'Basic dXNlcjpwYXNz'],
      ['an unknown key', 'Bearer vch_notakeyatall'],
      ['a bearer with nothing', 'Bearer '],
    ])('answers 401 UNAUTHENTICATED for %s', async (_name, header) => {
      const response = await h.app.request(
        '/v1/keys',
        header === undefined ? {} : { headers: { authorization: header } },
      );
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await errorOf(response)).toMatchObject({ status: 401, code: 'UNAUTHENTICATED' });
    });

    it('answers 401 for a revoked key', async () => {
      const { key, secret } = await h.keys.create({
        identity: 'user:gone',
        roles: ['admin'],
        createdBy: OPERATOR_ACTOR,
      });
      expect((await h.call('GET', '/v1/keys', { key: secret })).status).toBe(200);
      await h.keys.revoke(key.id, OPERATOR_ACTOR);
      expect(await errorOf(await h.call('GET', '/v1/keys', { key: secret }))).toMatchObject({
        status: 401,
        code: 'UNAUTHENTICATED',
      });
    });

    it('refuses before reading the body', async () => {
      const response = await h.call('POST', '/v1/keys', { body: '{not json' });
      expect((await errorOf(response)).code).toBe('UNAUTHENTICATED');
    });
  });

  describe('when something unexpected fails', () => {
    it('answers 500 INTERNAL with a request id and nothing else', async () => {
      const secret = 'vch_thisIsTheSecretThatMustNotLeak';
      const broken: KeyStore = {
        ...h.keys,
        findByHash: async (hash) => ({
          status: 'valid',
          proof: 'proven',
          keyHash: hash,
          key: {
            id: 'key_x',
            identity: 'user:x',
            roles: ['admin'],
            scopes: [],
            environments: null,
            logs: null,
            createdBy: 'x',
            createdAt: 'x',
            revokedAt: null,
            expiresAt: null,
          },
        }),
        list: async () => {
          throw new Error(`connection to postgres://admin:${secret}@db failed`);
        },
      };
      const logger = createMemoryLogger();
      const failing = createApp({ ledger: h.ledger, keys: broken, logger });
      {
        const response = await failing.request('/v1/keys', {
          headers: { authorization: `Bearer ${secret}`, 'x-request-id': 'req-123' },
        });
        const text = await response.text();
        expect(response.status).toBe(500);
        expect(JSON.parse(text)).toEqual({
          error: { code: 'INTERNAL', message: expect.any(String), request_id: 'req-123' },
        });
        expect(text).not.toContain(secret);
        expect(text).not.toContain('at ');
        const logged = logger.lines.find((l) => l.msg === 'request failed');
        expect(logged).toMatchObject({ request_id: 'req-123', code: 'INTERNAL' });
        expect(JSON.stringify(logger.lines)).not.toContain(`Bearer ${secret}`);
      }
    });
  });

  describe('when a route does not exist', () => {
    it('answers 404 ROUTE_NOT_FOUND in the envelope', async () => {
      expect(await errorOf(await h.call('GET', '/nope'))).toMatchObject({
        status: 404,
        code: 'ROUTE_NOT_FOUND',
      });
    });
  });

  describe('when a request is logged', () => {
    it('logs request id, route, status and duration but never the key', async () => {
      await h.call('GET', '/v1/keys', { key: admin, headers: { 'x-request-id': 'log-check-1' } });
      const line = h.logger.lines.find((l) => l.request_id === 'log-check-1');
      expect(line).toMatchObject({ msg: 'request', method: 'GET', route: '/v1/keys', status: 200 });
      expect(typeof line?.duration_ms).toBe('number');
      expect(JSON.stringify(h.logger.lines)).not.toContain(admin);
      expect(JSON.stringify(h.logger.lines)).not.toContain(hashApiKey(admin));
    });
  });
});

describe('createApp while draining', () => {
  describe('when shutdown has begun', () => {
    it('answers new requests 503 NOT_READY with Connection: close, and /readyz not ready', async () => {
      const draining = createApp({ ledger: h.ledger, keys: h.keys, draining: () => true });
      const refused = await draining.request('/v1/keys', { headers: { authorization: `Bearer ${admin}` } });
      expect(refused.headers.get('connection')).toBe('close');
      expect(await errorOf(refused)).toMatchObject({ status: 503, code: 'NOT_READY' });
      expect((await draining.request('/healthz')).status).toBe(200);
      const ready = await draining.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'not_ready', draining: true });
    });
  });
});

describe('GET /healthz and /readyz', () => {
  describe('when the database is up and migrated', () => {
    it('answers 200 without a key', async () => {
      expect((await h.call('GET', '/healthz')).status).toBe(200);
      const ready = await h.call('GET', '/readyz');
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ready',
        database: { ok: true },
        migrations: { ok: true },
      });
    });
  });

  describe('when migrations are behind', () => {
    it('answers 503 not_ready', async () => {
      const behind = createApp({
        ledger: h.ledger,
        readiness: async () => ({
          ready: false,
          database: { ok: true },
          migrations: { ok: false, expected: 3, applied: 2 },
        }),
      });
      const response = await behind.request('/readyz');
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ status: 'not_ready', migrations: { applied: 2 } });
    });
  });
});
