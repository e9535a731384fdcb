// Child process for durability.test.ts. Appends to LOG from CONCURRENCY concurrent appenders
// and reports on stdout, one line each, as it happens (stdout to a pipe is synchronous on
// Linux, so a line printed is a line the parent gets even if this process is killed next):
//   ack <seq> <hash>        an append was acknowledged (its batch committed)
//   batch <first> <last>    a batch's rows are inserted and its transaction is still open
//   stalled <first> <last>  the same, and this batch will never commit: kill me now
//   done <count>            COUNT appends acknowledged, exiting
//   ready                   connected; with GATE=1, waits for a line on stdin before appending
// COUNT=0 appends until killed; STALL_AFTER=n holds the first batch that starts after n
// acknowledgements open forever, so a SIGKILL lands mid-batch for sure.
import { once } from 'node:events';
import { createLedger, openDatabase } from '../index';

const url = process.env.DATABASE_URL!;
const log = process.env.LOG!;
const count = Number(process.env.COUNT ?? 0);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const worker = process.env.WORKER ?? '0';
const stallAfter = Number(process.env.STALL_AFTER ?? 0);

const say = (line: string) => process.stdout.write(`${line}\n`);
let acknowledged = 0;

const database = await openDatabase({ url });
const ledger = createLedger(database, {
  afterAppend: [
    async (_tx, _log, events) => {
      const range = `${events[0]!.seq} ${events.at(-1)!.seq}`;
      if (stallAfter > 0 && acknowledged >= stallAfter) {
        say(`stalled ${range}`);
        await new Promise(() => {});
      }
      say(`batch ${range}`);
    },
  ],
});

if (process.env.GATE === '1') {
  // Start together with the other processes: process start-up takes longer than the appends.
  say('ready');
  await once(process.stdin, 'data');
  process.stdin.destroy();
}

let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (count === 0 || next < count) {
      const n = next++;
      const event = await ledger.append({
        log,
        kind: 'load',
        entity: `${worker}-${n}`,
        actor: `service:worker-${worker}`,
        // Text that must survive the array parameters of the batch insert byte for byte.
        payload: { worker, n, text: 'NULL "q" \\ {a,b} ünï \u2028 😀' },
      });
      acknowledged++;
      say(`ack ${event.seq} ${event.hash}`);
    }
  }),
);
await ledger.close();
await database.close();
say(`done ${acknowledged}`);
