import { createLedger } from '@vouch/ledger';
import type { BenchDatabase } from '../backends';
import { execute } from '../backends';
import { chainedEvents, multiRowInsert, rowOf } from '../dataset';
import type { BenchOptions } from '../options';
import { payloadSource } from '../payloads';
import { type Figure, figure } from '../report';
import { openLoop, quantile, sortedCopy } from '../stats';
import { createPlainTable } from './append-throughput';

/**
 * Append latency at fixed offered loads from an open-loop generator (requests start on
 * schedule whatever the completions; latency counts from the scheduled start), beside a
 * plain single-row INSERT (its own transaction, same durability) at the same load.
 */
export async function appendLatency(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
): Promise<Figure[]> {
  await createPlainTable(bench);
  const ledger = createLedger(bench.database);
  const figures: Figure[] = [];
  let logNo = 0;
  try {
    for (const bytes of options.payloads) {
      const payloadOf = payloadSource(bytes);
      const [template] = [...chainedEvents({ log: 'plain', count: 1, payloadBytes: bytes })];
      const single = multiRowInsert('bench_plain', 1);
      for (const rate of options.rates) {
        const log = `latency-${++logNo}`;
        const chained = await openLoop({
          rate,
          durationMs: options.latencyMs,
          op: (i) =>
            ledger.append({
              log,
              kind: 'tool.call',
              entity: `p-${i}`,
              actor: 'agent:bench',
              payload: payloadOf(i),
            }),
        });
        const rawLog = `plain-latency-${logNo}`;
        const raw = await openLoop({
          rate,
          durationMs: options.latencyMs,
          op: (i) => {
            const row = rowOf(template!);
            row[0] = rawLog;
            row[1] = i + 1;
            return execute(bench.database, single, row);
          },
        });
        if (chained.errors > 0 || raw.errors > 0)
          throw new Error(`latency run had errors: ${chained.errors}/${raw.errors}`);
        const c = sortedCopy(chained.latenciesMs);
        const r = sortedCopy(raw.latenciesMs);
        const extra = {
          rate,
          payloadBytes: bytes,
          samples: c.length,
          achieved: chained.achievedPerSecond,
          rawAchieved: raw.achievedPerSecond,
          chained: { p50: quantile(c, 0.5), p99: quantile(c, 0.99), max: c.at(-1) },
          raw: { p50: quantile(r, 0.5), p99: quantile(r, 0.99), max: r.at(-1) },
        };
        for (const [q, name] of [
          [0.5, 'p50'],
          [0.99, 'p99'],
        ] as const) {
          figures.push(
            figure({
              scenario: 'append-latency',
              backend,
              point: `${rate}/s offered, ${bytes} B`,
              metric: `${name} append latency`,
              unit: 'ms',
              value: quantile(c, q),
              baseline: { name: `${name} plain 1-row INSERT`, value: quantile(r, q) },
              better: 'lower',
              ...(backend === 'postgres' && rate === 1000 && name === 'p99' ? { target: { value: 20 } } : {}),
              extra,
            }),
          );
        }
      }
    }
  } finally {
    await ledger.close();
  }
  return figures;
}
