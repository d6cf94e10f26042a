// ShardedMap: the lexical index's string → number maps (term → term number, id → doc number),
// split so that no single Map rehash holds the event loop long.
//
// Security caveats: the shard a key lands in depends on its last characters (not constant-time).

/** Number of Maps a ShardedMap spreads its keys over (a power of two). */
const SHARDS = 64;
/** Trailing characters of a key that choose its shard. */
const HASHED_CHARS = 4;
/** Hash multiplier: a prime near 2^32 / φ (xxHash's PRIME32_1). */
const GOLDEN_PRIME = 0x9e3779b1;
/** The hash's top log2(SHARDS) bits pick the shard. */
const SHARD_SHIFT = 32 - Math.log2(SHARDS);

/**
 * A string → number map split over 64 Maps by a hash of the key's last characters. A Map doubles
 * its table as it grows, and past 65,536 entries one such rehash holds the event loop for 10–25 ms
 * (100,000 ids, or WordNet's terms); shards rehash a 64th of that at a time.
 */
export class ShardedMap {
  readonly #shards = Array.from({ length: SHARDS }, () => new Map<string, number>());
  #size = 0;

  #shard(key: string): Map<string, number> {
    const n = key.length;
    let h = n;
    for (let i = Math.max(0, n - HASHED_CHARS); i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), GOLDEN_PRIME);
    return this.#shards[(h >>> SHARD_SHIFT) & (SHARDS - 1)];
  }

  get size(): number {
    return this.#size;
  }

  get(key: string): number | undefined {
    return this.#shard(key).get(key);
  }

  set(key: string, value: number): void {
    const m = this.#shard(key);
    const before = m.size;
    m.set(key, value);
    this.#size += m.size - before;
  }

  delete(key: string): boolean {
    const gone = this.#shard(key).delete(key);
    if (gone) this.#size--;
    return gone;
  }
}
