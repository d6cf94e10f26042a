// Postings: the lexical index's storage and its mutations, behind LexicalIndex (which validates
// every argument first). Terms and ids get small numbers; term → postings (doc number, term
// frequency) and doc → term list live in typed arrays; a sorted term order serves prefix lookups.
//
// Layout: a few typed arrays rather than an object per id or term, so a 100,000-id index is some
// 200,000 strings (ids and terms), two (sharded) Maps and a dozen typed arrays. Building or loading
// one then gives the garbage collector little to trace or move: with an array per term and an
// object per id, loading such an index held the event loop for 20–50 ms at a time in
// young-generation collections.
//
// Security caveats: terms and ids are plaintext in memory while the index exists; a removed id's
// postings and term list are not wiped (their regions are reused or dropped at a compaction).

import { Arena, grown, MIN_CAPACITY } from './arena';
import { ShardedMap } from './sharded-map';

/**
 * The state of one lexical index. Fields are read by the search and the codec (search.ts,
 * format.ts); the methods keep its invariants. Arguments are not checked: callers pass checked ones.
 */
export class Postings {
  // Terms. A term number names each term that has postings ("live") or that sits empty in `sorted`
  // ("stale"); a number is reused once its term is gone from both.
  readonly termNo = new ShardedMap();
  readonly termStr: string[] = [];
  readonly freeTerms: number[] = [];
  liveTerms = 0;
  /**
   * Postings: term t's are post.data[pAt[t], pAt[t] + 3·pLen[t]), (doc number, tf, slot) triples
   * where slot is the term's place in the doc's list; room for pCap[t] triples. Packed int32
   * triples rather than Map<id, tf>: a short prefix ('a') expands to thousands of terms and
   * hundreds of thousands of postings, and scanning packed small integers is what keeps such a
   * search within a few milliseconds (docs/lexical-index.md, measurements).
   */
  readonly post = new Arena();
  pAt = new Int32Array(0);
  pLen = new Int32Array(0);
  pCap = new Int32Array(0);
  // Ids. Doc d's terms are dterm.data[dAt[d], dAt[d] + 2·dLen[d]), (term number, entry number of d
  // in that term's postings) pairs; swap-removal keeps the entry numbers current.
  readonly ids = new ShardedMap();
  readonly idOf: (string | undefined)[] = [];
  readonly freeDocs: number[] = [];
  readonly dterm = new Arena();
  dAt = new Int32Array(0);
  dLen = new Int32Array(0);
  // Prefix lookup. Invariant: every live term is in exactly one of `sorted` (term numbers,
  // ascending by `<` on the terms, UTF-16 order) and `fresh`. `sorted` also holds the `stale` terms.
  sorted: number[] = [];
  fresh = new Set<number>();
  stale = 0;
  /**
   * Per doc number, its id's first six UTF-16 units packed three to a number (16 bits each, an
   * absent unit as 0): comparing keys orders ids as `<` does, except that equal keys (a shared
   * six-unit prefix, or a NUL against the end) leave it to the strings. Ranking reads these typed
   * arrays instead of each doc's id string: ties in (matched, tf) are the rule for common terms
   * (most postings have tf 1), and reading both ids at every tie dominated the search time.
   */
  key0 = new Float64Array(0);
  key1 = new Float64Array(0);

  /** Removes `id` (nothing happens when it is not indexed). O(its distinct terms). */
  remove(id: string): void {
    const d = this.ids.get(id);
    if (d === undefined) return;
    const dterm = this.dterm.data;
    const post = this.post.data;
    const at = this.dAt[d];
    const k = this.dLen[d];
    for (let j = 0; j < k; j++) {
      const t = dterm[at + 2 * j];
      const e = dterm[at + 2 * j + 1];
      const base = this.pAt[t];
      const last = this.pLen[t] - 1;
      if (e !== last) {
        // Swap-remove: the last entry moves into the hole; its doc learns its new place.
        const src = base + 3 * last;
        const dst = base + 3 * e;
        post[dst] = post[src];
        post[dst + 1] = post[src + 1];
        post[dst + 2] = post[src + 2];
        dterm[this.dAt[post[dst]] + 2 * post[dst + 2] + 1] = e;
      }
      this.pLen[t] = last;
      if (last === 0) {
        this.liveTerms--;
        if (this.fresh.delete(t)) this.dropTerm(t);
        else this.stale++;
      }
    }
    this.dterm.dead += 2 * k;
    this.dLen[d] = 0;
    this.idOf[d] = undefined;
    this.freeDocs.push(d);
    this.ids.delete(id);
  }

  /** Forgets an empty term that is in neither `sorted` nor `fresh`; its number and room are free. */
  dropTerm(t: number): void {
    this.termNo.delete(this.termStr[t]);
    this.termStr[t] = '';
    this.post.dead += 3 * this.pCap[t];
    this.pCap[t] = 0;
    this.freeTerms.push(t);
  }

  /** The number of term `s`, made live (a new term goes to `fresh`, a stale one comes back). */
  liveTerm(s: string): number {
    let t = this.termNo.get(s);
    if (t !== undefined) {
      if (this.pLen[t] === 0) {
        this.stale--;
        this.liveTerms++;
      }
      return t;
    }
    t = this.freeTerms.pop() ?? this.termStr.length;
    if (t >= this.pAt.length) {
      this.pAt = grown(this.pAt, t + 1);
      this.pLen = grown(this.pLen, t + 1);
      this.pCap = grown(this.pCap, t + 1);
    }
    this.termStr[t] = s;
    this.pLen[t] = 0;
    this.pCap[t] = 0;
    this.termNo.set(s, t);
    this.fresh.add(t);
    this.liveTerms++;
    return t;
  }

  /** Room for one more posting of term t (moving its postings to a larger region when full). */
  reserve(t: number): void {
    const cap = this.pCap[t];
    if (this.pLen[t] < cap) return;
    const n = Math.max(2, 2 * cap);
    const at = this.post.alloc(3 * n, () => this.compactPostings());
    const post = this.post.data;
    post.copyWithin(at, this.pAt[t], this.pAt[t] + 3 * this.pLen[t]);
    this.post.dead += 3 * cap;
    this.pAt[t] = at;
    this.pCap[t] = n;
  }

  /** Copies every term's postings region, in term number order, into a fresh array. */
  compactPostings(): void {
    const old = this.post.data;
    const out = new Int32Array(Math.max(MIN_CAPACITY, 2 * (this.post.end - this.post.dead)));
    let end = 0;
    for (let t = 0; t < this.termStr.length; t++) {
      const cap = this.pCap[t];
      if (cap === 0) continue;
      out.set(old.subarray(this.pAt[t], this.pAt[t] + 3 * this.pLen[t]), end);
      this.pAt[t] = end;
      end += 3 * cap;
    }
    this.post.data = out;
    this.post.end = end;
    this.post.dead = 0;
  }

  /** Copies every doc's term list, in doc number order, into a fresh array. */
  compactDocs(): void {
    const old = this.dterm.data;
    const out = new Int32Array(Math.max(MIN_CAPACITY, 2 * (this.dterm.end - this.dterm.dead)));
    let end = 0;
    for (let d = 0; d < this.idOf.length; d++) {
      const n = 2 * this.dLen[d];
      if (n === 0) continue;
      out.set(old.subarray(this.dAt[d], this.dAt[d] + n), end);
      this.dAt[d] = end;
      end += n;
    }
    this.dterm.data = out;
    this.dterm.end = end;
    this.dterm.dead = 0;
  }

  /** A doc number for `id` (a free one, else the next), with room in the per-doc arrays. */
  newDoc(id: string): number {
    const d = this.freeDocs.pop() ?? this.idOf.length;
    if (d === this.idOf.length) this.idOf.push(id);
    else this.idOf[d] = id;
    if (d >= this.dAt.length) {
      this.dAt = grown(this.dAt, d + 1);
      this.dLen = grown(this.dLen, d + 1);
      this.key0 = grown(this.key0, d + 1);
      this.key1 = grown(this.key1, d + 1);
    }
    const u = (i: number): number => (i < id.length ? id.charCodeAt(i) : 0);
    this.key0[d] = u(0) * 2 ** 32 + u(1) * 2 ** 16 + u(2);
    this.key1[d] = u(3) * 2 ** 32 + u(4) * 2 ** 16 + u(5);
    this.ids.set(id, d);
    return d;
  }

  /** Indexes `id` (not indexed yet) with its terms' frequencies `counts` (at least one term). */
  add(id: string, counts: Map<string, number>): void {
    const d = this.newDoc(id);
    const k = counts.size;
    const at = this.dterm.alloc(2 * k, () => this.compactDocs());
    this.dAt[d] = at;
    this.dLen[d] = k;
    let j = 0;
    for (const [s, f] of counts) {
      const t = this.liveTerm(s);
      this.reserve(t);
      const e = this.pLen[t]++;
      const post = this.post.data;
      const o = this.pAt[t] + 3 * e;
      post[o] = d;
      post[o + 1] = f;
      post[o + 2] = j;
      const dterm = this.dterm.data;
      dterm[at + 2 * j] = t;
      dterm[at + 2 * j + 1] = e;
      j++;
    }
  }

  /** First index in `sorted` whose term is ≥ `s`. */
  lowerBound(s: string): number {
    const a = this.sorted;
    const str = this.termStr;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (str[a[mid]] < s) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Merges the fresh terms into `sorted` and drops the stale ones: O(terms + fresh·log fresh). */
  rebuildSorted(): void {
    const str = this.termStr;
    const fresh = [...this.fresh].sort((a, b) => (str[a] < str[b] ? -1 : str[a] > str[b] ? 1 : 0));
    const old = this.sorted;
    const out: number[] = new Array(this.liveTerms);
    let i = 0;
    let j = 0;
    for (let k = 0; k < out.length; k++) {
      for (; i < old.length && this.pLen[old[i]] === 0; i++) this.dropTerm(old[i]); // stale
      if (j >= fresh.length || (i < old.length && str[old[i]] < str[fresh[j]])) out[k] = old[i++];
      else out[k] = fresh[j++];
    }
    for (; i < old.length; i++) this.dropTerm(old[i]); // only stale ones are left
    this.sorted = out;
    this.fresh = new Set();
    this.stale = 0;
  }
}
