import { Worker } from 'node:worker_threads';

const HASH_BYTES = 32;

// The worker's whole program, run from this string (`eval`) rather than a file: it needs
// nothing but node:crypto, and a string loads the same from source (vitest, tsx) and from
// dist, where a worker file would need its own build entry and loader.
//
// RFC 9162 §2.1.1: leaf = SHA-256(0x00 || event hash), node = SHA-256(0x01 || left || right).
// For each leaf, in order: its leaf hash, then the node of every subtree it completes, each
// folding the right edge (`frontier`, largest subtree first) as an append does. No state is
// kept between batches: each one brings the frontier it starts from.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { hash } = require('node:crypto');
const leafInput = Buffer.alloc(1 + ${HASH_BYTES});
const nodeInput = Buffer.alloc(1 + 2 * ${HASH_BYTES});
nodeInput[0] = 1;
parentPort.on('message', ({ id, size, frontier, leaves, spare }) => {
  const count = leaves.length / ${HASH_BYTES};
  // Each leaf completes 1 + (trailing one bits of its index) nodes: at most 2 per leaf plus
  // one per level. Into the buffer the last batch came back in, when it is big enough.
  const need = (2 * count + 64) * ${HASH_BYTES};
  const out = spare !== null && spare.byteLength >= need ? Buffer.from(spare) : Buffer.allocUnsafeSlow(need);
  const stack = [];
  for (let at = 0; at < frontier.length; at += ${HASH_BYTES}) stack.push(frontier.subarray(at, at + ${HASH_BYTES}));
  let written = 0;
  const put = (digest) => {
    const at = written;
    digest.copy(out, at);
    written += ${HASH_BYTES};
    return out.subarray(at, written);
  };
  for (let leaf = 0; leaf < count; leaf++) {
    leafInput.set(leaves.subarray(leaf * ${HASH_BYTES}, (leaf + 1) * ${HASH_BYTES}), 1);
    let node = put(hash('sha256', leafInput, 'buffer'));
    for (let idx = size + leaf; idx % 2 === 1; idx = (idx - 1) / 2) {
      nodeInput.set(stack.pop(), 1);
      nodeInput.set(node, 1 + ${HASH_BYTES});
      node = put(hash('sha256', nodeInput, 'buffer'));
    }
    stack.push(node);
  }
  const nodes = new Uint8Array(out.buffer, 0, written);
  parentPort.postMessage({ id, nodes, leaves }, [out.buffer, leaves.buffer]);
});
`;

/** A batch of leaves handed to the worker: the nodes come back in `addLeaf` order. */
export interface TreeHashingBatch {
  /** Leaves in the tree before the batch. */
  size: number;
  /** The complete subtrees on the right edge before the batch, largest first. */
  frontier: readonly Uint8Array[];
  /**
   * The event hashes of the batch's leaves, 32 bytes each, one after the other: a view of
   * {@link TreeHashingWorker.input}'s buffer, which goes to the worker and back.
   */
  leaves: Uint8Array;
}

/**
 * A worker thread that hashes a Merkle tree's leaves and the nodes they complete, so a
 * verifier's main thread keeps only the comparing (and the chain) while the tree's two
 * SHA-256 per event run on another core. Node only: `@vouch/audit` stays browser-safe.
 */
export interface TreeHashingWorker {
  /**
   * Hash a batch: resolves with, for each leaf in order, its leaf hash and then the node of
   * every subtree it completes, 32 bytes each.
   */
  hash(batch: TreeHashingBatch): Promise<Uint8Array>;
  /** A buffer of at least `bytes` to write a batch's leaves into (the same one batch after batch). */
  input(bytes: number): Uint8Array;
  /** Give back the nodes of a batch once they are used: the next batch is written into them. */
  release(nodes: Uint8Array): void;
  close(): Promise<void>;
}

/** Start a {@link TreeHashingWorker}. It does not keep the process alive on its own. */
export function startTreeHashingWorker(): TreeHashingWorker {
  // It holds one batch and a few dozen hashes: a small heap keeps its memory next to nothing
  // beside the verifier's (the default young generation alone would grow to tens of MiB).
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 64 },
  });
  worker.unref();
  const waiting = new Map<number, { resolve: (nodes: Uint8Array) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let failed: Error | null = null;
  // Two buffers go to the worker and come back, batch after batch, rather than two new ones
  // per batch: fresh ones are external memory the collector frees late, and a verifier's
  // memory must stay flat over any number of events.
  let spareInput: Uint8Array | null = null;
  let spareOutput: ArrayBuffer | null = null;
  const failAll = (error: Error) => {
    failed = error;
    for (const { reject } of waiting.values()) reject(error);
    waiting.clear();
  };
  worker.on('message', ({ id, nodes, leaves }: { id: number; nodes: Uint8Array; leaves: Uint8Array }) => {
    spareInput = new Uint8Array(leaves.buffer);
    const entry = waiting.get(id);
    waiting.delete(id);
    entry?.resolve(nodes);
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => {
    if (waiting.size > 0) failAll(new Error(`the tree hashing worker exited (code ${code})`));
  });
  return {
    hash({ size, frontier, leaves }) {
      if (failed) return Promise.reject(failed);
      const id = nextId++;
      const packed = new Uint8Array(frontier.length * HASH_BYTES);
      for (const [i, node] of frontier.entries()) packed.set(node, i * HASH_BYTES);
      const spare = spareOutput;
      spareOutput = null;
      if (leaves.buffer === spareInput?.buffer) spareInput = null;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        const transfer = [leaves.buffer as ArrayBuffer, ...(spare === null ? [] : [spare])];
        worker.postMessage({ id, size, frontier: packed, leaves, spare }, transfer);
      });
    },
    input(bytes) {
      if (spareInput === null || spareInput.byteLength < bytes) spareInput = new Uint8Array(bytes);
      return spareInput;
    },
    release(nodes) {
      spareOutput = nodes.buffer as ArrayBuffer;
    },
    async close() {
      await worker.terminate();
    },
  };
}
