import { createHash } from 'node:crypto';
import { createReadStream, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BundleReport, type StoredEvent, verifyBundle, verifyEvents } from '@vouch/audit';
import { verifyBundleFile as verifyBundleFileOn } from '@vouch/audit/node';
import { bundleKeys, bundleLines, writeBundle } from '../bundle-file';
import { chainedEvents } from '../dataset';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { now } from '../stats';

/** SHA-256 of a file's bytes, read the same way the verifier reads it. */
export async function sha256File(path: string): Promise<void> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  hash.digest();
}

async function* eventsOf(lines: AsyncIterable<string>): AsyncGenerator<StoredEvent> {
  for await (const line of lines) {
    if (line.startsWith('{"log"')) yield JSON.parse(line) as StoredEvent;
  }
}

/** One timed run: events per second of wall time, CPU µs per event (all threads), the 1-minute load average. */
interface Run {
  perSecond: number;
  cpuMicrosPerEvent: number;
  load: number;
}

async function timed(events: number, work: () => Promise<unknown>): Promise<Run> {
  const cpu = process.cpuUsage();
  const start = now();
  await work();
  const seconds = (now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  return {
    perSecond: events / seconds,
    cpuMicrosPerEvent: (used.user + used.system) / events,
    load: loadavg()[0]!,
  };
}

/** The best of the rounds (the least disturbed by the other work on the machine). */
function best(runs: readonly Run[]): Run {
  return runs.reduce((a, b) => (b.perSecond > a.perSecond ? b : a));
}

/**
 * `verifyBundleFile` (`@vouch/audit/node`) over a vouch-bundle/1 file (chain, Merkle root,
 * signed checkpoint) on one thread and on two worker threads, beside SHA-256 of the same
 * file bytes measured in the same rounds; `verifyBundle` over the file read as a text stream
 * (the browser-safe path); and the chain check alone. After a warm-up round (the JIT, the
 * worker threads); each figure the best of three rounds, with the load average at its run.
 */
export async function verifyBundleFile(options: BenchOptions): Promise<Figure[]> {
  const figures: Figure[] = [];
  for (const bytes of options.payloads) {
    const log = `bundle-${bytes}`;
    const count = options.verifyEvents;
    const keys = bundleKeys(log);
    const path = join(tmpdir(), `vouch-bench-${process.pid}-${bytes}.jsonl`);
    try {
      const written = await writeBundle({
        path,
        log,
        keys,
        events: () => chainedEvents({ log, count, payloadBytes: bytes }),
      });
      const verifiers = [keys.verifierKey];
      const check = (report: BundleReport) => {
        if (!report.ok || report.checked !== count) {
          throw new Error(`bundle verification failed: ${JSON.stringify(report.failures.slice(0, 3))}`);
        }
      };
      const measures = {
        sha: () => sha256File(path),
        one: async () => check(await verifyBundleFileOn(path, { verifiers, threads: 1 })),
        two: async () => check(await verifyBundleFileOn(path, { verifiers, threads: 2 })),
        stream: async () => check(await verifyBundle(bundleLines(path), { verifiers })),
        chain: async () => {
          const chain = await verifyEvents(eventsOf(bundleLines(path)), { log });
          if (!chain.ok || chain.checked !== count) throw new Error('chain verification failed');
        },
      };
      const runs: Record<keyof typeof measures, Run[]> = { sha: [], one: [], two: [], stream: [], chain: [] };
      for (let round = 0; round < 4; round++) {
        for (const [name, work] of Object.entries(measures) as [
          keyof typeof measures,
          () => Promise<void>,
        ][]) {
          const run = await timed(count, work);
          if (round > 0) runs[name].push(run);
        }
      }
      const sha = best(runs.sha);
      const point = `${count} events, ${bytes} B (${(written.bytes / 2 ** 20).toFixed(0)} MiB)`;
      const baseline = {
        name: `SHA-256 of the file bytes (load ${sha.load.toFixed(1)})`,
        value: sha.perSecond,
      };
      const row = (metric: string, run: Run, target?: Figure['target']) =>
        figure({
          scenario: 'verify-bundle',
          backend: 'file',
          point,
          metric: `${metric} (load ${run.load.toFixed(1)})`,
          unit: 'events/s',
          value: run.perSecond,
          baseline,
          better: 'higher',
          ...(target ? { target } : {}),
          extra: {
            events: count,
            payloadBytes: bytes,
            fileBytes: written.bytes,
            loadAverage: run.load,
            cpuMicrosPerEvent: run.cpuMicrosPerEvent,
            baselineCpuMicrosPerEvent: sha.cpuMicrosPerEvent,
            baselineLoadAverage: sha.load,
            cores: availableParallelism(),
          },
        });
      figures.push(
        row('verifyBundleFile, 1 thread', best(runs.one), { value: 180_000 }),
        row('verifyBundleFile, 2 worker threads', best(runs.two), { value: 300_000 }),
        row('verifyBundle, text stream', best(runs.stream)),
        row('verifyEvents (chain only)', best(runs.chain)),
      );
    } finally {
      rmSync(path, { force: true });
    }
  }
  return figures;
}
