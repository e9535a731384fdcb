// The Vouch HTTP app on a real socket, in its own process (so the load generator does not
// share its event loop): PGlite in memory, or the Postgres at --url. Prints one JSON line
// with the port and two API keys, then serves until stdin closes.
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import { createApp, createKeyStore } from '@vouch/api';
import { createLedger, createRecords, migrate, openDatabase } from '@vouch/ledger';

const { values } = parseArgs({ options: { url: { type: 'string' }, logs: { type: 'string' } } });
const database = await openDatabase(values.url ? { url: values.url, maxConnections: 10 } : {});
await migrate(database);
// The append path `vouch serve` runs: chain plus Merkle subtree storage in the same transaction.
const ledger = createLedger(database);
const keys = createKeyStore(ledger);
const key = async (identity: string, roles: Array<'gateway' | 'auditor' | 'verifier'>) =>
  (await keys.create({ identity, roles, environments: null, logs: null, createdBy: 'system:bench' })).secret;
const gateway = await key('gateway:bench', ['gateway']);
const auditor = await key('auditor:bench', ['auditor']);
const verifier = await key('verifier:bench', ['verifier']);
// The tool the load calls, registered in every log it uses: its proposals are allowed.
const operator = createRecords(ledger);
for (const log of values.logs?.split(',') ?? []) {
  await operator.registerTool(
    { log, caller: { identity: 'user:bench-operator' } },
    {
      server_id: 'bench',
      tool_name: 'fetch',
      side_effect: 'read_only',
      required_scopes: [],
      allowed_environments: ['prod'],
    },
  );
}
const app = createApp({ ledger, keys });
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  console.log(JSON.stringify({ port: info.port, gateway, auditor, verifier }));
});
process.stdin.resume();
process.stdin.on('end', async () => {
  server.close();
  await ledger.close();
  await database.close();
  process.exit(0);
});
