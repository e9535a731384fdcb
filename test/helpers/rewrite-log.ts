// Test support: rewrite a log the way its database owner could, to prove the witness
// notices. Only `audit_events` changes; `merkle_nodes` and `checkpoints` are left as they
// were, so the server keeps serving the old signed roots and proofs that still verify.
import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from '@vouch/audit';
import type { Database } from '@vouch/ledger';
import { sql } from 'drizzle-orm';

/** What an owner may set freely; seq and every hash are recomputed from it. */
export type EventContent = Pick<StoredEvent, 'kind' | 'entity' | 'actor' | 'at' | 'payload'>;

/**
 * Replace the events of `log` by `edit(events)`, renumbered from 1 and rehashed by the rules
 * of docs/chain.md, so the result is a valid chain. Rows from the first one that changes
 * are deleted and rewritten with the append-only triggers and link checks switched off
 * (`session_replication_role = replica`, which only an owner or superuser may set).
 */
export async function rewriteLogAsOwner(
  database: Database,
  log: string,
  edit: (events: StoredEvent[]) => EventContent[],
): Promise<void> {
  const stored = (
    await database.rows<StoredEvent>(
      sql`select log_id as log, seq, kind, entity_id as entity, actor, recorded_at as at, payload,
        payload_hash, prev_hash, hash from audit_events where log_id = ${log} order by seq`,
    )
  ).map((row) => ({ ...row, seq: Number(row.seq) }));
  const rewritten: StoredEvent[] = [];
  for (const [i, content] of edit(stored).entries()) {
    const header = {
      ...content,
      log,
      seq: i + 1,
      payload_hash: payloadHashOf(content.payload),
      prev_hash: rewritten[i - 1]?.hash ?? GENESIS_PREV_HASH,
    };
    rewritten.push({ ...header, hash: eventHashOf(header) });
  }
  let from = 0;
  while (from < rewritten.length && rewritten[from]!.hash === stored[from]?.hash) from++;
  await database.db.transaction(async (tx) => {
    await database.rows(sql`set local session_replication_role = replica`, tx);
    await database.rows(sql`delete from audit_events where log_id = ${log} and seq > ${from}`, tx);
    for (const e of rewritten.slice(from)) {
      await database.rows(
        sql`insert into audit_events (log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash)
          values (${e.log}, ${e.seq}, ${e.kind}, ${e.entity}, ${e.actor}, ${e.at}, ${e.payload}, ${e.payload_hash}, ${e.prev_hash}, ${e.hash})`,
        tx,
      );
    }
  });
}
