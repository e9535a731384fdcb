import type { ChainHead } from '@vouch/audit';
import { CompactRange } from '@vouch/audit/merkle';

interface Entry {
  /** The head the frontier is the tree of: its seq is the tree's size. */
  head: ChainHead;
  frontier: Uint8Array[];
}

/**
 * The Merkle frontier (see `CompactRange`) of each log at the last head this process built
 * it for, so the next batch need not read it back from `merkle_nodes`.
 *
 * Keyed by the head, never trusted on its own: a frontier is handed out only for the exact
 * head (seq and hash) the caller found, and a head's hash commits to every event before it,
 * so the same head means the same leaves and the same tree. A frontier stored for a batch
 * that then rolled back is never handed out: no head the log reaches later has its hash.
 */
export class MerkleFrontiers {
  private readonly entries = new Map<string, Entry>();

  /** The compact range of `log` at `head`, or undefined when this process has not built that one. */
  at(log: string, head: ChainHead): CompactRange | undefined {
    const entry = this.entries.get(log);
    if (!entry || entry.head.seq !== head.seq || entry.head.hash !== head.hash) return undefined;
    return CompactRange.fromFrontier(head.seq, entry.frontier);
  }

  /** Remember `range`, the tree of `log` up to and including the event `head`. */
  remember(log: string, head: ChainHead, range: CompactRange): void {
    this.entries.set(log, { head, frontier: range.frontier() });
  }
}
