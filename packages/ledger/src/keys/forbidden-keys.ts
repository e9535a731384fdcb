import type { Database } from '../database';
import { readHead } from '../event-store';
import { KEY_CREATED, SYSTEM_LOG } from './api-key-events';
import { createKeyHistory } from './key-history';
import { readKeyEvents } from './load-key-history';

interface Known {
  /** The `system` log's head seq the set was built at. */
  head: number;
  /** Each forbidden key's id, with why its issuance breaks the rule. */
  ids: ReadonlyMap<string, string>;
}

const known = new WeakMap<Database, Promise<Known>>();

/**
 * The ids of the keys whose `api_key.created` event breaks the key-authority rule (an issuer
 * who could not issue keys then, or an admin who had to sign the issuance and did not, or
 * whose signature does not hold: see `createKeyHistory`), each with why, read from the `system` log's key
 * events. The set is kept per database and built again only when the log's head moved, so a
 * lookup costs one primary-key probe while no key event is written.
 *
 * This is what lets the server refuse a key that the runtime role appended, event and row
 * alike, in someone's name, when it is first used: `verifyChain` reports the same keys.
 */
export async function forbiddenKeyIds(database: Database): Promise<ReadonlyMap<string, string>> {
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
  const ids = new Map<string, string>();
  for (const event of events) {
    const violation = history.add(event);
    if (violation !== null && event.kind === KEY_CREATED && !ids.has(event.entity)) {
      ids.set(event.entity, `${violation.rule}: ${violation.why}`);
    }
  }
  return { head, ids };
}
