import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const traceparent = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`;

let h: Harness;
let admin: string;

beforeAll(async () => {
  h = await createHarness();
  admin = await h.keyFor('user:admin', ['admin']);
});
afterAll(() => h.close());

const requestLines = () => h.logger.lines.filter((line) => line.msg === 'request');

describe('request tracing', () => {
  describe('while no tracer provider is registered', () => {
    it('logs requests without trace fields, even when the caller sent a traceparent', async () => {
      const response = await h.call('GET', '/v1/me', { key: admin, headers: { traceparent } });
      expect(response.status).toBe(200);
      const line = requestLines().at(-1)!;
      expect(line).toMatchObject({ route: '/v1/me', status: 200 });
      expect(line).not.toHaveProperty('trace_id');
      expect(line).not.toHaveProperty('span_id');
    });
  });

  describe('with a tracer provider registered', () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    beforeAll(() => {
      provider.register();
    });
    afterAll(() => provider.shutdown());

    const serverSpan = () => exporter.getFinishedSpans().find((span) => span.kind === 1)!;

    it('continues the caller trace in a span named by the route, and logs its ids', async () => {
      exporter.reset();
      const response = await h.call('GET', '/v1/me', { key: admin, headers: { traceparent } });
      expect(response.status).toBe(200);
      const span = serverSpan();
      expect(span.name).toBe('GET /v1/me');
      expect(span.spanContext().traceId).toBe(TRACE_ID);
      expect(span.parentSpanContext?.spanId).toBe(CALLER_SPAN_ID);
      expect(span.attributes).toMatchObject({
        'http.request.method': 'GET',
        'http.route': '/v1/me',
        'http.response.status_code': 200,
        'vouch.request_id': response.headers.get('x-request-id'),
      });
      expect(requestLines().at(-1)).toMatchObject({ trace_id: TRACE_ID, span_id: span.spanContext().spanId });
    });

    it('records a refusal by its error code, without marking the span failed', async () => {
      exporter.reset();
      const response = await h.call('GET', '/v1/me', { key: 'vch_not-a-key', headers: { traceparent } });
      expect(response.status).toBe(401);
      const code = ((await response.json()) as { error: { code: string } }).error.code;
      const span = serverSpan();
      expect(span.attributes).toMatchObject({ 'vouch.error_code': code, 'http.response.status_code': 401 });
      expect(span.status.code).not.toBe(2);
      expect(requestLines().at(-1)).toMatchObject({ error_code: code, trace_id: TRACE_ID });
    });

    it('puts the ledger work of a write under the request span', async () => {
      exporter.reset();
      const response = await h.call('POST', '/v1/tools', {
        key: admin,
        headers: { traceparent },
        body: { server_id: 'bank', tool_name: 'get_balance', side_effect: 'read_only' },
      });
      expect(response.status).toBeLessThan(300);
      const spans = exporter.getFinishedSpans();
      const request = serverSpan();
      const ids = new Set(spans.map((span) => span.spanContext().spanId));
      const ledger = spans.filter((span) => span.name.startsWith('ledger.'));
      expect(ledger.map((span) => span.name)).toContain('ledger.batch');
      for (const span of ledger) {
        expect(span.spanContext().traceId).toBe(TRACE_ID);
        expect(ids.has(span.parentSpanContext!.spanId), span.name).toBe(true);
      }
      const write = ledger.find((span) => span.name !== 'ledger.batch')!;
      expect(write.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    });
  });
});
