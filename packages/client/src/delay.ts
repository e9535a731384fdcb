import { sleep } from '@vouch/audit/transport';
import { VouchClientError } from './errors';

/** Wait `ms`, or reject with `ABORTED` as soon as `signal` fires. Timers only: runs in browsers too. */
export async function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (!(await sleep(ms, signal))) throw abortedError(signal!);
}

/** The error a cancelled operation rejects with: `ABORTED`, with the signal's reason as cause. */
export function abortedError(signal: AbortSignal): VouchClientError {
  return new VouchClientError('ABORTED', 'the operation was cancelled by its AbortSignal', {
    cause: signal.reason,
  });
}
