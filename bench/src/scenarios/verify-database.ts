import { createLedger } from '@vouch/ledger';
import type { BenchDatabase } from '../backends';
import { query } from '../backends';
import { chainedEvents, loadEvents } from '../dataset';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { now } from '../stats';

/** Rows per keyset page, for the verifier and the plain read alike. */
export const PAGE_SIZE = 10_000;

/**
 * The plain read: the same rows, same columns as text, paged by key the way the verifier
 * pages (seq ranges of PAGE_SIZE), nothing done with them.
 */
async function plainRead(bench: BenchDatabase, log: string): Promise<number> {
  let after = 0;
  let count = 0;
  for (;;) {
    const page = await query<{ seq: number }>(
      bench.database,
      `select log_id, seq, kind, entity_id, actor, recorded_at, payload, payload_hash, prev_hash, hash
         from audit_events where log_id = $1 and seq > $2 and seq <= $3`,
      [log, after, after + PAGE_SIZE],
    );
    if (page.length === 0) return count;
    count += page.length;
    after += PAGE_SIZE;
  }
}

/**
 * `verifyChain` straight from the database beside a plain keyset read of the same rows:
 * the ratio says what verifying costs on top of reading.
 */
export async function verifyDatabase(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  const ledger = createLedger(bench.database);
  const figures: Figure[] = [];
  try {
    for (const bytes of options.payloads) {
      const log = `verify-${bytes}`;
      // PGlite runs Postgres in WebAssembly on this thread: a quarter of the rows keeps the
      // run short, and its rate does not depend on the count.
      const count = backend === 'pglite' ? Math.ceil(options.verifyEvents / 4) : options.verifyEvents;
      await loadEvents(bench.database, chainedEvents({ log, count, payloadBytes: bytes }));
      let bestRead = 0;
      let bestVerify = 0;
      // Alternate and keep the best of each: the two share whatever the machine is doing.
      for (let round = 0; round < 2; round++) {
        let t = now();
        const read = await plainRead(bench, log);
        bestRead = Math.max(bestRead, read / ((now() - t) / 1000));
        t = now();
        const report = await ledger.verifyChain({ log, pageSize: PAGE_SIZE });
        bestVerify = Math.max(bestVerify, report.checked / ((now() - t) / 1000));
        if (!report.ok || report.checked !== count || read !== count) {
          throw new Error(`verification of ${log} went wrong: ${JSON.stringify(report).slice(0, 300)}`);
        }
      }
      figures.push(
        figure({
          scenario: 'verify-database',
          backend,
          point: `${count} events, ${bytes} B`,
          metric: 'verifyChain',
          unit: 'events/s',
          value: bestVerify,
          baseline: { name: 'plain keyset read', value: bestRead },
          better: 'higher',
          ...(backend === 'postgres' ? { target: { value: 150_000, ratio: 0.8 } } : {}),
          extra: { events: count, payloadBytes: bytes, pageSize: PAGE_SIZE },
        }),
      );
    }
  } finally {
    await ledger.close();
  }
  return figures;
}
