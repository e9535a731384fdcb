import { Hono } from 'hono';
import type { Metrics } from './metrics';

/**
 * The app served on the metrics port (`VOUCH_METRICS_PORT`): `GET /metrics` only, without
 * authentication. It is a separate listener, not a route of the API, so the API's keys and
 * roles stay about the ledger, and who may scrape is decided by where this port is reachable
 * (loopback by default, `VOUCH_METRICS_HOST`). Its labels carry no key, hash or identity.
 */
export function createMetricsApp(metrics: Metrics): Hono {
  const app = new Hono();
  app.get('/metrics', async (c) => {
    const text = await metrics.scrape();
    return c.body(text, 200, {
      'content-type': metrics.registry.contentType,
      'cache-control': 'no-store',
    });
  });
  app.notFound((c) =>
    c.json({ error: { code: 'ROUTE_NOT_FOUND', message: 'only GET /metrics is served here' } }, 404),
  );
  return app;
}
