import type { Database } from '../database';
import { readHead } from '../event-store';
import { KEY_CREATED, SYSTEM_LOG } from './api-key-events';
import { createKeyHistory } from './key-history';
import { readKeyEvents } from './load-key-history';

interface Known {
  /** The `system` log's head seq the set was built at. */
  head: number;
  ids: ReadonlySet<string>;
}

const known = new WeakMap<Database, Promise<Known>>();

/**
 * The ids of the keys whose `api_key.created` event breaks the key-authority rule (an issuer
 * who could not issue keys then: see `createKeyHistory`), read from the `system` log's key
 * events. The set is kept per database and built again only when the log's head moved, so a
 * lookup costs one primary-key probe while no key event is written.
 *
 * This is what lets the server refuse a key that the runtime role appended, event and row
 * alike, in someone's name, when it is first used: `verifyChain` reports the same keys.
 */
export async function forbiddenKeyIds(database: Database): Promise<ReadonlySet<string>> {
  const head = (await readHead(database, SYSTEM_LOG))?.seq ?? 0;
  const cached = known.get(database);
  if (cached !== undefined) {
    const current = await cached.catch(() => null);
    if (current !== null && current.head === head) return current.ids;
  }
  const building = build(database, head);
  known.set(database, building);
  return (await building).ids;
}

async function build(database: Database, head: number): Promise<Known> {
  const events = await readKeyEvents(database.db, head);
  const history = createKeyHistory();
  const ids = new Set<string>();
  for (const event of events) {
    if (history.add(event) !== null && event.kind === KEY_CREATED) ids.add(event.entity);
  }
  return { head, ids };
}
