import { eventLeafHash, generateNoteKeys, parseSignerKey, sha256, verifyInclusion } from '@vouch/audit';
import { createCheckpointer, createLedger, logOrigin, merkleInclusionProof, merkleRoot } from '@vouch/ledger';
import type { BenchDatabase } from '../backends';
import { query } from '../backends';
import { chainedEvents, loadEvents } from '../dataset';
import type { BenchOptions } from '../options';
import { type Figure, figure } from '../report';
import { closedLoop, now } from '../stats';

/** Proofs generated and verified per measurement: enough for a steady rate, small beside the log. */
const PROOFS = 2_000;

/** A deterministic spread of seqs over 1..n, the same for the proofs and the baseline reads. */
function seqsOver(n: number, count: number): number[] {
  let x = 0x9e3779b9;
  return Array.from({ length: count }, () => {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return (x % n) + 1;
  });
}

/**
 * Inclusion proofs at a large tree size, read from the stored Merkle subtrees (one query of
 * O(log n) rows each), beside a point read of one event row by primary key: the ratio says
 * what a proof costs in single-row reads. Verification beside the bare SHA-256 work a proof
 * needs (log2 n + 1 hashes of 64 bytes). Then checkpoint signing's cost on append throughput:
 * 64 writers with the checkpointer hooked in beside the same writers without it.
 */
export async function proofs(
  bench: BenchDatabase,
  backend: string,
  options: BenchOptions,
  events: number,
): Promise<Figure[]> {
  const figures: Figure[] = [];
  const log = 'proofs';
  await loadEvents(bench.database, chainedEvents({ log, count: events, payloadBytes: 300 }));
  // One append through the real path: the Merkle hook builds the subtrees of every loaded
  // event in this batch (its catch-up for a log written without the tree).
  const ledger = createLedger(bench.database);
  const built = now();
  await ledger.append({
    log,
    kind: 'tool.call',
    entity: 'tip',
    actor: 'agent:bench',
    payload: { tip: true },
  });
  const buildSeconds = (now() - built) / 1000;
  const treeSize = events + 1;
  const seqs = seqsOver(treeSize, PROOFS);

  let t = now();
  for (const seq of seqs) {
    await query(bench.database, 'select hash from audit_events where log_id = $1 and seq = $2', [log, seq]);
  }
  const pointReads = PROOFS / ((now() - t) / 1000);

  const generated: Uint8Array[][] = [];
  t = now();
  for (const seq of seqs) generated.push(await merkleInclusionProof(bench.database, { log, seq, treeSize }));
  const proofsPerSecond = PROOFS / ((now() - t) / 1000);

  const root = await merkleRoot(bench.database, { log, treeSize });
  const leafHashes = await Promise.all(
    seqs.map(async (seq) => {
      const [row] = await query<{ hash: string }>(
        bench.database,
        'select hash from audit_events where log_id = $1 and seq = $2',
        [log, seq],
      );
      return eventLeafHash(row!.hash);
    }),
  );
  t = now();
  for (let i = 0; i < PROOFS; i++) {
    if (!verifyInclusion(leafHashes[i]!, seqs[i]! - 1, treeSize, generated[i]!, root)) {
      throw new Error(`inclusion proof of seq ${seqs[i]} did not verify`);
    }
  }
  const verifiedPerSecond = PROOFS / ((now() - t) / 1000);
  const hashesPerProof = Math.ceil(Math.log2(treeSize)) + 1;
  const block = new Uint8Array(65);
  t = now();
  for (let i = 0; i < PROOFS * hashesPerProof; i++) sha256(block);
  const bareHashing = PROOFS / ((now() - t) / 1000);

  const point = `${events.toLocaleString('en-US')} events`;
  figures.push(
    figure({
      scenario: 'proofs',
      backend,
      point,
      metric: 'inclusion proofs generated',
      unit: 'proofs/s',
      value: proofsPerSecond,
      baseline: { name: 'point read of one event row', value: pointReads },
      better: 'higher',
      extra: { proofNodes: generated[0]!.length, treeBuildSeconds: buildSeconds },
    }),
    figure({
      scenario: 'proofs',
      backend: 'in process',
      point,
      metric: 'inclusion proofs verified',
      unit: 'proofs/s',
      value: verifiedPerSecond,
      baseline: { name: `${hashesPerProof} bare SHA-256 per proof`, value: bareHashing },
      better: 'higher',
    }),
  );

  // Checkpoint signing overhead on appends: the product interval (1 s) and a signature after
  // every batch (interval 0), beside the same 64 writers with no checkpointer.
  const name = 'bench.vouch.local';
  const signers = [parseSignerKey(generateNoteKeys(name).signerKey)];
  const appendRate = async (tag: string, intervalMs: number | null) => {
    const checkpointer =
      intervalMs === null
        ? null
        : createCheckpointer({
            database: bench.database,
            origin: (l) => logOrigin(name, l),
            signers,
            intervalMs,
          });
    const target = createLedger(bench.database, {
      afterAppend: checkpointer ? [checkpointer.afterAppend] : [],
    });
    try {
      return await closedLoop({
        workers: 64,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs,
        op: async (w, i) => {
          await target.append({
            log: `sign-${tag}`,
            kind: 'tool.call',
            entity: `p-${w}-${i}`,
            actor: 'agent:bench',
            payload: { w, i },
          });
          return 1;
        },
      });
    } finally {
      await target.close();
      await checkpointer?.close();
    }
  };
  const unsigned = await appendRate('none', null);
  for (const intervalMs of [1_000, 0]) {
    const signed = await appendRate(`every-${intervalMs}`, intervalMs);
    figures.push(
      figure({
        scenario: 'checkpoint-signing',
        backend,
        point: `64 writers, interval ${intervalMs} ms`,
        metric: 'appends with checkpoints signed',
        unit: 'events/s',
        value: signed.perSecond,
        baseline: { name: 'same appends, no checkpointer', value: unsigned.perSecond },
        better: 'higher',
      }),
    );
  }
  await ledger.close();
  return figures;
}
