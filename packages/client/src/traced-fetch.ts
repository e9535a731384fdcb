import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

const tracer = trace.getTracer('@vouch/client');

/**
 * `fetch` with an HTTP client span per request and the W3C `traceparent` header on it, so the
 * server continues the caller's trace. Through `@opentelemetry/api` alone (browser-safe): with
 * no tracer provider and propagator registered (the default) the span is a no-op and no
 * header is added; an application that registers them (the MCP gateway with
 * `OTEL_TRACES_EXPORTER=otlp`) gets both.
 */
export function tracedFetch(fetchImpl: typeof fetch): typeof fetch {
  return (input, init) => {
    const method = (init?.method ?? 'GET').toUpperCase();
    const url = parsedUrl(input);
    return tracer.startActiveSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': method,
          ...(url
            ? {
                'server.address': url.hostname,
                ...(url.port ? { 'server.port': Number(url.port) } : {}),
                // The path, not the query: a query string can carry anything a caller typed.
                'url.full': `${url.origin}${url.pathname}`,
              }
            : {}),
        },
      },
      async (span) => {
        const propagated: Record<string, string> = {};
        propagation.inject(context.active(), propagated);
        try {
          const response = await fetchImpl(
            input,
            Object.keys(propagated).length > 0
              ? { ...init, headers: withHeaders(init?.headers, propagated) }
              : init,
          );
          span.setAttribute('http.response.status_code', response.status);
          if (response.status >= 400) {
            span.setAttribute('error.type', String(response.status));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          return response;
        } catch (error) {
          span.setAttribute('error.type', error instanceof Error ? error.name : 'unknown');
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  };
}

function withHeaders(headers: RequestInit['headers'], added: Record<string, string>): RequestInit['headers'] {
  if (
    headers === undefined ||
    (typeof headers === 'object' && !Array.isArray(headers) && !(headers instanceof Headers))
  )
    return { ...(headers as Record<string, string> | undefined), ...added };
  const merged = new Headers(headers);
  for (const [key, value] of Object.entries(added)) merged.set(key, value);
  return merged;
}

function parsedUrl(input: Parameters<typeof fetch>[0]): URL | null {
  try {
    return new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
  } catch {
    return null;
  }
}
