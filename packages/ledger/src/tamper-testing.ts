import { eventHashOf, payloadHashOf, type StoredEvent } from '@vouch/audit';
import { type SQL, sql } from 'drizzle-orm';
import type { Database, Db } from './database';
import { readEvents } from './event-store';

// What a database superuser or table owner can do and the runtime role cannot: change rows
// behind the ledger's back. For tests that prove verification catches it (the threat model
// in docs/chain.md). Never used outside tests.

/**
 * Run `work` in one transaction with the append-only triggers and the link foreign key off
 * (`session_replication_role = replica`, which only a superuser or owner may set): the
 * rows change exactly as an attacker with the owner's rights would change them.
 */
export async function asTableOwner<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  return database.db.transaction(async (tx) => {
    const db = tx as unknown as Db;
    await database.rows(sql`set local session_replication_role = replica`, db);
    return work(db);
  });
}

/** One statement run as the table owner (see {@link asTableOwner}). */
export async function tamper(database: Database, statement: SQL): Promise<void> {
  await asTableOwner(database, (tx) => database.rows(statement, tx));
}

/**
 * Rewrite event `seq` of `log` (its payload, and/or its actor) and recompute, by the rules
 * of docs/chain.md, its payload hash, its hash and the `prev_hash` and `hash` of every
 * later event: the chain alone verifies again. Only what is stored beside it (Merkle nodes,
 * checkpoints, witnesses) can still tell. Returns the rewritten events.
 */
export async function rewriteEvent(
  database: Database,
  change: { log: string; seq: number; payload?: string; actor?: string },
): Promise<StoredEvent[]> {
  const { log, seq } = change;
  return asTableOwner(database, async (tx) => {
    const [before] = await readEvents(database, log, seq - 2, 1, tx);
    let prev = seq === 1 ? undefined : before?.hash;
    const rewritten: StoredEvent[] = [];
    let after = seq - 1;
    for (;;) {
      const page = await readEvents(database, log, after, 1_000, tx);
      if (page.length === 0) return rewritten;
      for (const original of page) {
        const payload = original.seq === seq ? (change.payload ?? original.payload) : original.payload;
        const actor = original.seq === seq ? (change.actor ?? original.actor) : original.actor;
        const header = {
          ...original,
          payload,
          actor,
          payload_hash: payloadHashOf(payload),
          prev_hash: prev ?? original.prev_hash,
        };
        const event = { ...header, hash: eventHashOf(header) };
        await database.rows(
          sql`update audit_events set payload = ${event.payload}, actor = ${event.actor},
                payload_hash = ${event.payload_hash}, prev_hash = ${event.prev_hash}, hash = ${event.hash}
              where log_id = ${log} and seq = ${event.seq}`,
          tx,
        );
        rewritten.push(event);
        prev = event.hash;
        after = event.seq;
      }
    }
  });
}

/** Overwrite the stored hash of Merkle node (`level`, `idx`) of `log` (default: a hash of nothing in the tree). */
export async function editMerkleNode(
  database: Database,
  node: { log: string; level: number; idx: number; hash?: string },
): Promise<void> {
  await tamper(
    database,
    sql`update merkle_nodes set hash = ${node.hash ?? 'ab'.repeat(32)}
        where log_id = ${node.log} and level = ${node.level} and idx = ${node.idx}`,
  );
}

/** Change columns of the stored checkpoint of `log` at `treeSize`. */
export async function editCheckpoint(
  database: Database,
  checkpoint: { log: string; treeSize: number; rootHash?: string; note?: string; newTreeSize?: number },
): Promise<void> {
  const { log, treeSize } = checkpoint;
  await asTableOwner(database, async (tx) => {
    if (checkpoint.rootHash !== undefined) {
      await database.rows(
        sql`update checkpoints set root_hash = ${checkpoint.rootHash} where log_id = ${log} and tree_size = ${treeSize}`,
        tx,
      );
    }
    if (checkpoint.note !== undefined) {
      await database.rows(
        sql`update checkpoints set note = ${checkpoint.note} where log_id = ${log} and tree_size = ${treeSize}`,
        tx,
      );
    }
    if (checkpoint.newTreeSize !== undefined) {
      await database.rows(
        sql`update checkpoints set tree_size = ${checkpoint.newTreeSize} where log_id = ${log} and tree_size = ${treeSize}`,
        tx,
      );
    }
  });
}
