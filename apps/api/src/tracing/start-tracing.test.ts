import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config-error';
import { startTracing } from './start-tracing';

describe('startTracing (server)', () => {
  describe('when the endpoint cannot work', () => {
    it('refuses it with a ConfigError naming the variable (serve exits 2)', () => {
      let thrown: unknown;
      try {
        startTracing(
          { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' },
          { name: 'vouch-api' },
        );
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).key).toBe('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
    });
  });
});
