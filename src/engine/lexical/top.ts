// Top: the bounded heap that keeps a search's best `limit` results (ranking: more distinct query
// terms matched, then higher total term frequency, then id in UTF-16 order).
//
// Security caveats: time depends on the entries offered (not constant-time).

/**
 * The best `limit` of the (doc, matched, tf) entries offered, by matched (more first), then tf
 * (more first), then id (UTF-16 order): a bounded heap whose root is the worst entry kept. Once it
 * is full, an entry below the root costs a few number comparisons; ids are compared by their
 * packed keys (Postings key0/key1), and as strings only when those are equal.
 */
export class Top {
  readonly d: number[] = [];
  readonly m: number[] = [];
  readonly t: number[] = [];

  constructor(
    readonly limit: number,
    readonly idOf: readonly (string | undefined)[],
    readonly key0: Float64Array,
    readonly key1: Float64Array,
  ) {}

  /** Doc a's id comes after doc b's (UTF-16 order), by their packed keys when these differ. */
  after(a: number, b: number): boolean {
    const x = this.key0[a];
    const y = this.key0[b];
    if (x !== y) return x > y;
    const u = this.key1[a];
    const v = this.key1[b];
    if (u !== v) return u > v;
    return this.idOf[a]! > this.idOf[b]!;
  }

  /** Heap entry i ranks below heap entry j. */
  below(i: number, j: number): boolean {
    const { m, t } = this;
    if (m[i] !== m[j]) return m[i] < m[j];
    if (t[i] !== t[j]) return t[i] < t[j];
    return this.after(this.d[i], this.d[j]);
  }

  swap(i: number, j: number): void {
    const { d, m, t } = this;
    let x = d[i];
    d[i] = d[j];
    d[j] = x;
    x = m[i];
    m[i] = m[j];
    m[j] = x;
    x = t[i];
    t[i] = t[j];
    t[j] = x;
  }

  offer(doc: number, matched: number, tf: number): void {
    const { d, m, t } = this;
    const n = d.length;
    if (n < this.limit) {
      d.push(doc);
      m.push(matched);
      t.push(tf);
      for (let i = n; i > 0;) {
        const up = (i - 1) >>> 1;
        if (!this.below(i, up)) break;
        this.swap(i, up);
        i = up;
      }
      return;
    }
    if (matched < m[0] || (matched === m[0] && (tf < t[0] || (tf === t[0] && this.after(doc, d[0]))))) return;
    d[0] = doc;
    m[0] = matched;
    t[0] = tf;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let w = i;
      if (l < n && this.below(l, w)) w = l;
      if (r < n && this.below(r, w)) w = r;
      if (w === i) break;
      this.swap(i, w);
      i = w;
    }
  }

  /** The ids kept, best first. */
  ids(): string[] {
    const order = this.d.map((_, i) => i);
    order.sort((i, j) => (this.below(i, j) ? 1 : this.below(j, i) ? -1 : 0));
    return order.map((i) => this.idOf[this.d[i]]!);
  }
}
