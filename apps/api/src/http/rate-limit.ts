import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../errors';
import type { AppEnv } from './app-env';

/** A key's allowance: `requestsPerSecond` on average, up to `burst` at once after a pause. */
export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

/** Token buckets, one per key, in this process's memory. */
export interface RateLimiter {
  /** Take one request from `key`'s bucket: 0 when it may go now, else the seconds until it may. */
  take(key: string): number;
}

/**
 * One token bucket per key: it holds up to `burst` tokens and gains `requestsPerSecond` of
 * them each second; a request takes one. Per instance: behind a load balancer with N
 * instances a key gets up to N times the rate (docs/operations.md).
 */
export function createRateLimiter(
  limit: RateLimit,
  now: () => number = () => performance.now(),
): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const perMs = limit.requestsPerSecond / 1000;
  return {
    take(key) {
      const at = now();
      const bucket = buckets.get(key) ?? { tokens: limit.burst, at };
      bucket.tokens = Math.min(limit.burst, bucket.tokens + (at - bucket.at) * perMs);
      bucket.at = at;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil((1 - bucket.tokens) / perMs / 1000);
    },
  };
}

/**
 * Refuse a key over its allowance with 429 `RATE_LIMITED` and `Retry-After` (whole seconds).
 * Runs after authentication: the bucket is the key's id, so one client cannot spend another's
 * allowance, and an unauthenticated flood is refused by authentication without a bucket.
 */
export function rateLimit(limiter: RateLimiter): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const wait = limiter.take(c.get('principal').keyId);
    if (wait > 0) {
      c.header('Retry-After', String(wait));
      throw new ApiError('RATE_LIMITED', `this key is over its request rate; retry in ${wait} s`, {
        details: { retry_after_seconds: wait },
      });
    }
    await next();
  };
}
