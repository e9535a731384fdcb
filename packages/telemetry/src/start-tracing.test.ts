import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { startTracing, TracingConfigError } from './start-tracing';

const service = { name: 'vouch-api' };

describe('startTracing', () => {
  describe('when OTEL_TRACES_EXPORTER does not ask for otlp', () => {
    it.each([{}, { OTEL_TRACES_EXPORTER: 'none' }, { OTEL_TRACES_EXPORTER: 'console' }])(
      'registers nothing for %j',
      (env) => {
        expect(startTracing(env, service)).toBeUndefined();
        expect(trace.getTracer('t').startSpan('s').isRecording()).toBe(false);
      },
    );
  });

  describe('when OTEL_SDK_DISABLED is true', () => {
    it('registers nothing even with otlp asked for', () => {
      expect(
        startTracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, service),
      ).toBeUndefined();
    });
  });

  describe('when the protocol or endpoint cannot work', () => {
    it.each([
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
      [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    ])('refuses %j with a TracingConfigError naming %s', (env, key) => {
      let thrown: unknown;
      try {
        startTracing({ OTEL_TRACES_EXPORTER: 'otlp', ...env }, service);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(TracingConfigError);
      expect((thrown as TracingConfigError).key).toBe(key);
    });
  });

  describe('when otlp is asked for', () => {
    it('registers a recording tracer that posts to the traces endpoint', async () => {
      const tracing = startTracing(
        {
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1/',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        },
        service,
      );
      try {
        expect(tracing).toMatchObject({ endpoint: 'http://127.0.0.1:1/v1/traces', protocol: 'http/json' });
        expect(trace.getTracer('t').startSpan('s').isRecording()).toBe(true);
      } finally {
        await tracing?.shutdown();
      }
    });
  });
});
