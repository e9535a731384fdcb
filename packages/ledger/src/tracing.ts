import {
  type Attributes,
  type Context,
  context,
  type Link,
  type Span,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/**
 * The ledger's spans. Through `@opentelemetry/api` alone: with no tracer provider registered
 * (the default) every call here is a no-op; a process that registers one (`vouch serve` with
 * `OTEL_TRACES_EXPORTER=otlp`) gets the spans.
 */
const tracer = trace.getTracer('@vouch/ledger');

/**
 * Run `work` in a span `name` that ends when it settles; a rejection marks it failed with the
 * error's name and code (never its message: a database error can quote the values it was given).
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, (span) => settleIn(span, work));
}

/**
 * The span of one batch of one log. A batch answers many callers: its parent is the first
 * one's span (`first`, the context it was queued in), and the others' spans are its links.
 */
export function inBatchSpan<T>(
  first: Context | undefined,
  attributes: Attributes,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(
    'ledger.batch',
    { attributes: { 'db.system.name': 'postgresql', ...attributes } },
    first ?? context.active(),
    (span) => settleIn(span, work),
  );
}

/** Run `work` in `span`, failing the span on a rejection and ending it either way. */
async function settleIn<T>(span: Span, work: (span: Span) => Promise<T>): Promise<T> {
  try {
    return await work(span);
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The links from a batch's span to the spans its items were queued in (all but the parent). */
export function linksTo(contexts: ReadonlyArray<Context | undefined>, parent: Context | undefined): Link[] {
  const links: Link[] = [];
  for (const queuedIn of contexts) {
    if (!queuedIn || queuedIn === parent) continue;
    const spanContext = trace.getSpanContext(queuedIn);
    if (spanContext) links.push({ context: spanContext });
  }
  return links;
}

/** Mark a span failed with the error's code or name (never its message). */
export function markFailed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  const type = typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown';
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}
