import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { createLedger, type Ledger } from './ledger';
import { testBackends } from './testing';

// A deadlock needs two connections: PGlite has one, so this runs on Postgres only.
const postgres = testBackends().find((backend) => backend.name === 'postgres');

const note = (log: string, i: number) => ({
  log,
  kind: 'note',
  entity: `n${i}`,
  actor: 'user:alice',
  payload: { i },
});

describe.runIf(postgres)('an append batch Postgres picks as the victim of a deadlock', () => {
  let database: Database;
  let ledger: Ledger;

  beforeAll(async () => {
    database = await postgres!.open();
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
  });

  it('runs again under the lock and commits: its caller never hears of the deadlock', async () => {
    const log = 'deadlock-victim';
    await ledger.append(note(log, 1));
    if (database.driver.kind !== 'postgres') throw new Error('expected Postgres');
    const client = database.driver.client;
    const other = await client.reserve();
    try {
      // Another transaction holds the row the batch's chain link must lock (the event before)...
      await other`begin`;
      // ...and never looks for the deadlock first (the batch does, after the default 1 s).
      await other`set local deadlock_timeout = '60s'`;
      await other`select 1 from audit_events where log_id = ${log} and seq = 1 for update`;
      const appended = ledger.append(note(log, 2));
      // The batch holds the log's lock and waits for that row.
      for (let waiting = 0; waiting === 0; ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        [{ waiting }] = await client<[{ waiting: number }]>`
          select count(*)::int as waiting from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'`;
      }
      // Then the other transaction asks for the log's lock: each waits for the other.
      await other`select pg_advisory_xact_lock(hashtextextended(${log}, 0))`;
      await other`rollback`;
      const event = await appended;
      expect(event.seq).toBe(2);
    } finally {
      other.release();
    }
    expect((await ledger.events(log)).map((e) => e.entity)).toEqual(['n1', 'n2']);
    expect((await ledger.verifyChain({ log })).ok).toBe(true);
  });
});
