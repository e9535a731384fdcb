import type { Database } from '../database';
import { readHead } from '../event-store';
import { SYSTEM_LOG } from './api-key-events';
import { checkApiKeyTables } from './check-api-key-tables';

const known = new WeakMap<Database, Promise<{ head: number; ids: readonly string[] }>>();

/**
 * The keys a verification of the `system` log reports `KEY_UNPROVEN`: issued before events
 * committed to the key hash, and not adopted (`vouch keys adopt`). Kept per database and read
 * again only when the `system` log's head moved (an adoption moves it), so `/readyz` can say
 * it on every probe.
 */
export async function unprovenKeyIds(database: Database): Promise<readonly string[]> {
  const head = (await readHead(database, SYSTEM_LOG))?.seq ?? 0;
  const cached = known.get(database);
  if (cached !== undefined) {
    const current = await cached.catch(() => null);
    if (current !== null && current.head === head) return current.ids;
  }
  const reading = (async () => {
    const ids: string[] = [];
    for await (const failure of checkApiKeyTables(database)) {
      if (failure.code === 'KEY_UNPROVEN') ids.push(failure.id);
    }
    return { head, ids };
  })();
  known.set(database, reading);
  return (await reading).ids;
}
