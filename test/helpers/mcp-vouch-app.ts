import { createApp, createKeyStore } from '@vouch/api';
import { createVouchClient, type Role, type VouchClient } from '@vouch/client';
import { createLedger, type Database, migrate, openDatabase } from '@vouch/ledger';

/** Vouch in this process (a fresh migrated database), as the gateway tests talk to it. */
export interface InProcessVouch {
  database: Database;
  /** A `fetch` answered by the app, for `http://vouch.test` URLs. */
  appFetch: typeof fetch;
  /** Issue a key for `identity` with `roles` (any environment, any log) and return its secret. */
  secretOf(identity: string, roles: Role[]): Promise<string>;
  /** A Vouch client acting with `apiKey`. */
  clientOf(apiKey: string): VouchClient;
}

export async function inProcessVouch(
  options: { allowRoleCombinations?: boolean } = {},
): Promise<InProcessVouch> {
  const database = await openDatabase();
  await migrate(database);
  const ledger = createLedger(database);
  const keys = createKeyStore(ledger, options);
  const app = createApp({ ledger, keys });
  const appFetch: typeof fetch = async (input, init) =>
    app.request(input instanceof URL ? input.href : (input as string), init);
  return {
    database,
    appFetch,
    secretOf: async (identity, roles) =>
      (
        await keys.create({
          identity,
          roles,
          scopes: [],
          environments: null,
          logs: null,
          createdBy: 'system:test',
        })
      ).secret,
    clientOf: (apiKey) => createVouchClient({ baseUrl: 'http://vouch.test', apiKey, fetch: appFetch }),
  };
}
