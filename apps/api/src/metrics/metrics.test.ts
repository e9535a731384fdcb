import { readFileSync } from 'node:fs';
import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';
import { createMetrics, METRIC_NAMES, type Metrics } from './metrics';
import { createMetricsApp } from './metrics-app';

/** One sample's value from a Prometheus text exposition (0 when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return 0;
}

describe('metrics', () => {
  let h: Harness;
  let metrics: Metrics;
  let admin: string;
  let gateway: string;
  const scrape = async () => {
    const response = await createMetricsApp(metrics).request('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    return response.text();
  };

  beforeAll(async () => {
    let clock = Date.parse('2026-03-01T00:00:00.000Z');
    const database = await testBackends()[0]!.open();
    metrics = createMetrics({ database, now: () => new Date(clock) });
    h = await createHarness({ open: async () => database, metrics });
    metrics.observeCheckpoint({ log: 'default', treeSize: 3, createdAt: new Date(clock).toISOString() });
    clock += 90_000;
    admin = await h.keyFor('user:root', ['admin']);
    gateway = await h.keyFor('agent:gw', ['gateway']);
  });
  afterAll(async () => {
    await h?.close();
  });

  describe('when the service answered requests and appended', () => {
    it('exposes every documented metric name', async () => {
      await h.json('POST', '/v1/tools', admin, {
        server_id: 'pay',
        tool_name: 'refund',
        side_effect: 'none',
      });
      metrics.countWebhookDelivery('delivered');
      const text = await scrape();
      for (const name of METRIC_NAMES) expect(text, name).toContain(`# TYPE ${name} `);
    });

    it('counts requests by route pattern and status, never by concrete path', async () => {
      const before = await scrape();
      const route = { method: 'GET', route: '/v1/proposals/:id', status: '404' };
      const missing = await h.call('GET', '/v1/proposals/prop_nothing_here', { key: gateway });
      expect(missing.status).toBe(404);
      const after = await scrape();
      expect(sample(after, 'vouch_http_requests_total', route)).toBe(
        sample(before, 'vouch_http_requests_total', route) + 1,
      );
      expect(sample(after, 'vouch_http_request_duration_seconds_count', route)).toBe(
        sample(before, 'vouch_http_request_duration_seconds_count', route) + 1,
      );
      expect(after).not.toContain('prop_nothing_here');
    });

    it('counts a request no route matched as unmatched', async () => {
      const before = sample(await scrape(), 'vouch_http_requests_total', {
        route: 'unmatched',
        status: '404',
      });
      await h.call('GET', '/no/such/thing', { key: gateway });
      const after = sample(await scrape(), 'vouch_http_requests_total', {
        route: 'unmatched',
        status: '404',
      });
      expect(after).toBe(before + 1);
    });

    it('records append batches and the chain head of each log they went to', async () => {
      const before = await scrape();
      const head = sample(before, 'vouch_chain_head_seq', { log: 'system' });
      await h.keyFor('user:another', ['auditor']);
      const after = await scrape();
      expect(sample(after, 'vouch_append_batch_size_count', { log: 'system' })).toBeGreaterThan(
        sample(before, 'vouch_append_batch_size_count', { log: 'system' }),
      );
      expect(sample(after, 'vouch_append_batch_duration_seconds_count', { log: 'system' })).toBeGreaterThan(
        0,
      );
      expect(sample(after, 'vouch_chain_head_seq', { log: 'system' })).toBe(head + 1);
    });

    it('ages the last checkpoint of a log on the injected clock', async () => {
      const text = await scrape();
      expect(sample(text, 'vouch_checkpoint_tree_size', { log: 'default' })).toBe(3);
      expect(sample(text, 'vouch_checkpoint_age_seconds', { log: 'default' })).toBe(90);
    });

    it('counts verification records by status and webhook deliveries by outcome', async () => {
      const before = await scrape();
      metrics.countVerification('failed');
      metrics.countWebhookDelivery('failed');
      const after = await scrape();
      expect(sample(after, 'vouch_verifications_total', { status: 'failed' })).toBe(
        sample(before, 'vouch_verifications_total', { status: 'failed' }) + 1,
      );
      expect(sample(after, 'vouch_webhook_deliveries_total', { outcome: 'failed' })).toBe(
        sample(before, 'vouch_webhook_deliveries_total', { outcome: 'failed' }) + 1,
      );
    });

    it('reports the pool of the database it watches', async () => {
      const text = await scrape();
      expect(sample(text, 'vouch_db_pool_max')).toBe(h.database.pool().max);
    });

    it('carries no key, key hash or identity', async () => {
      const text = await scrape();
      const { createHash } = await import('node:crypto');
      for (const secret of [admin, gateway]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(createHash('sha256').update(secret).digest('hex'));
      }
      expect(text).not.toContain('user:root');
      expect(text).not.toContain('key_');
    });
  });

  describe('when the metrics app is asked for anything else', () => {
    it('answers 404 ROUTE_NOT_FOUND', async () => {
      const response = await createMetricsApp(metrics).request('/v1/keys');
      expect(response.status).toBe(404);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');
    });
  });

  describe('docs/operations.md', () => {
    it('documents every metric name', () => {
      const doc = readFileSync(new URL('../../../../docs/operations.md', import.meta.url), 'utf8');
      for (const name of METRIC_NAMES) expect(doc, name).toContain(`\`${name}\``);
    });
  });
});
