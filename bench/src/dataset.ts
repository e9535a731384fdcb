import {
  canonicalJson,
  eventHashOf,
  eventLeafHash,
  GENESIS_PREV_HASH,
  payloadHashOf,
  type StoredEvent,
} from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';
import type { Database } from '@vouch/ledger';
import { payloadSource } from './payloads';

export const EVENT_COLUMNS =
  'log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash';

/**
 * Precomputed chained events `first..first+count-1` of `log`, hashed with the same functions
 * the ledger uses, so they verify exactly as appended ones do.
 */
export function* chainedEvents(options: {
  log: string;
  count: number;
  payloadBytes: number;
  first?: number;
  prevHash?: string;
}): Generator<StoredEvent> {
  const payloadOf = payloadSource(options.payloadBytes);
  const first = options.first ?? 1;
  let prev = options.prevHash ?? GENESIS_PREV_HASH;
  const at = new Date('2026-01-01T00:00:00.000Z').getTime();
  for (let seq = first; seq < first + options.count; seq++) {
    const payload = canonicalJson(payloadOf(seq));
    const header = {
      log: options.log,
      seq,
      kind: 'tool.call',
      entity: `proposal-${seq}`,
      actor: 'agent:bench',
      at: new Date(at + seq).toISOString(),
      payload_hash: payloadHashOf(payload),
      prev_hash: prev,
    };
    const hash = eventHashOf(header);
    prev = hash;
    yield { ...header, payload, hash };
  }
}

/** One row's column values in {@link EVENT_COLUMNS} order. */
export function rowOf(e: StoredEvent): unknown[] {
  return [e.log, e.seq, e.kind, e.entity, e.actor, e.at, e.payload, e.payload_hash, e.prev_hash, e.hash];
}

/** `insert into <table> (…) values ($1..$10), (…)` for `rows` rows. */
export function multiRowInsert(table: string, rows: number): string {
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) {
    const base = r * 10;
    tuples.push(`(${Array.from({ length: 10 }, (_, c) => `$${base + c + 1}`).join(',')})`);
  }
  return `insert into ${table} (${EVENT_COLUMNS}) values ${tuples.join(',')}`;
}

/**
 * Load precomputed events fast, not through the append path: COPY on Postgres, multi-row
 * INSERTs of 1,000 rows on PGlite. The per-row link check (a foreign key) is off for the
 * load only (session_replication_role); the benchmark verifies the chain afterwards anyway.
 * With `merkle`, the log's Merkle nodes go in beside them in the same pass, exactly the rows
 * the append hook would have written, so `verifyChain` has a whole tree to check.
 */
export async function loadEvents(
  database: Database,
  events: Iterable<StoredEvent>,
  options: { merkle?: boolean } = {},
): Promise<number> {
  let count = 0;
  const nodes = options.merkle ? merkleNodeRows() : undefined;
  if (database.driver.kind === 'postgres') {
    const copy = await copyEvents(database);
    const copyNodes = nodes ? await copyRows(database, 'merkle_nodes', MERKLE_COLUMNS) : undefined;
    for (const event of events) {
      await copy.write(event);
      if (copyNodes) for (const row of nodes!(event)) await copyNodes.write(row);
      count++;
    }
    await copy.end();
    await copyNodes?.end();
    return count;
  }
  const chunk = 1_000;
  const statement = multiRowInsert('audit_events', chunk);
  let rows: unknown[] = [];
  let nodeRows: unknown[][] = [];
  const flush = async (final: boolean) => {
    const n = rows.length / 10;
    if (n === 0) return;
    await insertWithoutLinkCheck(
      database,
      n === chunk && !final ? statement : multiRowInsert('audit_events', n),
      rows,
    );
    rows = [];
    if (nodeRows.length > 0) {
      const tuples = nodeRows.map((_, r) => `($${r * 4 + 1},$${r * 4 + 2},$${r * 4 + 3},$${r * 4 + 4})`);
      await insertWithoutLinkCheck(
        database,
        `insert into merkle_nodes (${MERKLE_COLUMNS}) values ${tuples.join(',')}`,
        nodeRows.flat(),
      );
      nodeRows = [];
    }
  };
  for (const event of events) {
    rows.push(...rowOf(event));
    if (nodes) nodeRows.push(...nodes(event));
    count++;
    if (count % chunk === 0) await flush(false);
  }
  await flush(true);
  return count;
}

/** The columns of `merkle_nodes` a load writes, in the order {@link merkleNodeRows} gives them. */
export const MERKLE_COLUMNS = 'log_id, level, idx, hash';

/**
 * A function from each event, in seq order, to the `merkle_nodes` rows its append stores:
 * every subtree above the leaves it completes (see the ledger's Merkle append hook).
 */
export function merkleNodeRows(): (event: StoredEvent) => unknown[][] {
  const range = new CompactRange();
  return (event) =>
    range
      .append(eventLeafHash(event.hash))
      .filter((node) => node.level > 0)
      .map((node) => [event.log, node.level, node.index, Buffer.from(node.hash).toString('hex')]);
}

async function insertWithoutLinkCheck(database: Database, text: string, params: unknown[]): Promise<void> {
  if (database.driver.kind !== 'pglite') throw new Error('the Postgres load goes through COPY');
  await database.driver.client.transaction(async (tx) => {
    await tx.query(`set local session_replication_role = replica`);
    await tx.query(text, params);
  });
}

/** The JSON Lines text of one event, as a bundle carries it. */
export function jsonLine(event: StoredEvent): string {
  return `${JSON.stringify(event)}\n`;
}

/** COPY text-format escaping of one column value (backslash, tab, newline, carriage return). */
function copyText(value: unknown): string {
  return String(value).replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}

/**
 * A COPY into audit_events on Postgres (far faster than INSERTs for a million rows), with
 * the per-row link check off for the load only (session_replication_role): the benchmark
 * verifies the chain afterwards anyway. Write events with `write`, then `end()`.
 */
export async function copyEvents(
  database: Database,
): Promise<{ write(event: StoredEvent): Promise<void>; end(): Promise<void> }> {
  const copy = await copyRows(database, 'audit_events', EVENT_COLUMNS);
  return { write: (event) => copy.write(rowOf(event)), end: () => copy.end() };
}

/** A COPY of rows (values in `columns` order) into `table` on Postgres, link checks off. */
export async function copyRows(
  database: Database,
  table: string,
  columns: string,
): Promise<{ write(row: unknown[]): Promise<void>; end(): Promise<void> }> {
  if (database.driver.kind !== 'postgres') throw new Error('COPY needs Postgres');
  const connection = await database.driver.client.reserve();
  await connection.unsafe('set session_replication_role = replica');
  const stream = await connection.unsafe(`copy ${table} (${columns}) from stdin`).writable();
  const finished = new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve);
    stream.on('error', reject);
  });
  let chunk: string[] = [];
  const flush = async () => {
    if (chunk.length === 0) return;
    const text = chunk.join('');
    chunk = [];
    if (!stream.write(text)) await new Promise((resolve) => stream.once('drain', resolve));
  };
  return {
    async write(row) {
      chunk.push(`${row.map(copyText).join('\t')}\n`);
      if (chunk.length >= 1_000) await flush();
    },
    async end() {
      await flush();
      stream.end();
      await finished;
      await connection.unsafe('set session_replication_role = origin');
      connection.release();
    },
  };
}
