import { eventHashOf, GENESIS_PREV_HASH, payloadHashOf, type StoredEvent, verifyEvents } from '@vouch/audit';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './database';
import { insertEvents, streamEventPages } from './event-store';
import { tamper, testBackends } from './testing';

/**
 * Payloads a text read could mangle: backslashes, tabs, newlines, carriage returns and the
 * other control characters, text that reads like COPY's NULL, characters of 2, 3 and 4 UTF-8
 * bytes, and one long enough to span several socket reads. (Kept from the COPY text read that
 * was measured and not kept: see BENCHMARKS.md; any other read path must pass them too.)
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

describe.each(testBackends())('streaming events on $name', ({ open }) => {
  let database: Database;

  beforeAll(async () => {
    database = await open();
  });
  afterAll(async () => {
    await database?.close();
  });

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
      expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(pageSize);
    }
  });
});
