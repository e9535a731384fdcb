import { startTracing as start, type Tracing, TracingConfigError } from '@vouch/telemetry';
import { ConfigError } from '../config-error';

export type { Tracing };

/**
 * `@vouch/telemetry`'s `startTracing`, with a setting that cannot work reported as the
 * server's {@link ConfigError} (so `vouch serve` exits 2 naming the variable).
 */
export function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  service: { name: string; version?: string },
): Tracing | undefined {
  try {
    return start(env, service);
  } catch (error) {
    if (error instanceof TracingConfigError) throw new ConfigError(error.message, { key: error.key });
    throw error;
  }
}
