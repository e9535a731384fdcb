import { ProtocolError } from '@modelcontextprotocol/server';
import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

const tracer = trace.getTracer('@vouch/mcp-gateway');

/**
 * Run one governed `tools/call` in a span `tools/call <tool>`: the Vouch requests it makes
 * (their client spans carry `traceparent`, so the API continues the trace) and the upstream
 * call are its children. The call's Vouch status (`executed`, `pending`, `denied`, …) is set
 * by the handler. A no-op while no tracer provider is registered (`startTracing`).
 */
export function inCallSpan<T>(
  toolName: string,
  call: () => Promise<T>,
  /** The agent's HTTP request headers: its W3C `traceparent` makes this span its child. */
  headers?: Readonly<Record<string, string | string[] | undefined>>,
): Promise<T> {
  return tracer.startActiveSpan(
    `tools/call ${toolName}`,
    {
      kind: SpanKind.SERVER,
      attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': toolName },
    },
    parentOf(headers),
    (span) =>
      settleIn(span, call, (error) =>
        error instanceof ProtocolError
          ? `mcp:${error.code}`
          : error instanceof Error
            ? error.name
            : 'unknown',
      ),
  );
}

/**
 * The context a call span starts in: the agent's trace when its request carried a valid
 * `traceparent` (and `tracestate`), read with the registered propagator; otherwise the active one.
 */
function parentOf(headers: Readonly<Record<string, string | string[] | undefined>> | undefined): Context {
  const active = context.active();
  if (headers === undefined) return active;
  return propagation.extract(active, headers);
}

/**
 * Run the upstream `tools/call` (the `invoke` Vouch allowed) in a client span under the call's
 * span, so a trace shows where the tool's own time went.
 */
export function inUpstreamSpan<T>(toolName: string, call: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(
    `upstream tools/call ${toolName}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': toolName },
    },
    (span) => settleIn(span, call, (error) => (error instanceof Error ? error.name : 'unknown')),
  );
}

/** Run `call` in `span`: a rejection marks it failed with `typeOf(error)`; it ends either way. */
async function settleIn<T>(
  span: Span,
  call: () => Promise<T>,
  typeOf: (error: unknown) => string,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const type = typeOf(error);
    span.setAttribute('error.type', type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    throw error;
  } finally {
    span.end();
  }
}
