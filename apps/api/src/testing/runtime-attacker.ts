// Internal test support for @vouch/api (not exported): the red team's attacker, who holds
// nothing but the runtime role's connection string (INSERT only, every trigger and foreign key
// on; on PGlite, which has one user, the same database).
import { randomBytes } from 'node:crypto';
import {
  createLedger,
  type Database,
  grantRuntimeRole,
  type Ledger,
  migrate,
  openDatabase,
} from '@vouch/ledger';
import { createTestDatabase, testBackends } from '@vouch/ledger/testing';

export interface Backend {
  name: string;
  /** The server's database, and a ledger over the attacker's connection to it. */
  open(): Promise<{
    database: Database;
    attacker: () => Promise<{ ledger: Ledger; close(): Promise<void> }>;
  }>;
}

export const attackerBackends: Backend[] = testBackends().map(({ name, open }) =>
  name === 'postgres'
    ? {
        name,
        async open() {
          const created = await createTestDatabase(process.env.DATABASE_URL!);
          const owner = await openDatabase({ url: created.url });
          await migrate(owner);
          const role = `vouch_rt_${randomBytes(4).toString('hex')}`;
          const password = randomBytes(18).toString('base64url');
          await grantRuntimeRole(owner, { role, password });
          const url = new URL(created.url);
          url.username = role;
          url.password = password;
          const database: Database = {
            ...owner,
            close: async () => {
              await owner.close();
              await created.drop();
            },
          };
          return {
            database,
            attacker: async () => {
              const runtime = await openDatabase({ url: url.toString() });
              const ledger = createLedger(runtime);
              return {
                ledger,
                close: async () => {
                  await ledger.close();
                  await runtime.close();
                },
              };
            },
          };
        },
      }
    : {
        name,
        async open() {
          const database = await open();
          return {
            database,
            attacker: async () => ({ ledger: createLedger(database), close: async () => {} }),
          };
        },
      },
);
