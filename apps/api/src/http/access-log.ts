import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from './app-env';
import { traceFieldsOfActiveSpan } from './trace-requests';

/**
 * One structured line per request: request id, method, route pattern, status, duration and
 * the caller's key id and identity, the error code of a refusal, and the trace and span id of
 * the request's span when tracing is on (see `traceRequests`, which must run first). Never
 * the Authorization header, never a body, never the concrete path (ids in paths are fine,
 * but query strings could carry anything).
 */
export function accessLog(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const principal = c.get('principal');
      c.get('logger').info('request', {
        request_id: c.get('requestId'),
        method: c.req.method,
        route: routePath(c, -1) || null,
        status: c.res.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        ...(principal ? { key_id: principal.keyId, identity: principal.identity } : {}),
        ...(c.get('errorCode') ? { error_code: c.get('errorCode') } : {}),
        ...traceFieldsOfActiveSpan(),
      });
    }
  };
}
