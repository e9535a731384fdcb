import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type VouchApp } from '../app';
import { createKeyStore } from '../auth/key-store';
import { createHarness, type Harness } from '../testing/app-harness';

// Rate limits, key expiry and separated roles, through HTTP (one PGlite for the file).
describe('key policy over HTTP', () => {
  let h: Harness;
  let admin: string;
  beforeAll(async () => {
    h = await createHarness();
    admin = await h.keyFor('user:root', ['admin']);
  });
  afterAll(async () => {
    await h?.close();
  });

  const appWith = (options: Partial<Parameters<typeof createApp>[0]>): VouchApp =>
    createApp({ ledger: h.ledger, keys: h.keys, logger: h.logger, ...options });
  const get = (app: VouchApp, key: string) =>
    app.request('/v1/tools', { headers: { authorization: `Bearer ${key}` } });

  describe('when a key is over its rate', () => {
    it('answers 429 RATE_LIMITED with Retry-After, per key, and lets requests through once refilled', async () => {
      let clock = 0;
      const app = appWith({ rateLimit: { requestsPerSecond: 0.5, burst: 2, now: () => clock } });
      const reader = await h.keyFor('user:reader', ['auditor']);
      const other = await h.keyFor('user:other', ['auditor']);
      expect((await get(app, reader)).status).toBe(200);
      expect((await get(app, reader)).status).toBe(200);
      const refused = await get(app, reader);
      expect(refused.status).toBe(429);
      // One token at half a token per second: two seconds.
      expect(refused.headers.get('retry-after')).toBe('2');
      expect(((await refused.json()) as { error: { code: string } }).error).toMatchObject({
        code: 'RATE_LIMITED',
        details: { retry_after_seconds: 2 },
      });
      // The request log names the refusal and the key by its id and identity, never the key.
      const line = h.logger.lines.findLast((entry) => entry.msg === 'request')!;
      expect(line).toMatchObject({ status: 429, error_code: 'RATE_LIMITED', identity: 'user:reader' });
      expect(line.key_id).toMatch(/^key_/);
      expect(JSON.stringify(h.logger.lines)).not.toContain(reader);
      // Another key has a bucket of its own.
      expect((await get(app, other)).status).toBe(200);
      clock += 2000;
      expect((await get(app, reader)).status).toBe(200);
      expect((await get(app, reader)).status).toBe(429);
    });

    it('counts nothing when no rate is set', async () => {
      const reader = await h.keyFor('user:unlimited', ['auditor']);
      const app = appWith({});
      for (let i = 0; i < 5; i++) expect((await get(app, reader)).status).toBe(200);
    });
  });

  describe('when a key is older than the maximum age', () => {
    it('refuses it with 401 KEY_EXPIRED and accepts it while younger', async () => {
      const reader = await h.keyFor('user:aging', ['auditor']);
      const day = 86_400_000;
      const young = appWith({ keyMaxAgeDays: 30, now: () => new Date(Date.now() + 29 * day) });
      expect((await get(young, reader)).status).toBe(200);
      const old = appWith({ keyMaxAgeDays: 30, now: () => new Date(Date.now() + 31 * day) });
      const refused = await get(old, reader);
      expect(refused.status).toBe(401);
      const body = (await refused.json()) as { error: { code: string; details: { key_id: string } } };
      expect(body.error.code).toBe('KEY_EXPIRED');
      expect(body.error.details.key_id).toMatch(/^key_/);
      expect(JSON.stringify(body)).not.toContain(reader);
      expect(JSON.stringify(body)).not.toContain(createHash('sha256').update(reader).digest('hex'));
    });
  });

  describe('when a key would hold roles that must stay apart', () => {
    it.each([[['gateway', 'approver']], [['admin', 'approver']], [['gateway', 'redactor']]])(
      'refuses %j with 400 ROLE_COMBINATION_FORBIDDEN and writes nothing',
      async (roles) => {
        const before = await h.rowCounts();
        const response = await h.call('POST', '/v1/keys', {
          key: admin,
          body: { identity: 'user:greedy', roles },
        });
        expect(response.status).toBe(400);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
          'ROLE_COMBINATION_FORBIDDEN',
        );
        expect(await h.rowCounts()).toEqual(before);
      },
    );

    it('issues roles that may go together (verifier + auditor)', async () => {
      const response = await h.call('POST', '/v1/keys', {
        key: admin,
        body: { identity: 'user:reviewer', roles: ['verifier', 'auditor'] },
      });
      expect(response.status).toBe(201);
    });

    it('issues a combination when the server allows it', async () => {
      const app = appWith({ keys: createKeyStore(h.ledger, { allowRoleCombinations: true }) });
      const response = await app.request('/v1/keys', {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ identity: 'user:allowed', roles: ['gateway', 'approver'] }),
      });
      expect(response.status).toBe(201);
    });
  });
});
