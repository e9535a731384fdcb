import type { Database } from '../database';

/** The channel a trigger on `api_key_revocations` notifies, with the key id, at each revocation's commit. */
export const KEY_REVOKED_CHANNEL = 'vouch_api_key_revoked';

/** What {@link watchKeyRevocations} tells its caller. */
export interface KeyRevocationHandlers {
  /** A revocation of `keyId` committed (in any process on this database). */
  revoked(keyId: string): void;
  /**
   * The feed is (again) listening: revocations committed while it was not were missed, so
   * anything remembered about keys from before must be forgotten. Called once at the start
   * and after every reconnection.
   */
  listening(): void;
}

/**
 * Follow the key revocations every process commits to `database` (LISTEN on
 * {@link KEY_REVOKED_CHANNEL}; the notification is sent by the database at the revocation's
 * commit, so no writer can forget it). Resolves once listening; `close()` stops.
 */
export async function watchKeyRevocations(
  database: Database,
  handlers: KeyRevocationHandlers,
): Promise<{ close(): Promise<void> }> {
  const driver = database.driver;
  if (driver.kind === 'pglite') {
    const unlisten = await driver.client.listen(KEY_REVOKED_CHANNEL, (keyId) => handlers.revoked(keyId));
    handlers.listening();
    return { close: () => unlisten() };
  }
  // postgres.js listens on a connection of its own, re-listens after it reconnects, and
  // calls `onlisten` each time.
  const subscription = await driver.client.listen(
    KEY_REVOKED_CHANNEL,
    (keyId) => handlers.revoked(keyId),
    () => handlers.listening(),
  );
  return { close: () => subscription.unlisten() };
}
