import { type Database, openDatabase } from '@vouch/ledger';
import { createTestDatabase } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from './auth/api-key';
import { createHarness, type Harness } from './testing/app-harness';
import { type LinkMode, startTcpProxy, type TcpProxy } from './testing/tcp-proxy';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

const proposal = (n: number) => ({
  idempotency_key: `outage-${n}`,
  action: 'pay.refund',
  server_id: 'pay',
  tool_name: 'refund',
  target: { kind: 'order', id: `o-${n}`, env: 'staging' },
  arguments: { amount: n },
  side_effect: 'compensatable',
});

/** Everything the harness logged, as one string, to search for what must never be in it. */
const logText = (h: Harness) => JSON.stringify(h.logger.lines);

const url = process.env.DATABASE_URL;

// Needs a Postgres server: PGlite runs in this process, so it has no link to cut (its closed
// case is below).
describe.skipIf(!url)('the API while Postgres is unreachable', () => {
  let proxy: TcpProxy;
  let drop: () => Promise<void>;
  let h: Harness;
  const k = {} as Record<'admin' | 'gateway' | 'auditor', string>;
  let n = 0;

  beforeAll(async () => {
    const target = new URL(url!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const created = await createTestDatabase(url!);
    drop = created.drop;
    // Migrate over a direct connection; the app talks through the proxy only.
    const direct = await openDatabase({ url: created.url });
    const { migrate } = await import('@vouch/ledger');
    await migrate(direct);
    await direct.close();
    h = await createHarness({
      open: (): Promise<Database> =>
        openDatabase({ url: proxy.urlThrough(created.url), connectTimeoutMs: 300, statementTimeoutMs: 600 }),
    });
    k.admin = await h.keyFor('user:root', ['admin']);
    k.gateway = await h.keyFor('agent:gw', ['gateway']);
    k.auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await h.call('POST', '/v1/tools', { key: k.admin, body: tool })).status).toBe(201);
  });
  afterAll(async () => {
    proxy?.setMode('forward');
    await h?.close();
    await proxy?.close();
    await drop?.();
  });

  const requests = () => [
    { name: 'GET /v1/keys', send: () => h.call('GET', '/v1/keys', { key: k.admin }) },
    {
      name: 'POST /v1/keys',
      send: () =>
        h.call('POST', '/v1/keys', { key: k.admin, body: { identity: 'user:x', roles: ['auditor'] } }),
    },
    {
      name: 'POST /v1/proposals',
      send: () => h.call('POST', '/v1/proposals', { key: k.gateway, body: proposal(++n) }),
    },
    {
      name: 'GET /v1/logs/default/head',
      send: () => h.call('GET', '/v1/logs/default/head', { key: k.auditor }),
    },
    { name: 'GET /v1/tools', send: () => h.call('GET', '/v1/tools', { key: k.gateway }) },
  ];

  /** Until the link works again: the pool reconnects on demand, so the first tries may meet dead connections. */
  const serveAgain = async () => {
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await h.call('GET', '/v1/keys', { key: k.admin })).status;
    }
    return status;
  };

  describe.each<LinkMode>(['blackhole', 'refuse'])('when the link does %s', (mode) => {
    beforeAll(async () => {
      // Start from a working link with open pooled connections: a partition then strands
      // statements on connections that were fine, not only new connections.
      proxy.setMode('forward');
      expect(await serveAgain()).toBe(200);
      await Promise.all(requests().map((r) => r.send()));
      proxy.setMode(mode);
    });

    it('answers every route 503 DATABASE_UNAVAILABLE, none 500, none left hanging', async () => {
      // All at once, as traffic would arrive: each must come back on its own deadline.
      const answers = await Promise.all(
        requests().map(async (r) => {
          const response = await r.send();
          return {
            name: r.name,
            status: response.status,
            code: ((await response.json()) as Json).error?.code,
          };
        }),
      );
      expect(answers).toEqual(
        requests().map((r) => ({ name: r.name, status: 503, code: 'DATABASE_UNAVAILABLE' })),
      );
    });

    it('reports not ready on /readyz, and alive on /healthz', async () => {
      const ready = await h.call('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        status: 'not_ready',
        code: 'DATABASE_UNAVAILABLE',
        database: { ok: false },
      });
      expect((await h.call('GET', '/healthz')).status).toBe(200);
    });

    it('logs neither the API key nor its SHA-256', () => {
      expect(h.logger.lines.some((l) => l.level === 'error')).toBe(true);
      for (const secret of Object.values(k)) {
        expect(logText(h)).not.toContain(secret);
        expect(logText(h)).not.toContain(hashApiKey(secret));
      }
    });
  });

  describe('when the link comes back', () => {
    it('serves again', async () => {
      proxy.setMode('forward');
      expect(await serveAgain()).toBe(200);
      const created = await h.call('POST', '/v1/proposals', { key: k.gateway, body: proposal(++n) });
      expect(created.status).toBe(201);
      expect((await h.call('GET', '/readyz')).status).toBe(200);
    });
  });
});

describe('the API when its PGlite database is closed', () => {
  it('answers 503 DATABASE_UNAVAILABLE, not 500, and logs no key material', async () => {
    const h = await createHarness();
    const admin = await h.keyFor('user:root', ['admin']);
    await h.database.close();
    const response = await h.call('GET', '/v1/keys', { key: admin });
    expect(response.status).toBe(503);
    expect(((await response.json()) as Json).error.code).toBe('DATABASE_UNAVAILABLE');
    expect(logText(h)).not.toContain(admin);
    expect(logText(h)).not.toContain(hashApiKey(admin));
    await h.ledger.close();
  });
});
