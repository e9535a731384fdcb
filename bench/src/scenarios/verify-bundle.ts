import { createHash } from 'node:crypto';
import { createReadStream, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StoredEvent, verifyBundle, verifyEvents } from '@vouch/audit';
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

/**
 * `verifyBundle` over a vouch-bundle/1 file (chain, Merkle root, signed checkpoint) beside
 * SHA-256 of the same file bytes alone; and the chain check alone (`verifyEvents` over the
 * same lines) beside the same baseline, to show what the Merkle part costs.
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
      let bestSha = 0;
      let bestBundle = 0;
      let bestChain = 0;
      for (let round = 0; round < 2; round++) {
        let t = now();
        await sha256File(path);
        bestSha = Math.max(bestSha, count / ((now() - t) / 1000));
        t = now();
        const report = await verifyBundle(bundleLines(path), { verifiers: [keys.verifierKey] });
        bestBundle = Math.max(bestBundle, report.checked / ((now() - t) / 1000));
        if (!report.ok || report.checked !== count) {
          throw new Error(`bundle verification failed: ${JSON.stringify(report.failures.slice(0, 3))}`);
        }
        t = now();
        const chain = await verifyEvents(eventsOf(bundleLines(path)), { log });
        bestChain = Math.max(bestChain, chain.checked / ((now() - t) / 1000));
        if (!chain.ok || chain.checked !== count) throw new Error('chain verification failed');
      }
      const point = `${count} events, ${bytes} B (${(written.bytes / 2 ** 20).toFixed(0)} MiB)`;
      const baseline = { name: 'SHA-256 of the file bytes', value: bestSha };
      figures.push(
        figure({
          scenario: 'verify-bundle',
          backend: 'file',
          point,
          metric: 'verifyBundle',
          unit: 'events/s',
          value: bestBundle,
          baseline,
          better: 'higher',
          target: { value: 300_000, ratio: 0.5 },
          extra: { events: count, payloadBytes: bytes, fileBytes: written.bytes },
        }),
        figure({
          scenario: 'verify-bundle',
          backend: 'file',
          point,
          metric: 'verifyEvents (chain only)',
          unit: 'events/s',
          value: bestChain,
          baseline,
          better: 'higher',
          extra: { events: count, payloadBytes: bytes, fileBytes: written.bytes },
        }),
      );
    } finally {
      rmSync(path, { force: true });
    }
  }
  return figures;
}
