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
 * Load precomputed events fast, not through the append path: COPY on Postgres, multi-row
 * INSERTs of 1,000 rows on PGlite. The per-row link check (a foreign key) is off for the
 * load only (session_replication_role); the benchmark verifies the chain afterwards anyway.
 */
export async function loadEvents(database: Database, events: Iterable<StoredEvent>): Promise<number> {
  let count = 0;
  if (database.driver.kind === 'postgres') {
    const copy = await copyEvents(database);
    for (const event of events) {
      await copy.write(event);
      count++;
    }
    await copy.end();
    return count;
  }
  const chunk = 1_000;
  const statement = multiRowInsert('audit_events', chunk);
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
  if (database.driver.kind !== 'postgres') throw new Error('copyEvents needs Postgres');
  const connection = await database.driver.client.reserve();
  await connection.unsafe('set session_replication_role = replica');
  const stream = await connection.unsafe(`copy audit_events (${EVENT_COLUMNS}) from stdin`).writable();
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
    async write(event) {
      chunk.push(`${rowOf(event).map(copyText).join('\t')}\n`);
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
