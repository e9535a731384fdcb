import { encodeBundle, type StoredEvent } from '@vouch/audit';
import type { Ledger, StoredCheckpoint } from '@vouch/ledger';

/** The log whose bundle a bundle of any other log carries in its header (`encodeBundle`'s `system`). */
export const SYSTEM_LOG = 'system';

/**
 * The lines of the `system` log's bundle up to `checkpoint` (a checkpoint of `system`): what
 * a bundle of another log carries for its author signatures to be judged offline
 * (`verifySystemPart`). Held in memory: the `system` log holds keys and settings, not traffic.
 */
export async function systemPartLines(ledger: Ledger, checkpoint: StoredCheckpoint): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of encodeBundle({
    log: SYSTEM_LOG,
    origin: checkpoint.note.slice(0, checkpoint.note.indexOf('\n')),
    treeSize: checkpoint.treeSize,
    checkpoint: checkpoint.note,
    events: firstEvents(ledger.streamEvents(SYSTEM_LOG), checkpoint.treeSize),
  })) {
    lines.push(line);
  }
  return lines;
}

/** The first `count` events of a stream, then stop reading it. */
export async function* firstEvents(
  events: AsyncIterable<StoredEvent>,
  count: number,
): AsyncGenerator<StoredEvent> {
  if (count === 0) return;
  let seen = 0;
  for await (const event of events) {
    yield event;
    if (++seen >= count) return;
  }
}
