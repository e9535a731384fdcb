import type { ChainHead } from '@vouch/audit';
import type { IntegrityAlarmReport } from './integrity-alarm';

/** A log's head as an append builds on it: its seq, its hash, and its event's `at` (null for a new log). */
export interface AppendHead extends ChainHead {
  at: string | null;
}

/** How far a head's time may be ahead of this process's clock: more than honest clocks differ by. */
export const HEAD_AHEAD_TOLERANCE_MS = 5 * 60_000;

/**
 * How far ahead of this process's clock a writer's key time is followed (`batchTime`'s
 * `notBefore`): more than honest clocks differ by, and well short of
 * `HEAD_AHEAD_TOLERANCE_MS`, so the time it lends a log never makes a server whose clock lags
 * a little more raise `TIME_AHEAD`.
 */
export const KEY_TIME_AHEAD_MS = 60_000;

/**
 * The time a batch appended after `head` is recorded at: the clock's, but never earlier than
 * the head's, so a log's times never go back, even when the host's clock steps back or
 * another process's clock lags this one's (each batch reads the head under the log's lock);
 * and never earlier than any of `notBefore`, the times its writers' keys were issued (within
 * `KEY_TIME_AHEAD_MS` of the clock), so a key is live at every record it writes.
 * Verification reports an event earlier than the one before it as `TIME_REGRESSION`, and the
 * key rules judge every event at the latest time seen before it in its log.
 */
export function batchTime(clock: Date, headAt: string | null, notBefore: readonly string[] = []): string {
  const head = headAt === null ? Number.NaN : Date.parse(headAt);
  let time = clock.getTime();
  if (!Number.isNaN(head) && head > time) time = head;
  // The items' floors (`BatchOptions.notBefore`): a key issued by a server whose clock is
  // ahead of this one's. One further ahead than honest clocks differ is not followed.
  const limit = clock.getTime() + KEY_TIME_AHEAD_MS;
  for (const text of notBefore) {
    const floor = Date.parse(text);
    if (floor > time && floor <= limit) time = floor;
  }
  return new Date(time).toISOString();
}

/**
 * The finding when the head of `log` is recorded further ahead of `clock` than honest clocks
 * differ (`HEAD_AHEAD_TOLERANCE_MS`), or null. `batchTime` copies the head's time into every
 * later event, so a head recorded far ahead (another process's clock set wrong, or a row the
 * runtime role inserted at a time of its choosing) would make every later time a lie: the
 * server keeps appending (times never go back) and raises the alarm, for an operator to look.
 */
export function headTimeAhead(clock: Date, head: AppendHead, log: string): IntegrityAlarmReport | null {
  if (head.at === null) return null;
  const ahead = Date.parse(head.at) - clock.getTime();
  if (!(ahead > HEAD_AHEAD_TOLERANCE_MS)) return null;
  return {
    code: 'TIME_AHEAD',
    log,
    seq: head.seq,
    table: 'audit_events',
    message: `event ${head.seq} of log ${log} is recorded at ${head.at}, ${Math.round(ahead / 1000)} s ahead of this server's clock: later events take its time, so a clock is wrong or the row was written behind the ledger's back`,
  };
}
