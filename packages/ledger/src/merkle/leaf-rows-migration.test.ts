import { eventLeafHash, verifyInclusion } from '@vouch/audit';
import { MemoryMerkleTree } from '@vouch/audit/merkle';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateBefore, migrationBackends } from '../__fixtures__/migrate-before';
import type { Database } from '../database';
import { createLedger, type Ledger } from '../ledger';
import { migrate } from '../migrate';
import { merkleInclusionProof, merkleRoot } from './merkle-proofs';

// A database as the code before migration 0007 left it: a level-0 row (the leaf hash) for
// every event beside the interior nodes. The migration removes them; nothing else changes.
describe.each(migrationBackends())('migration 0007 (leaves no longer stored) on $name', (backend) => {
  let database: Database;
  let ledger: Ledger;
  const log = 'orders';

  beforeAll(async () => {
    database = await backend.open();
    await migrateBefore(database, '0007');
    const before = createLedger(database);
    for (let i = 1; i <= 5; i++) {
      const event = await before.append({
        log,
        kind: 'note',
        entity: `e${i}`,
        actor: 'user:alice',
        payload: { i },
      });
      await database.rows(
        sql`insert into merkle_nodes (log_id, level, idx, hash)
            values (${log}, 0, ${event.seq - 1}, ${Buffer.from(eventLeafHash(event.hash)).toString('hex')})`,
      );
    }
    await before.close();
    await migrate(database);
    ledger = createLedger(database);
  });
  afterAll(async () => {
    await ledger?.close();
    await database?.close();
    await backend.drop();
  });

  const levels = async () =>
    (
      await database.rows<{ level: number; n: number }>(
        sql`select level, count(*)::int as n from merkle_nodes where log_id = ${log} group by level order by level`,
      )
    ).map((r) => [r.level, r.n]);

  it('removes the leaf rows and keeps every interior node', async () => {
    expect(await levels()).toEqual([
      [1, 2],
      [2, 1],
    ]);
  });

  it('leaves a log that verifies, appends, and serves proofs that verify', async () => {
    for (let i = 6; i <= 8; i++)
      await ledger.append({ log, kind: 'note', entity: `e${i}`, actor: 'user:alice', payload: { i } });
    const report = await ledger.verifyChain({ log });
    expect(report).toMatchObject({ ok: true, checked: 8, merkle: { nodes: 7 } });
    const events = await ledger.events(log, { after: 0, limit: 8 });
    const reference = MemoryMerkleTree.fromLeafHashes(events.map((e) => eventLeafHash(e.hash)));
    const root = await merkleRoot(database, { log, treeSize: 8 });
    expect(Buffer.from(root).toString('hex')).toBe(Buffer.from(reference.root()).toString('hex'));
    for (const event of events) {
      const proof = await merkleInclusionProof(database, { log, seq: event.seq, treeSize: 8 });
      expect(verifyInclusion(eventLeafHash(event.hash), event.seq - 1, 8, proof, root)).toBe(true);
    }
  });

  it('refuses a leaf row from then on', async () => {
    await expect(
      database.rows(
        sql`insert into merkle_nodes (log_id, level, idx, hash) values (${log}, 0, 99, ${'ab'.repeat(32)})`,
      ),
    ).rejects.toMatchObject({ cause: { message: expect.stringContaining('merkle_nodes_interior') } });
  });
});
