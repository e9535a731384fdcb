import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BenchDatabase } from '../backends';
import { execute } from '../backends';
import { bundleKeys, writeBundleOnePass } from '../bundle-file';
import { chainedEvents, copyEvents, copyRows, MERKLE_COLUMNS, merkleNodeRows } from '../dataset';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';

const child = fileURLToPath(new URL('../children/verify-child.ts', import.meta.url));
const run = promisify(execFile);

interface ChildResult {
  checked: number;
  seconds: number;
  /** VmHWM at the end, after the first tenth, and at half way. */
  maxRssMiB: number;
  earlyMaxRssMiB: number;
  halfMaxRssMiB: number;
}

async function runChild(args: string[]): Promise<ChildResult> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--conditions=@vouch/source', child, ...args],
    {
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ChildResult;
}

/**
 * Peak RSS of a separate process verifying `rssEvents` events (300 B payloads): from a
 * bundle file, and from Postgres when it runs. Beside each: the same kind of process only
 * reading the same bytes, and its own high-water mark half way (flat memory means the
 * second half adds nothing).
 */
export async function verifyMemory(
  postgres: BenchDatabase | undefined,
  options: BenchOptions,
): Promise<Figure[]> {
  const count = options.rssEvents;
  const early = Math.max(1, Math.floor(count / 10));
  const log = 'rss';
  const keys = bundleKeys(log);
  const path = join(tmpdir(), `vouch-bench-rss-${process.pid}.jsonl`);
  const figures: Figure[] = [];
  try {
    // One pass makes both copies of the same events: the bundle file and the database rows,
    // with the Merkle nodes the append path would have stored (verifyChain checks them).
    const copy = postgres ? await copyEvents(postgres.database) : undefined;
    const copyNodes = postgres
      ? await copyRows(postgres.database, 'merkle_nodes', MERKLE_COLUMNS)
      : undefined;
    const nodesOf = merkleNodeRows();
    const written = await writeBundleOnePass({
      path,
      log,
      keys,
      count,
      events: chainedEvents({ log, count, payloadBytes: 300 }),
      onEvent:
        copy && copyNodes
          ? async (event) => {
              await copy.write(event);
              for (const row of nodesOf(event)) await copyNodes.write(row);
            }
          : undefined,
    });
    await copy?.end();
    await copyNodes?.end();
    // As an aged table would be (autovacuum): hint bits set, so neither child pays for the
    // first read of freshly loaded rows.
    if (postgres) await execute(postgres.database, 'vacuum audit_events');

    const sources: Array<{ backend: string; verify: string[]; read: string[] }> = [
      {
        backend: 'file',
        verify: ['--mode', 'bundle', '--path', path, '--verifier', keys.verifierKey],
        read: ['--mode', 'bundle-sha256', '--path', path],
      },
      {
        // verifyBundleFile on two worker threads, as `vouch verify --bundle` runs.
        backend: 'file, 2 threads',
        verify: ['--mode', 'bundle-file', '--threads', '2', '--path', path, '--verifier', keys.verifierKey],
        read: ['--mode', 'bundle-sha256', '--path', path],
      },
    ];
    if (postgres) {
      sources.push({
        backend: 'postgres',
        verify: ['--mode', 'database', '--url', postgres.url!, '--log', log],
        read: ['--mode', 'database-read', '--url', postgres.url!, '--log', log],
      });
    }
    for (const source of sources) {
      const verified = await runChild([
        ...source.verify,
        '--early-at',
        String(early),
        '--half-at',
        String(count / 2),
      ]);
      const read = await runChild(source.read);
      if (verified.checked !== count) throw new Error(`child verified ${verified.checked} of ${count}`);
      const point = `${count} events, 300 B${source.backend.startsWith('file') ? ` (${(written.bytes / 2 ** 20).toFixed(0)} MiB)` : ''}, load ${loadavg()[0]!.toFixed(1)}`;
      const extra = {
        events: count,
        verifySeconds: verified.seconds,
        verifyPerSecond: count / verified.seconds,
      };
      // The same two processes timed: a verifier runs as its own process (vouch verify), with
      // none of the benchmark's heap around it.
      const file = source.backend.startsWith('file');
      figures.push(
        figure({
          scenario: 'verify-memory',
          backend: source.backend,
          point,
          metric: `${file ? 'verifyBundle' : 'verifyChain'}, own process`,
          unit: 'events/s',
          value: count / verified.seconds,
          baseline: {
            name: file ? 'SHA-256 of the file, own process' : 'plain keyset read, own process',
            value: count / read.seconds,
          },
          better: 'higher',
          target: file ? { value: 300_000, ratio: 0.5 } : { value: 150_000, ratio: 0.8 },
          extra,
        }),
        figure({
          scenario: 'verify-memory',
          backend: source.backend,
          point,
          metric: 'peak RSS verifying',
          unit: 'MiB',
          value: verified.maxRssMiB,
          baseline: {
            name: file ? 'peak RSS, SHA-256 of the file' : 'peak RSS, plain read',
            value: read.maxRssMiB,
          },
          better: 'lower',
          extra,
        }),
        figure({
          scenario: 'verify-memory',
          backend: source.backend,
          point,
          metric: 'peak RSS at the end',
          unit: 'MiB',
          value: verified.maxRssMiB,
          baseline: { name: `peak RSS after ${count / 2} events`, value: verified.halfMaxRssMiB },
          better: 'lower',
          // "Flat memory": memory that grew with the events would double over the second half;
          // the second half may not grow the high-water mark by more than 10%.
          target: { ratio: 1.1 },
          extra,
        }),
      );
    }
  } finally {
    rmSync(path, { force: true });
  }
  return figures;
}
