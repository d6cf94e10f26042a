// Typed-array storage for the lexical index: grown() for the per-term and per-doc arrays, and
// Arena, an append-only int32 array cut into regions (the postings, and every doc's term list).
//
// Security caveats: a region that is freed or moved is not wiped; its old contents stay in the
// array until overwritten or the array is dropped.

/** Fewest elements an array allocated by grown() or a compaction holds. */
export const MIN_CAPACITY = 64;

/**
 * A copy of `a` with room for at least `n` elements (doubling), its first `used` elements kept;
 * `a` itself when it has the room.
 * @example pAt = grown(pAt, t + 1);
 */
export function grown<T extends Int32Array | Float64Array>(a: T, n: number, used = a.length): T {
  if (n <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(MIN_CAPACITY, n, a.length * 2));
  b.set(a.subarray(0, used));
  return b;
}

/** An arena of int32 regions (append-only; freed regions count as dead until a compaction). */
export class Arena {
  data = new Int32Array(0);
  end = 0;
  dead = 0;

  /**
   * Returns the start of a new region of `n` ints; `compact` moves the live regions to a fresh
   * array when most of this one is dead.
   */
  alloc(n: number, compact: () => void): number {
    if (this.end + n > this.data.length) {
      // Mostly dead: copy the live regions into a fresh array instead of doubling this one.
      if (this.dead > this.end >>> 1) compact();
      if (this.end + n > this.data.length) this.data = grown(this.data, this.end + n, this.end);
    }
    const at = this.end;
    this.end += n;
    return at;
  }
}
