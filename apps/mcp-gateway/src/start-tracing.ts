import { startTracing as start, type Tracing, TracingConfigError } from '@vouch/telemetry';
import { GatewayError } from './errors';

export type { Tracing };

/**
 * `@vouch/telemetry`'s `startTracing`, with a setting that cannot work reported as
 * `CONFIG_INVALID` (so the bin exits 2 naming the variable).
 */
export function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  service: { name: string; version?: string },
): Tracing | undefined {
  try {
    return start(env, service);
  } catch (error) {
    if (error instanceof TracingConfigError) {
      throw new GatewayError('CONFIG_INVALID', error.message, { details: { key: error.key } });
    }
    throw error;
  }
}
