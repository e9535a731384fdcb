import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { createLedger, type Ledger } from './ledger';
import { testBackends } from './testing';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer('test');

let database: Database;
let ledger: Ledger;

beforeAll(async () => {
  provider.register();
  database = await testBackends()[0]!.open();
  // Appends that arrive within 50 ms share a batch.
  ledger = createLedger(database, { maxWaitMs: 50 });
});
afterAll(async () => {
  await ledger.close();
  await database.close();
  await provider.shutdown();
});

/** Append one event inside a span of its own, as a request would; resolves with that span's id. */
function appendInSpan(name: string): Promise<string> {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      await ledger.append({
        log: 'default',
        kind: 'note',
        entity: name,
        actor: 'user:test',
        payload: { name },
      });
      return span.spanContext().spanId;
    } finally {
      span.end();
    }
  });
}

describe('ledger spans', () => {
  describe('when two requests append in one batch', () => {
    it('gives each its own ledger.append span, and the batch one span under the first with a link to the second', async () => {
      exporter.reset();
      const [first, second] = await Promise.all([appendInSpan('request-1'), appendInSpan('request-2')]);
      const spans = exporter.getFinishedSpans();
      const appends = spans.filter((span) => span.name === 'ledger.append');
      expect(appends.map((span) => span.parentSpanContext?.spanId).sort()).toEqual([first, second].sort());
      const batches = spans.filter((span) => span.name === 'ledger.batch');
      expect(batches).toHaveLength(1);
      const batch = batches[0]!;
      const appendOf = (request: string) =>
        appends.find((span) => span.parentSpanContext?.spanId === request)!;
      expect(batch.parentSpanContext?.spanId).toBe(appendOf(first).spanContext().spanId);
      expect(batch.links.map((link) => link.context.spanId)).toEqual([appendOf(second).spanContext().spanId]);
      expect(batch.attributes).toMatchObject({ 'vouch.log': 'default', 'vouch.batch.size': 2 });
    });
  });

  describe('when an append is refused', () => {
    it('marks its span failed with the error code, not the message', async () => {
      exporter.reset();
      await expect(
        tracer.startActiveSpan('request', async (span) => {
          try {
            return await ledger.append({
              log: 'default',
              kind: '',
              entity: 'x',
              actor: 'user:test',
              payload: {},
            });
          } finally {
            span.end();
          }
        }),
      ).rejects.toThrow();
      const append = exporter.getFinishedSpans().find((span) => span.name === 'ledger.append')!;
      expect(append.status.code).toBe(2);
      expect(append.attributes['error.type']).toMatch(/^[A-Z_]+$/);
    });
  });
});
