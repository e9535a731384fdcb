import { VouchClientError } from './errors';

/** Wait `ms`, or reject with `ABORTED` as soon as `signal` fires. Timers only: runs in browsers too. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortedError(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The error a cancelled operation rejects with: `ABORTED`, with the signal's reason as cause. */
export function abortedError(signal: AbortSignal): VouchClientError {
  return new VouchClientError('ABORTED', 'the operation was cancelled by its AbortSignal', {
    cause: signal.reason,
  });
}

/**
 * Exponential backoff with full jitter: a random wait in [0, min(max, base * 2^attempt)], so
 * many clients retrying after one outage do not arrive in lockstep.
 */
export function backoffDelay(
  attempt: number,
  options: { minDelayMs: number; maxDelayMs: number; random?: () => number },
): number {
  const ceiling = Math.min(options.maxDelayMs, options.minDelayMs * 2 ** attempt);
  return Math.round((options.random ?? Math.random)() * ceiling);
}
