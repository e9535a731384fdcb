import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Metrics } from '../metrics/metrics';
import type { AppEnv } from './app-env';

/**
 * Count and time every request by its route pattern (`/v1/proposals/:id`), never its concrete
 * path: a path carries ids (one series each would grow without bound) and whatever a caller
 * typed. A request no route matched is counted under `unmatched`.
 */
export function requestMetrics(metrics: Metrics): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const route = routePath(c, -1);
      metrics.observeRequest({
        method: c.req.method,
        route: route && route !== '/*' ? route : 'unmatched',
        status: c.res.status,
        seconds: (performance.now() - started) / 1000,
      });
    }
  };
}
