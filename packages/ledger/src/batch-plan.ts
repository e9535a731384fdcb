/**
 * What one unit of work reads and writes, by key (any string that names a piece of state:
 * `["idempotency", key]` as JSON, `"tools"`, ...). Work whose keys do not collide runs side by
 * side in one batch; see {@link planWaves}.
 */
export interface ConflictKeys {
  /** Keys the work only reads: other readers of them may run beside it, no writer may. */
  readonly reads?: readonly string[];
  /** Keys the work changes: nothing else that reads or writes them runs beside it. */
  readonly writes?: readonly string[];
}

/**
 * Split `items`, keeping their order, into waves: runs of consecutive items whose keys do not
 * collide (two writers of a key, or a writer and a reader). Every item of a wave reads the
 * state left by the waves before it, so running a wave's items at the same time gives the
 * same result as running them one after another in this order.
 *
 * An item whose keys are `null` declares nothing: it collides with everything and runs in a
 * wave of its own.
 */
export function planWaves<T>(
  items: readonly T[],
  keysOf: (item: T) => ConflictKeys | null,
  maxWave = Number.POSITIVE_INFINITY,
): T[][] {
  const waves: T[][] = [];
  let wave: T[] = [];
  let reads = new Set<string>();
  let writes = new Set<string>();
  let alone = false;
  const close = () => {
    if (wave.length > 0) waves.push(wave);
    wave = [];
    reads = new Set();
    writes = new Set();
    alone = false;
  };
  for (const item of items) {
    const keys = keysOf(item);
    const collides =
      alone ||
      wave.length >= maxWave ||
      (keys === null && wave.length > 0) ||
      (keys !== null &&
        ((keys.writes ?? []).some((k) => writes.has(k) || reads.has(k)) ||
          (keys.reads ?? []).some((k) => writes.has(k))));
    if (collides) close();
    wave.push(item);
    if (keys === null) {
      alone = true;
      continue;
    }
    for (const k of keys.reads ?? []) reads.add(k);
    for (const k of keys.writes ?? []) writes.add(k);
  }
  close();
  return waves;
}
