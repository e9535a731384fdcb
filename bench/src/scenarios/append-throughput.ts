import type { StoredEvent } from '@vouch/audit';
import { createLedger, type Ledger, type LedgerOptions } from '@vouch/ledger';
import type { BenchDatabase } from '../backends';
import { execute } from '../backends';
import { chainedEvents, multiRowInsert, rowOf } from '../dataset';
import type { BenchOptions } from '../options';
import { payloadSource } from '../payloads';
import { type Figure, figure } from '../report';
import { closedLoop } from '../stats';

/** Rows per transaction in the plain batched-INSERT baseline (the reference figure). */
export const RAW_BATCH = 100;
/** Connections the baseline may use at once (the ledger's pool size). */
export const RAW_CONNECTIONS = 10;

export async function createPlainTable(bench: BenchDatabase): Promise<void> {
  // Same columns and primary key as audit_events, nothing else: no link foreign key, no
  // extra unique index, no checks, no triggers. What the database does for the rows alone.
  await execute(
    bench.database,
    `create table if not exists bench_plain (
       log_id text not null, seq bigint not null, kind text not null, entity_id text not null,
       actor text not null, recorded_at text not null, payload text not null,
       payload_hash text not null, prev_hash text not null, hash text not null,
       primary key (log_id, seq))`,
  );
}

/**
 * Chained appends from N closed-loop writers through the real append path, beside plain
 * multi-row INSERTs of rows of the same size into a plain table, same durability.
 */
export async function appendThroughput(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
  ledgerOptions: LedgerOptions = {},
): Promise<Figure[]> {
  await createPlainTable(bench);
  // The chain alone (no Merkle tree), to compare with the raw baseline's bare rows.
  const ledger = createLedger(bench.database, { ...ledgerOptions, merkle: false });
  // What `vouch serve` runs: the same append path plus Merkle subtree storage in each batch.
  const merkleLedger = createLedger(bench.database, ledgerOptions);
  const figures: Figure[] = [];
  let logNo = 0;
  try {
    for (const bytes of options.payloads) {
      const payloadOf = payloadSource(bytes);
      // The baseline's rows: real chained events of this size, cycled with fresh seqs.
      const template = [...chainedEvents({ log: 'plain', count: RAW_BATCH, payloadBytes: bytes })];
      for (const writers of options.writers) {
        const log = `throughput-${++logNo}`;
        const appendLoop = (target: Ledger, targetLog: string) =>
          closedLoop({
            workers: writers,
            warmupMs: options.warmupMs,
            durationMs: options.durationMs,
            op: async (w, i) => {
              await target.append({
                log: targetLog,
                kind: 'tool.call',
                entity: `p-${w}-${i}`,
                actor: 'agent:bench',
                payload: payloadOf(w * 1_000_000 + i),
              });
              return 1;
            },
          });
        const chained = await appendLoop(ledger, log);
        const raw = await appendThroughputBaseline(bench, bytes, writers, options, template);
        const merkle = await appendLoop(merkleLedger, `${log}-merkle`);
        figures.push(
          figure({
            scenario: 'append-throughput',
            backend,
            point: `${writers} writers, ${bytes} B`,
            metric: 'chained appends',
            unit: 'events/s',
            value: chained.perSecond,
            baseline: { name: raw.name, value: raw.perSecond },
            better: 'higher',
            ...(backend === 'postgres' && writers === 64 ? { target: { ratio: 0.8 } } : {}),
            extra: { writers, payloadBytes: bytes, chainedEvents: chained.units, rawRows: raw.units },
          }),
          figure({
            scenario: 'append-throughput',
            backend,
            point: `${writers} writers, ${bytes} B`,
            metric: 'chained + Merkle appends',
            unit: 'events/s',
            value: merkle.perSecond,
            baseline: { name: raw.name, value: raw.perSecond },
            better: 'higher',
            extra: { writers, payloadBytes: bytes, chainedEvents: merkle.units, rawRows: raw.units },
          }),
        );
      }
    }
  } finally {
    await ledger.close();
    await merkleLedger.close();
  }
  return figures;
}

let plainLogNo = 0;

/**
 * The baseline: rows of `bytes` payloads (real chained events, cycled with fresh seqs) in
 * multi-row INSERTs of {@link RAW_BATCH} per transaction into the plain table, from
 * min(writers, {@link RAW_CONNECTIONS}) connections, closed loop.
 */
export async function appendThroughputBaseline(
  bench: BenchDatabase,
  bytes: number,
  writers: number,
  options: BenchOptions,
  template: readonly StoredEvent[] = [
    ...chainedEvents({ log: 'plain', count: RAW_BATCH, payloadBytes: bytes }),
  ],
): Promise<{ name: string; perSecond: number; units: number }> {
  await createPlainTable(bench);
  const statement = multiRowInsert('bench_plain', RAW_BATCH);
  const log = `plain-${++plainLogNo}`;
  const connections = Math.min(writers, RAW_CONNECTIONS);
  let nextSeq = 1;
  const raw = await closedLoop({
    workers: connections,
    warmupMs: options.warmupMs,
    durationMs: options.durationMs,
    op: async () => {
      const first = nextSeq;
      nextSeq += RAW_BATCH;
      await execute(bench.database, statement, rawRows(template, log, first));
      return RAW_BATCH;
    },
  });
  return {
    name: `plain INSERT x${RAW_BATCH}/tx, ${connections} conn`,
    perSecond: raw.perSecond,
    units: raw.units,
  };
}

function rawRows(template: readonly StoredEvent[], log: string, first: number): unknown[] {
  const params: unknown[] = [];
  template.forEach((event, i) => {
    const row = rowOf(event);
    row[0] = log;
    row[1] = first + i;
    params.push(...row);
  });
  return params;
}
