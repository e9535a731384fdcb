import { isDeepStrictEqual } from 'node:util';
import { canonicalJson, eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from '@vouch/audit';
import { getTableName, type SQL, sql } from 'drizzle-orm';
import { chainEvent } from './batch-run';
import type { Database, Db } from './database';
import { insertEvents, readEvents, readHead } from './event-store';
import type { Ledger } from './ledger';
import { merkleAppendHook } from './merkle/merkle-append-hook';
import { RECORD_TABLES } from './records/codec';
import { logReads } from './records/log-reads';
import { type RecordTransaction, recordTransaction } from './records/record-transaction';
import { type LogVerificationReport, type VerifyChainOptions, verifyChain } from './verify-chain';

// What a database superuser or table owner can do and the runtime role cannot: change rows
// behind the ledger's back. For tests that prove verification catches it (the threat model
// in docs/chain.md). Never used outside tests. The one place tests tamper from: every helper
// below goes through asTableOwner.

/**
 * Run `work` in one transaction with the append-only triggers and every foreign key off
 * (`session_replication_role = replica`, which PGlite's single user and a Postgres owner or
 * superuser may set; the runtime role may not): the rows change exactly as an attacker with
 * the owner's rights would change them.
 */
export async function asTableOwner<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  return database.db.transaction(async (tx) => {
    const db = tx as unknown as Db;
    await database.rows(sql`set local session_replication_role = replica`, db);
    return work(db);
  });
}

/** Run `statements`, in order, in one transaction as the table owner (see {@link asTableOwner}). */
export async function tamper(database: Database, ...statements: SQL[]): Promise<void> {
  await asTableOwner(database, async (tx) => {
    for (const statement of statements) await database.rows(statement, tx);
  });
}

/**
 * What an owner may set freely in an event; `log`, `seq` and every hash are recomputed from
 * it. `commitment` (kept from the stored event when the edit spreads it) is hashed as stored.
 */
export type EventContent = Pick<StoredEvent, 'kind' | 'entity' | 'actor' | 'at' | 'payload' | 'commitment'>;

/**
 * Replace the events of `log` by `edit(events)`, renumbered from 1 and rehashed by the rules
 * of docs/chain.md (payload hash, hash, and each `prev_hash` the hash before it), so the
 * result is a valid chain: the chain alone verifies again, and only what is stored beside it
 * (Merkle nodes, checkpoints) or kept outside (a witness) can still tell. Rows from the
 * first one that changes on are deleted and written again; `merkle_nodes`, `checkpoints` and
 * the record tables are left as they were. Returns the rewritten events, from the first one
 * that changed.
 *
 * @example
 * // Swap events 3 and 5, every later hash recomputed.
 * await rewriteLog(database, 'orders', (events) => events.map((e, i) => (i === 2 ? events[4]! : i === 4 ? events[2]! : e)));
 */
export async function rewriteLog(
  database: Database,
  log: string,
  edit: (events: StoredEvent[]) => EventContent[],
): Promise<StoredEvent[]> {
  return asTableOwner(database, async (tx) => {
    const stored: StoredEvent[] = [];
    for (;;) {
      const page = await readEvents(database, log, stored.at(-1)?.seq ?? 0, 1_000, tx);
      if (page.length === 0) break;
      stored.push(...page);
    }
    const rewritten: StoredEvent[] = [];
    for (const [i, content] of edit(stored).entries()) {
      const header = {
        kind: content.kind,
        entity: content.entity,
        actor: content.actor,
        at: content.at,
        payload: content.payload,
        log,
        seq: i + 1,
        payload_hash: payloadHashOf(content.payload),
        prev_hash: rewritten[i - 1]?.hash ?? GENESIS_PREV_HASH,
        ...(content.commitment ? { commitment: content.commitment } : {}),
      };
      rewritten.push({ ...header, hash: eventHashOf(header) });
    }
    let from = 0;
    while (from < rewritten.length && rewritten[from]!.hash === stored[from]?.hash) from++;
    const changed = rewritten.slice(from);
    await database.rows(sql`delete from audit_events where log_id = ${log} and seq > ${from}`, tx);
    await insertEvents(database, tx, changed);
    return changed;
  });
}

/**
 * Rewrite event `seq` of `log` (its payload, and/or its actor) and recompute every hash from
 * it on ({@link rewriteLog}). Returns the rewritten events: `seq` and every later one.
 */
export function rewriteEvent(
  database: Database,
  change: { log: string; seq: number; payload?: string; actor?: string },
): Promise<StoredEvent[]> {
  return rewriteLog(database, change.log, (events) =>
    events.map((event) =>
      event.seq === change.seq
        ? { ...event, payload: change.payload ?? event.payload, actor: change.actor ?? event.actor }
        : event,
    ),
  );
}

/**
 * What the runtime role can do without the server's code: insert the next event of `log`
 * (its Merkle nodes, and the rows `rows` writes beside it) recorded at a time of its
 * choosing. The server never records a batch earlier than the log's head (`batchTime`); an
 * inserter need not. Plain INSERTs in one transaction, on `database` as it is opened (open
 * it as the runtime role): every trigger and foreign key stays on.
 */
export async function appendRecordedAt(
  database: Database,
  content: Pick<StoredEvent, 'log' | 'kind' | 'entity' | 'actor' | 'at'> & { payload: unknown },
  rows?: (tx: Db, event: StoredEvent) => Promise<unknown>,
): Promise<StoredEvent> {
  return database.db.transaction(async (transaction) => {
    const tx = transaction as unknown as Db;
    const head = (await readHead(database, content.log, tx)) ?? { seq: 0, hash: GENESIS_PREV_HASH };
    const canonicalPayload = canonicalJson(content.payload);
    const event = chainEvent(content.log, content.at, head, {
      ...content,
      canonicalPayload,
      payloadHash: payloadHashOf(canonicalPayload),
      row: undefined,
    });
    await insertEvents(database, tx, [event]);
    await merkleAppendHook(tx, content.log, [event], database);
    await rows?.(tx, event);
    return event;
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
  const where = sql`where log_id = ${log} and tree_size = ${treeSize}`;
  const edits: SQL[] = [];
  if (checkpoint.rootHash !== undefined) {
    edits.push(sql`update checkpoints set root_hash = ${checkpoint.rootHash} ${where}`);
  }
  if (checkpoint.note !== undefined)
    edits.push(sql`update checkpoints set note = ${checkpoint.note} ${where}`);
  // Last: the other edits find the row by its old size.
  if (checkpoint.newTreeSize !== undefined) {
    edits.push(sql`update checkpoints set tree_size = ${checkpoint.newTreeSize} ${where}`);
  }
  await tamper(database, ...edits);
}

/**
 * Row counts of `log` in the chain, its Merkle tree and every record table: what an
 * operation could have written. Compare before and after to show that a refusal wrote nothing.
 */
export async function ledgerRowCounts(database: Database, log: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of LEDGER_TABLES) {
    const [row] = await database.rows<{ n: number }>(
      sql`select count(*)::int as n from ${sql.identifier(table)} where log_id = ${log}`,
    );
    counts[table] = row!.n;
  }
  return counts;
}

/**
 * The number of rows in every table of the database (the ledger's, the key store's,
 * migrations'), by table name: for tests that prove a refused request wrote nothing anywhere.
 */
export async function tableRowCounts(database: Database): Promise<Record<string, number>> {
  const tables = await database.rows<{ name: string }>(
    sql`select table_name as name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const [row] = await database.rows<{ n: number }>(
      sql`select count(*)::int as n from ${sql.identifier(name)}`,
    );
    counts[name] = row?.n ?? 0;
  }
  return counts;
}

const LEDGER_TABLES = [
  'audit_events',
  'merkle_nodes',
  ...RECORD_TABLES.map(({ table }) => getTableName(table)),
];

/**
 * `verifyChain` twice: event by event, and in parts of two events on this thread (the
 * parallel path, which must only ever reach "intact" faster). Throws unless both give the
 * same report, so every test that verifies through this also proves the parallel path
 * misses nothing the sequential one reports. `onProgress` sees the sequential run only.
 */
export async function verifyBothWays(
  database: Database,
  options: VerifyChainOptions,
): Promise<LogVerificationReport> {
  const sequential = await verifyChain(database, { ...options, parts: false });
  const { onProgress: _, ...quiet } = options;
  const inParts = await verifyChain(database, { ...quiet, parts: { events: 2, threads: 0, minParts: 1 } });
  if (!isDeepStrictEqual(inParts, sequential)) {
    throw new Error(
      `verifyChain in parts disagrees with verifyChain event by event:\n${JSON.stringify(inParts)}\n${JSON.stringify(sequential)}`,
    );
  }
  return sequential;
}

/**
 * What the runtime role (INSERT only, every trigger and foreign key on) can append: records
 * with their events, field content and rows, exactly as the records service writes them,
 * whatever they say. `write` stages them (`tx.write(kind, actor, record)`); `now` is the
 * batch's time, the events' `at`.
 */
export async function forgeRecords(
  ledger: Ledger,
  log: string,
  write: (tx: RecordTransaction, now: string) => void | Promise<void>,
): Promise<void> {
  await ledger.transactConcurrently(log, {}, async (tx) => {
    await write(recordTransaction(tx, logReads(tx.db, log, ledger.integrityAlarm), undefined), tx.now);
  });
}
