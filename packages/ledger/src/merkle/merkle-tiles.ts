import { sql } from 'drizzle-orm';
import type { Database, Db } from '../database';
import { readSubtreeHashes } from './merkle-node-store';

// c2sp.org/tlog-tiles over the stored tree. A tile at level L, index N holds the hashes of
// the nodes at height 8·L with indexes N·256 … N·256 + W − 1 (W = 256 for a full tile): at
// level 0 the leaf hashes, above them the stored interior nodes, each complete subtree of
// 2^(8·L) leaves. An entry bundle holds the leaves' inputs, here each event's 32-byte hash
// (the leaf hash is SHA-256(0x00 || event hash), RFC 9162), each prefixed by its length as a
// big-endian uint16.

/** Hashes per full tile (tile height 8). */
export const TILE_WIDTH = 256;
const TILE_HEIGHT = 8;

/** One tile, or an entry bundle (`level: 'entries'`). */
export interface TileRequest {
  log: string;
  level: number | 'entries';
  index: number;
  /** 1 … 256: 256 for a full tile, fewer for a partial one. */
  width: number;
}

/**
 * The bytes of a tile or entry bundle of `log`, or null when the tree of `treeSize` leaves
 * (the latest checkpoint) does not have that many nodes there: a tile is only served for the
 * signed tree. Reads one indexed range.
 */
export async function readTile(
  database: Database,
  request: TileRequest & { treeSize: number },
  executor?: Db,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const { log, index, width, treeSize } = request;
  const height = request.level === 'entries' ? 0 : request.level * TILE_HEIGHT;
  const first = index * TILE_WIDTH;
  // Nodes at this height in a tree of treeSize leaves: each covers 2^height leaves, complete.
  if (first + width > Math.floor(treeSize / 2 ** height)) return null;
  if (request.level === 'entries') {
    const rows = await database.rows<{ hash: string }>(
      sql`select hash from audit_events where log_id = ${log} and seq > ${first} and seq <= ${first + width} order by seq`,
      executor,
    );
    if (rows.length !== width) return null;
    const out = new Uint8Array(width * 34);
    rows.forEach((row, i) => {
      out[i * 34] = 0;
      out[i * 34 + 1] = 32;
      out.set(Buffer.from(row.hash, 'hex'), i * 34 + 2);
    });
    return out;
  }
  const subtrees = Array.from({ length: width }, (_, i) => ({ level: height, index: first + i }));
  const hashes = await readSubtreeHashes(database, log, subtrees, executor);
  if (hashes.some((hash) => hash === undefined)) return null;
  const out = new Uint8Array(width * 32);
  hashes.forEach((hash, i) => {
    out.set(hash!, i * 32);
  });
  return out;
}
