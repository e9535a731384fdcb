import { describe, expect, it } from 'vitest';
import { isGatewayError } from './errors';
import { startTracing } from './start-tracing';

const service = { name: 'vouch-mcp-gateway' };

describe('startTracing (gateway)', () => {
  describe('when the environment does not ask for otlp', () => {
    it('registers nothing', () => {
      expect(startTracing({}, service)).toBeUndefined();
      expect(
        startTracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, service),
      ).toBeUndefined();
    });
  });

  describe('when the protocol is grpc', () => {
    it('refuses it with CONFIG_INVALID (the bin exits 2)', () => {
      let thrown: unknown;
      try {
        startTracing({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, service);
      } catch (error) {
        thrown = error;
      }
      expect(isGatewayError(thrown) && thrown.code).toBe('CONFIG_INVALID');
    });
  });
});
