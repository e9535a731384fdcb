import { canonicalJson, eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent } from '@vouch/audit';
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
 * Load precomputed events fast: multi-row INSERTs of 1,000 rows, not the append path. On
 * Postgres the per-row link check (a foreign key) is skipped with session_replication_role
 * for the load only; the benchmark verifies the chain afterwards anyway.
 */
export async function loadEvents(database: Database, events: Iterable<StoredEvent>): Promise<number> {
  const chunk = 1_000;
  const statement = multiRowInsert('audit_events', chunk);
  let count = 0;
  let rows: unknown[] = [];
  const flush = async (final: boolean) => {
    const n = rows.length / 10;
    if (n === 0) return;
    await insertWithoutLinkCheck(
      database,
      n === chunk && !final ? statement : multiRowInsert('audit_events', n),
      rows,
    );
    rows = [];
  };
  for (const event of events) {
    rows.push(...rowOf(event));
    count++;
    if (count % chunk === 0) await flush(false);
  }
  await flush(true);
  return count;
}

async function insertWithoutLinkCheck(database: Database, text: string, params: unknown[]): Promise<void> {
  if (database.driver.kind === 'pglite') {
    await database.driver.client.transaction(async (tx) => {
      await tx.query(`set local session_replication_role = replica`);
      await tx.query(text, params);
    });
    return;
  }
  await database.driver.client.begin(async (sql) => {
    await sql.unsafe(`set local session_replication_role = replica`);
    await sql.unsafe(text, params as never[]);
  });
}

/** The JSON Lines text of one event, as a bundle carries it. */
export function jsonLine(event: StoredEvent): string {
  return `${JSON.stringify(event)}\n`;
}
