import type { FoundApiKey } from '@vouch/ledger';

export interface KeyCacheOptions {
  /** Most keys remembered; the least recently used goes first (default 10,000). */
  maxEntries?: number;
  /** Longest a key is remembered, whatever else happens (default 60 s). */
  maxAgeMs?: number;
  now?: () => number;
}

/**
 * The keys this process has authenticated, by hash, so the next request with the same key
 * costs no query. Only keys proven against the chain and not revoked are kept; unknown or
 * refused hashes are never remembered.
 *
 * It is only as good as its invalidation: {@link forgetKey} on every revocation (the key
 * store wires it to the database's revocation feed, which reaches every process at the
 * revocation's commit), {@link forgetAll} whenever that feed may have missed one. The age
 * bound is a backstop, not the mechanism.
 */
export class KeyCache {
  private readonly entries = new Map<string, { found: FoundApiKey; at: number }>();
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(options: KeyCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  get(hash: string): FoundApiKey | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    this.entries.delete(hash);
    if (this.now() - entry.at > this.maxAgeMs) return undefined;
    // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
    this.entries.set(hash, entry);
    return entry.found;
  }

  remember(hash: string, found: FoundApiKey): void {
    if (found.key.revokedAt !== null || (found.proof !== 'proven' && found.proof !== 'unproven')) return;
    this.entries.delete(hash);
    this.entries.set(hash, { found, at: this.now() });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  forgetKey(keyId: string): void {
    for (const [hash, entry] of this.entries) if (entry.found.key.id === keyId) this.entries.delete(hash);
  }

  forgetAll(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
