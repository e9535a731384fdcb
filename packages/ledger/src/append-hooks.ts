import type { StoredEvent } from '@vouch/audit';
import type { AppendHook } from './ledger';

const notifiers = new WeakSet<AppendHook>();

/**
 * An append hook that only takes note of what was appended (it writes nothing and reads
 * nothing in the batch's transaction), so the ledger may call it after a batch that ran
 * without one (see `commitInOneStatement`). `notify` must not throw or block.
 */
export function notifyingHook(notify: (log: string, events: readonly StoredEvent[]) => void): AppendHook {
  const hook: AppendHook = async (_tx, log, events) => notify(log, events);
  notifiers.add(hook);
  return hook;
}

/** Whether `hook` was made by {@link notifyingHook}. */
export function isNotifyingHook(hook: AppendHook): boolean {
  return notifiers.has(hook);
}
