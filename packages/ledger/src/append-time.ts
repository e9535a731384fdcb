import type { ChainHead } from '@vouch/audit';

/** A log's head as an append builds on it: its seq, its hash, and its event's `at` (null for a new log). */
export interface AppendHead extends ChainHead {
  at: string | null;
}

/**
 * The time a batch appended after `head` is recorded at: the clock's, but never earlier than
 * the head's, so a log's times never go back, even when the host's clock steps back or
 * another process's clock lags this one's (each batch reads the head under the log's lock).
 * Verification reports an event earlier than the one before it as `TIME_REGRESSION`, and the
 * key rules judge every event at the latest time seen before it in its log.
 */
export function batchTime(clock: Date, headAt: string | null): string {
  const head = headAt === null ? Number.NaN : Date.parse(headAt);
  const now = clock.getTime();
  return new Date(Number.isNaN(head) || now >= head ? now : head).toISOString();
}
