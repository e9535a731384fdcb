import { availableParallelism } from 'node:os';
import { generateNoteKeys, parseSignerKey, verifyEvents } from '@vouch/audit';
import { createLedger, signLogCheckpoint } from '@vouch/ledger';
import type { BenchDatabase } from '../backends';
import { execute, query } from '../backends';
import { chainedEvents, loadEvents } from '../dataset';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { mainThreadCpuMs, now } from '../stats';

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
 * the ratio says what verifying costs on top of reading. The log carries what a served log
 * carries: its Merkle nodes and a signed checkpoint at the head, and the verifier checks
 * them all (the tree recomputed from the events, the checkpoint's root and signature).
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
      await loadEvents(bench.database, chainedEvents({ log, count, payloadBytes: bytes }), { merkle: true });
      const origin = `bench.vouch.example/log/${log}`;
      const keys = generateNoteKeys(origin);
      await signLogCheckpoint(bench.database, {
        log,
        origin: () => origin,
        signers: [parseSignerKey(keys.signerKey)],
      });
      const checkpointKeys = { verifiers: [keys.verifierKey], origin };
      // As aged tables would be (autovacuum): hint bits set and the load's vacuum done, so no
      // round pays for the first read of freshly loaded rows or shares the cores with it.
      if (backend === 'postgres') {
        await execute(bench.database, 'vacuum (analyze) audit_events');
        await execute(bench.database, 'vacuum (analyze) merkle_nodes');
      }
      let bestRead = 0;
      let bestVerify = 0;
      let bestChain = 0;
      let bestThisThread = 0;
      let merkleNodes = 0;
      // Main-thread CPU per event, least of the rounds: the serial share of the work, which
      // bounds the rate on an idle machine and moves less than wall time on a busy one.
      let verifyMainUs = Number.POSITIVE_INFINITY;
      let chainMainUs = Number.POSITIVE_INFINITY;
      const mainUsPerEvent = (since: number | null) => {
        const cpu = mainThreadCpuMs();
        return since === null || cpu === null ? Number.NaN : ((cpu - since) * 1000) / count;
      };
      // Alternate and keep the best of each: the two share whatever the machine is doing.
      for (let round = 0; round < 2; round++) {
        let t = now();
        const read = await plainRead(bench, log);
        bestRead = Math.max(bestRead, read / ((now() - t) / 1000));
        t = now();
        let cpu = mainThreadCpuMs();
        const report = await ledger.verifyChain({ log, pageSize: PAGE_SIZE, checkpointKeys });
        bestVerify = Math.max(bestVerify, report.checked / ((now() - t) / 1000));
        verifyMainUs = Math.min(verifyMainUs, mainUsPerEvent(cpu));
        if (!report.ok || report.checked !== count || read !== count || report.checkpoints.checked !== 1) {
          throw new Error(`verification of ${log} went wrong: ${JSON.stringify(report).slice(0, 300)}`);
        }
        merkleNodes = report.merkle.nodes;
        // The other way to run the parts: on this thread, one after the other, through the
        // caller's connection. The default above (two worker threads on Postgres with two
        // cores or more) is chosen by this comparison.
        if (backend === 'postgres') {
          t = now();
          const onThisThread = await ledger.verifyChain({
            log,
            pageSize: PAGE_SIZE,
            checkpointKeys,
            parts: { threads: 0 },
          });
          bestThisThread = Math.max(bestThisThread, onThisThread.checked / ((now() - t) / 1000));
          if (!onThisThread.ok || onThisThread.merkle.nodes !== report.merkle.nodes) {
            throw new Error(
              `verification of ${log} on this thread went wrong: ${JSON.stringify(onThisThread).slice(0, 300)}`,
            );
          }
        }
        // The chain alone, as verifyChain checked it before it recomputed the tree and the
        // checkpoints: what those checks cost.
        t = now();
        cpu = mainThreadCpuMs();
        const chain = await verifyEvents(ledger.streamEvents(log, { pageSize: PAGE_SIZE }), { log });
        bestChain = Math.max(bestChain, chain.checked / ((now() - t) / 1000));
        chainMainUs = Math.min(chainMainUs, mainUsPerEvent(cpu));
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
          // The rate is issue #12's: verifying must stay at or above 150k events/s with every
          // check on, where the 300 B figure stood when the issue was filed. The 2 KB figure
          // never did (87k/s then): its plain read alone is 158–183k/s. The ratio is for both.
          ...(backend === 'postgres'
            ? { target: bytes === 300 ? { value: 150_000, ratio: 0.8 } : { ratio: 0.8 } }
            : {}),
          extra: {
            events: count,
            payloadBytes: bytes,
            pageSize: PAGE_SIZE,
            merkleNodes,
            checkpoints: 1,
            mainThreadCpuUsPerEvent: verifyMainUs,
          },
        }),
        ...(backend === 'postgres'
          ? [
              figure({
                scenario: 'verify-database',
                backend,
                point: `${count} events, ${bytes} B`,
                metric: 'verifyChain, parts on the calling thread',
                unit: 'events/s',
                value: bestThisThread,
                baseline: { name: 'plain keyset read', value: bestRead },
                better: 'higher',
                extra: {
                  events: count,
                  payloadBytes: bytes,
                  pageSize: PAGE_SIZE,
                  cores: availableParallelism(),
                },
              }),
            ]
          : []),
        figure({
          scenario: 'verify-database',
          backend,
          point: `${count} events, ${bytes} B`,
          metric: 'verifyChain beside the chain alone',
          unit: 'events/s',
          value: bestVerify,
          baseline: { name: 'verifyEvents over the same stream (no tree, no checkpoints)', value: bestChain },
          better: 'higher',
          extra: {
            events: count,
            payloadBytes: bytes,
            pageSize: PAGE_SIZE,
            mainThreadCpuUsPerEvent: { verifyChain: verifyMainUs, verifyEvents: chainMainUs },
          },
        }),
      );
    }
  } finally {
    await ledger.close();
  }
  return figures;
}
