// The Vouch HTTP app on a real socket, in its own process (so the load generator does not
// share its event loop): PGlite in memory, or the Postgres at --url. Prints one JSON line
// with the port, three API keys and the server's pids, then serves until stdin closes.
// With --workers N (Postgres), this process only sets up and supervises N node:cluster
// workers that each serve the app on the one port, as `vouch serve --workers N` does.
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import { createApp, createKeyStore } from '@vouch/api';
import { createLedger, createRecords, migrate, OPERATOR_ACTOR, openDatabase } from '@vouch/ledger';

const { values } = parseArgs({
  options: { url: { type: 'string' }, logs: { type: 'string' }, workers: { type: 'string' } },
});
const workers = Number(values.workers ?? 1);
const open = () => openDatabase(values.url ? { url: values.url, maxConnections: 10 } : {});

/** The app over `database`, on port 0 (in a cluster worker: the port every worker shares). */
function serveApp(ledger: ReturnType<typeof createLedger>, onListening: (port: number) => void) {
  // Keys remembered while the revocation feed listens, as `vouch serve` has them.
  const app = createApp({ ledger, keys: createKeyStore(ledger, { cache: true }) });
  return serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => onListening(info.port));
}

if (cluster.isWorker) {
  const database = await open();
  const ledger = createLedger(database);
  const server = serveApp(ledger, () => {});
  process.once('SIGTERM', async () => {
    server.close();
    await ledger.close();
    await database.close();
    process.exit(0);
  });
} else {
  const database = await open();
  await migrate(database);
  // The append path `vouch serve` runs: chain plus Merkle subtree storage in the same transaction.
  const ledger = createLedger(database);
  const keys = createKeyStore(ledger);
  const key = async (identity: string, roles: Array<'gateway' | 'auditor' | 'verifier'>) =>
    (await keys.create({ identity, roles, environments: null, logs: null, createdBy: OPERATOR_ACTOR }))
      .secret;
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
  const announce = (port: number, pids: number[]) =>
    console.log(JSON.stringify({ port, gateway, auditor, verifier, pids }));
  let stop: () => Promise<void>;
  if (workers > 1) {
    await ledger.close();
    await database.close();
    const forked = Array.from({ length: workers }, () => cluster.fork());
    const ports = await Promise.all(
      forked.map(
        (w) => new Promise<number>((resolve) => w.once('listening', (address) => resolve(address.port))),
      ),
    );
    announce(ports[0]!, [process.pid, ...forked.map((w) => w.process.pid!)]);
    stop = async () => {
      await Promise.all(
        forked.map(
          (w) =>
            new Promise<void>((resolve) => {
              w.once('exit', () => resolve());
              w.process.kill('SIGTERM');
            }),
        ),
      );
    };
  } else {
    const server = serveApp(ledger, (port) => announce(port, [process.pid]));
    stop = async () => {
      server.close();
      await ledger.close();
      await database.close();
    };
  }
  process.stdin.resume();
  process.stdin.on('end', async () => {
    await stop();
    process.exit(0);
  });
}
