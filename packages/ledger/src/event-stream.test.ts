import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent, verifyEvents } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { insertEvents, streamEventPages } from './event-store';
import { setEventStreamVia } from './internal/benchmark';
import { openTestPostgres, tamper, testBackends } from './testing';

/**
 * Payloads whose text COPY has to escape (backslash, tab, newline, carriage return, the other
 * control characters), one that reads like COPY's NULL, and characters of 2, 3 and 4 UTF-8
 * bytes: a row cut between two chunks may be cut inside one of them.
 */
const AWKWARD_PAYLOADS = [
  '{"a":"back\\\\slash \\"quoted\\" \\n escaped"}',
  '{"raw":"tab\there, newline\nhere, return\rhere"}',
  '{"ctl":"\b\f\u000b"}',
  '\\N',
  '\\',
  '',
  '{"x":"é ∑ 𝄞 日本"}',
  `{"long":"${'x'.repeat(70_000)}"}`,
];

/** `count` chained events of `log`, the payloads cycling through `payloads`. */
function chained(log: string, count: number, payloads: readonly string[] = ['{"i":1}']): StoredEvent[] {
  const events: StoredEvent[] = [];
  let prev = GENESIS_PREV_HASH;
  for (let seq = 1; seq <= count; seq++) {
    const payload = payloads[(seq - 1) % payloads.length]!;
    const header = {
      log,
      seq,
      kind: 'note',
      entity: `e\t${seq}`,
      actor: "user:o'brien\\x",
      at: '2026-12-02T05:00:00.000Z',
      payload_hash: payloadHashOf(payload),
      prev_hash: prev,
    };
    const hash = eventHashOf(header);
    events.push({ ...header, payload, hash });
    prev = hash;
  }
  return events;
}

async function store(database: Database, events: readonly StoredEvent[]): Promise<void> {
  for (let at = 0; at < events.length; at += 1_000) {
    await insertEvents(database, database.db, events.slice(at, at + 1_000));
  }
}

async function pagesOf(database: Database, log: string, pageSize: number): Promise<StoredEvent[][]> {
  const pages: StoredEvent[][] = [];
  for await (const page of streamEventPages(database, log, { pageSize })) pages.push(page);
  return pages;
}

describe.each(testBackends())('streaming events on $name', ({ name, open }) => {
  let database: Database;

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    await database?.close();
  });
  afterEach(() => setEventStreamVia('copy'));

  it('gives back every stored text exactly, whatever it holds, and the chain verifies', async () => {
    const log = "it's a \\ log\twith\nodd characters";
    const events = chained(log, 24, AWKWARD_PAYLOADS);
    await store(database, events);
    for (const pageSize of [5, 5_000]) {
      const streamed = (await pagesOf(database, log, pageSize)).flat();
      expect(streamed).toEqual(events);
      const report = await verifyEvents(
        (async function* () {
          yield* streamed;
        })(),
        { log },
      );
      expect(report.ok).toBe(true);
    }
  });

  it('reports a payload edited to awkward text with the hash of exactly what is stored', async () => {
    const log = 'awkward-edit';
    await store(database, chained(log, 6));
    const edited = '{"i":"\\\\\t\n\r\\N é"}';
    await tamper(
      database,
      sql`update audit_events set payload = ${edited} where log_id = ${log} and seq = 4`,
    );
    const streamed = (await pagesOf(database, log, 5_000)).flat();
    expect(streamed[3]!.payload).toBe(edited);
    const report = await verifyEvents(
      (async function* () {
        yield* streamed;
      })(),
      { log },
    );
    expect(report.failures).toEqual([
      expect.objectContaining({ seq: 4, code: 'PAYLOAD_HASH_MISMATCH', actual: payloadHashOf(edited) }),
    ]);
  });

  it('reads a long log in order, in pages no larger than the read size, and jumps over a gap', async () => {
    const log = 'long';
    await store(database, chained(log, 5_000));
    await tamper(database, sql`delete from audit_events where log_id = ${log} and seq between 1500 and 3600`);
    for (const pageSize of [1_000, 5_000]) {
      const pages = await pagesOf(database, log, pageSize);
      const seqs = pages.flat().map((e) => e.seq);
      expect(seqs).toEqual([
        ...Array.from({ length: 1_499 }, (_, i) => i + 1),
        ...Array.from({ length: 1_400 }, (_, i) => i + 3_601),
      ]);
      // On Postgres a read of 5,000 seqs is cut into pages that die young (2,048 events at most).
      const largest = name === 'postgres' ? Math.min(pageSize, 2_048) : pageSize;
      expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(largest);
    }
  });

  it.runIf(name === 'postgres')('reads the same events as COPY text and as rows', async () => {
    const log = 'both-ways';
    await store(database, chained(log, 300, AWKWARD_PAYLOADS));
    await tamper(
      database,
      sql`update audit_events set commitment = 'fields/1' where log_id = ${log} and seq = 7`,
    );
    const copied = (await pagesOf(database, log, 64)).flat();
    setEventStreamVia('rows');
    const rows = (await pagesOf(database, log, 64)).flat();
    expect(copied).toEqual(rows);
    expect(copied[6]!.commitment).toBe('fields/1');
    expect(copied[5]).not.toHaveProperty('commitment');
  });
});

describe.runIf(process.env.DATABASE_URL)('a COPY read that is stopped half way', () => {
  let database: Database;

  beforeAll(async () => {
    database = await openTestPostgres(process.env.DATABASE_URL!);
  });
  afterAll(async () => {
    await database?.close();
  });

  it('gives its connections back, so the pool still answers', async () => {
    const log = 'abandoned';
    await store(database, chained(log, 10_000));
    // More abandoned reads than the pool has connections (10): a leaked one would hang the last.
    for (let i = 0; i < 12; i++) {
      for await (const page of streamEventPages(database, log, { pageSize: 10_000 })) {
        expect(page[0]!.seq).toBe(1);
        break;
      }
    }
    const [row] = await database.rows<{ n: number }>(
      sql`select count(*)::int as n from audit_events where log_id = ${log}`,
    );
    expect(row!.n).toBe(10_000);
  });
});
