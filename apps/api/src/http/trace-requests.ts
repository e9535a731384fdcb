import {
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from './app-env';

const tracer = trace.getTracer('@vouch/api');

const headerGetter = {
  get: (headers: Headers, key: string) => headers.get(key) ?? undefined,
  keys: (headers: Headers) => [...headers.keys()],
};

/**
 * One server span per request, continuing the caller's W3C `traceparent`, named by its route
 * pattern (`POST /v1/proposals`), never its concrete path; with its status, the error code
 * of a refusal and the request id. Everything the request does runs inside it, so the
 * ledger's spans are its children. A no-op while no tracer provider is registered
 * (`startTracing`).
 */
export function traceRequests(): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const method = c.req.method;
    const parent = propagation.extract(ROOT_CONTEXT, c.req.raw.headers, headerGetter);
    return tracer.startActiveSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
      parent,
      async (span) => {
        try {
          await next();
        } finally {
          const route = routePath(c, -1);
          const matched = route && route !== '/*' ? route : undefined;
          if (matched) {
            span.updateName(`${method} ${matched}`);
            span.setAttribute('http.route', matched);
          }
          const status = c.res.status;
          span.setAttribute('http.response.status_code', status);
          const requestId = c.get('requestId');
          if (requestId) span.setAttribute('vouch.request_id', requestId);
          const errorCode = c.get('errorCode');
          if (errorCode) {
            span.setAttribute('vouch.error_code', errorCode);
            span.setAttribute('error.type', errorCode);
          }
          // A refusal (4xx) is the server working as meant; only its own failures are errors.
          if (status >= 500)
            span.setStatus({ code: SpanStatusCode.ERROR, ...(errorCode ? { message: errorCode } : {}) });
          span.end();
        }
      },
    );
  };
}

/** The trace and span id of the request's span, for its log line; none while tracing is off. */
export function traceFieldsOfActiveSpan(): { trace_id: string; span_id: string } | Record<string, never> {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
