// Child process for durability.test.ts: records operations from CONCURRENCY concurrent
// callers in one process, racing another process over the same idempotency keys. For each of
// COUNT keys (the same keys in every worker process) it proposes, then records the tool's
// result, and prints one line per answer:
//   ready                          connected; waits for a line on stdin before starting
//   proposal <key> <id> <replayed> the proposal this key stands for
//   observed <proposal> <id>       the observation recorded for it (first or replayed)
import { once } from 'node:events';
import { createLedger, createRecords, openDatabase } from '../index';

const url = process.env.DATABASE_URL!;
const log = process.env.LOG!;
const count = Number(process.env.COUNT);
const concurrency = Number(process.env.CONCURRENCY ?? 32);

const say = (line: string) => process.stdout.write(`${line}\n`);
const database = await openDatabase({ url });
const ledger = createLedger(database);
const records = createRecords(ledger);
const agent = {
  log,
  caller: { identity: 'agent:racer', scopes: ['payments:write'], environments: ['prod'] },
};

say('ready');
await once(process.stdin, 'data');
process.stdin.destroy();

let next = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const n = next++;
      const key = `k-${n}`;
      const { proposal, replayed } = await records.propose(agent, {
        idempotency_key: key,
        action: 'refund',
        server_id: 'payments',
        tool_name: 'refund',
        target: { kind: 'payment', id: `pay_${n}`, env: 'prod' },
        arguments: { amount: n },
        side_effect: 'compensatable',
      });
      say(`proposal ${key} ${proposal.id} ${replayed}`);
      // Every execution is claimed first; one observed before a crash replays its observation.
      await records.authorize(agent, { proposal_id: proposal.id }).catch((error: { code?: string }) => {
        if (error.code !== 'OBSERVATION_EXISTS') throw error;
      });
      const { observation } = await records.observe(agent, {
        proposal_id: proposal.id,
        outcome: 'succeeded',
      });
      say(`observed ${proposal.id} ${observation.id}`);
    }
  }),
);
await ledger.close();
await database.close();
