// Child process for the multi-process append test: appends COUNT events to LOG from
// CONCURRENCY concurrent appenders in one process, then prints one JSON line and exits.
import { createLedger, openDatabase } from '../index';

const url = process.env.DATABASE_URL!;
const log = process.env.LOG!;
const count = Number(process.env.COUNT);
const concurrency = Number(process.env.CONCURRENCY);
const worker = process.env.WORKER ?? '0';

const database = await openDatabase({ url });
const ledger = createLedger(database);
let next = 0;
const seqs: number[] = [];
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const n = next++;
      const event = await ledger.append({
        log,
        kind: 'load',
        entity: `${worker}-${n}`,
        actor: `service:worker-${worker}`,
        payload: { worker, n },
      });
      seqs.push(event.seq);
    }
  }),
);
await ledger.close();
await database.close();
process.stdout.write(`${JSON.stringify({ worker, acknowledged: seqs.length })}\n`);
