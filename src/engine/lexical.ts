// A lexical (full-text) index over one collection's string fields: the store calls `update` on every
// put and delete and persists `serialize()` sealed at checkpoints (docs/lexical-index.md).
//
// Tokenizer: NFKC, locale-independent lower case, words = a letter or number followed by letters,
// numbers and combining marks (UAX #44 general categories L, N, M through the regexp `u` flag),
// each capped at 64 code points. Queries are tokenized the same way.
//
// Security caveats: terms are plaintext in memory while the index exists, like the records the
// store decrypts; `serialize()` returns plaintext terms and ids, so callers seal it before it
// reaches storage. Search time depends on the data and the query (it is not constant-time).
//
// Serialized form (all varints unsigned LEB128, canonical; str(s) = varint(UTF-8 length) ‖ UTF-8):
//   "PQLX" ‖ version(1) ‖ varint(#fields) ‖ str(field)*                     fields in UTF-8 byte order
//   ‖ varint(#terms) ‖ (varint(shared) ‖ varint(|suffix|) ‖ suffix)*         front-coded, UTF-8 byte order
//   ‖ varint(#docs) ‖ (str(id) ‖ varint(k) ‖ (varint(term index delta) ‖ varint(tf)) × k)*   ids in UTF-8 byte order
//   ‖ le32(CRC-32C of everything before)
// Sorting every list makes the bytes a function of the indexed content alone (not of update order).

import { PqdbError } from '../errors';
import { readVarint } from '../_varint';
import { bytes as checkBytes, integer } from '../_args';
import { utf8 } from '../_utf8';
import { crc32c } from '../storage/page-store';
import { concatBytes } from '../_bytes';
import { ValueWriter } from './codec';

/** Longest token, in code points; longer words are cut to their first 64 code points. */
export const MAX_TOKEN_CODE_POINTS = 64;
/** Default number of ids `search` returns. */
export const DEFAULT_SEARCH_LIMIT = 100;

const FORMAT_VERSION = 1;
const MAGIC = [0x50, 0x51, 0x4c, 0x58]; // PQLX
/**
 * Terms added since the sorted term array was last built are scanned linearly by prefix searches
 * up to this many; beyond it the next prefix search merges them in (O(terms)). Keeps a search that
 * follows a put cheap while the merge cost stays amortised over ≥ 1024 new terms.
 */
const FRESH_SCAN_MAX = 1024;
/**
 * In an 'all' search, once fewer than size/PROBE_COST ids remain, a term is checked against those
 * ids' own term lists (~14 terms each for WordNet glosses) rather than by scanning its postings.
 */
const PROBE_COST = 16;
const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;
const dec = new TextDecoder('utf-8', { fatal: true });

export interface LexicalOptions {
  /** Names of the string fields whose text is indexed (all pooled into one bag of words per id). */
  readonly text: readonly string[];
}

export interface SearchOptions {
  /** 'all' (default): ids containing every query term; 'any': ids containing at least one. */
  mode?: 'all' | 'any';
  /** The last query term matches every indexed term that starts with it (search as you type). */
  prefix?: boolean;
  /** At most this many ids (default 100). */
  limit?: number;
}

/**
 * One query term's postings: an exact term (`t`, with `extra` = [t]), or a prefix term (`t` = -1):
 * the terms #sorted[lo, hi) plus the fresh terms in `extra`.
 */
interface Group {
  term: string;
  t: number;
  lo: number;
  hi: number;
  extra: number[];
  /** Number of postings (an upper bound on the ids it matches). */
  size: number;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The index terms of `text`: NFKC, lower case, split on everything but letters, numbers and the
 * marks inside words; each token at most 64 code points.
 * @throws TypeError when `text` is not a string.
 * @example tokenize('Ｆｉｌｅ ﬁnder, Café!') // ['file', 'finder', 'café']
 */
export function tokenize(text: string): string[] {
  if (typeof text !== 'string') throw new TypeError(`"text" expected a string, got ${typeof text}`);
  // ASCII is NFKC-invariant and lower-cases to ASCII. Otherwise normalise again after lower-casing:
  // a few lower-case mappings leave text that NFKC changes (keeps tokenize idempotent).
  const s = isAscii(text) ? text.toLowerCase() : text.normalize('NFKC').toLowerCase().normalize('NFKC');
  const out: string[] = [];
  for (const m of s.matchAll(WORD)) {
    let t = m[0];
    if (t.length > MAX_TOKEN_CODE_POINTS) {
      const cps = Array.from(t);
      if (cps.length > MAX_TOKEN_CODE_POINTS) t = cps.slice(0, MAX_TOKEN_CODE_POINTS).join('');
    }
    out.push(t);
  }
  return out;
}

/**
 * Sorts strings in code point order in bounded steps: runs of SORT_RUN strings are sorted, then
 * merged pairwise, yielding after each run and every SORT_RUN merged strings, so sorting 100,000
 * ids never holds the event loop for more than a few milliseconds. Returns the sorted array.
 */
function* sortCodePointsSteps(a: string[]): Generator<void, string[]> {
  const n = a.length;
  for (let i = 0; i < n; i += SORT_RUN) {
    const run = a.slice(i, i + SORT_RUN).sort(compareCodePoints);
    for (let j = 0; j < run.length; j++) a[i + j] = run[j];
    if (n > SORT_RUN) yield;
  }
  let src = a;
  let dst: string[] = new Array(n);
  let budget = 0;
  for (let width = SORT_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        dst[k] = i < mid && (j >= hi || compareCodePoints(src[i], src[j]) <= 0) ? src[i++] : src[j++];
        if (++budget === SORT_RUN) {
          budget = 0;
          yield;
        }
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}
const SORT_RUN = 1024;

/** Compares strings by code point (= UTF-8 byte order), unlike `<`, which compares UTF-16 units. */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (astral code points) sort after U+E000..U+FFFF in code point order.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

function checkOptions(options: LexicalOptions): string[] {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const text = options.text;
  if (!Array.isArray(text)) throw new TypeError('"options.text" expected an array of field names');
  if (text.length === 0) throw new RangeError('"options.text" expected at least one field name');
  for (const f of text) {
    if (typeof f !== 'string' || f.length === 0) throw new TypeError('"options.text" expected non-empty strings');
  }
  const fields = [...text].sort(compareCodePoints);
  for (let i = 1; i < fields.length; i++) {
    if (fields[i] === fields[i - 1]) throw new RangeError(`"options.text" names field "${fields[i]}" twice`);
  }
  return fields;
}

function checkId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('"id" expected a non-empty string');
  return id;
}

/**
 * 'all' mode, group `g` (0-based), one posting region post[from, to): an id takes part only when it
 * matched groups 0..g-1 (matched = g); its first posting in the group raises it to g + 1, later
 * ones (other terms of the same prefix range) only add their frequency. Group 0 appends the ids it
 * raises to `touched` from `at`. Returns how many ids it raised. Mutates `matched`, `tf`, `touched`.
 */
function scanAll(
  post: Int32Array,
  from: number,
  to: number,
  g: number,
  matched: Uint32Array,
  tf: Float64Array,
  touched: Int32Array,
  at: number,
): number {
  const next = g + 1;
  let raised = 0;
  for (let i = from; i < to; i += 3) {
    const d = post[i];
    const m = matched[d];
    if (m === g) {
      matched[d] = next;
      if (g === 0) touched[at + raised] = d;
      raised++;
      tf[d] += post[i + 1];
    } else if (m === next) {
      tf[d] += post[i + 1];
    }
  }
  return raised;
}

/**
 * 'any' mode, one posting region post[from, to) of the group marked `mark`: an id counts the group
 * once (`seen`), however many of the group's terms it holds, and adds every frequency. Returns the
 * new number of touched ids. Mutates `matched`, `seen`, `tf`, `touched`.
 */
function scanAny(
  post: Int32Array,
  from: number,
  to: number,
  mark: number,
  matched: Uint32Array,
  seen: Uint32Array,
  tf: Float64Array,
  touched: Int32Array,
  nTouched: number,
): number {
  for (let i = from; i < to; i += 3) {
    const d = post[i];
    if (seen[d] !== mark) {
      seen[d] = mark;
      if (matched[d]++ === 0) touched[nTouched++] = d;
    }
    tf[d] += post[i + 1];
  }
  return nTouched;
}

/**
 * The best `limit` of the (doc, matched, tf) entries offered, by matched (more first), then tf
 * (more first), then id (UTF-16 order): a bounded heap whose root is the worst entry kept. Once it
 * is full, an entry below the root costs a few number comparisons; ids are compared by their
 * packed keys (LexicalIndex #key0/#key1), and as strings only when those are equal.
 */
class Top {
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

/**
 * A string → number map split over 64 Maps by a hash of the key's last characters. A Map doubles
 * its table as it grows, and past 65,536 entries one such rehash holds the event loop for 10–25 ms
 * (100,000 ids, or WordNet's terms); shards rehash a 64th of that at a time.
 */
class ShardedMap {
  readonly #shards = Array.from({ length: 64 }, () => new Map<string, number>());
  #size = 0;

  #shard(key: string): Map<string, number> {
    const n = key.length;
    let h = n;
    for (let i = Math.max(0, n - 4); i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x9e3779b1);
    return this.#shards[(h >>> 26) & 63];
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

/**
 * A ValueWriter cut into parts of `size` bytes as it fills (call cut() between entries), with a
 * running CRC-32C: no buffer larger than a part (plus one entry) is allocated, grown or copied.
 */
class PartWriter {
  readonly parts: Uint8Array[] = [];
  readonly w = new ValueWriter();
  #crc = 0;

  constructor(readonly size: number) {
    this.w.buf = new Uint8Array(size + 4096);
  }

  /** Moves every full part out of the writer. */
  cut(): void {
    const w = this.w;
    while (w.n >= this.size) {
      const part = w.buf.subarray(0, this.size);
      this.#crc = crc32c(part, this.#crc);
      this.parts.push(part);
      const next = new Uint8Array(Math.max(this.size + 4096, w.n - this.size));
      next.set(w.buf.subarray(this.size, w.n));
      w.buf.fill(0, this.size, w.n); // the part's buffer keeps no plaintext beyond the part
      w.buf = next;
      w.n -= this.size;
    }
  }

  /** Appends le32(CRC-32C of everything written) and returns the parts. */
  finish(): Uint8Array[] {
    this.cut();
    const crc = crc32c(this.w.buf.subarray(0, this.w.n), this.#crc);
    this.w.bytes(Uint8Array.of(crc & 0xff, (crc >>> 8) & 0xff, (crc >>> 16) & 0xff, crc >>> 24));
    this.cut();
    if (this.w.n > 0 || this.parts.length === 0) this.parts.push(this.w.buf.subarray(0, this.w.n));
    return this.parts;
  }
}

/** A copy of `a` with room for at least `n` elements (doubling), its first `used` elements kept. */
function grown<T extends Int32Array | Float64Array>(a: T, n: number, used = a.length): T {
  if (n <= a.length) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(64, n, a.length * 2));
  b.set(a.subarray(0, used));
  return b;
}

/** An arena of int32 regions (append-only; freed regions count as dead until a compaction). */
class Arena {
  data = new Int32Array(0);
  end = 0;
  dead = 0;

  /** Returns the start of a new region of `n` ints; `compact` moves the live regions to a fresh array when most of this one is dead. */
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

/**
 * An in-memory inverted index: term → postings (doc number, term frequency), plus each id's term
 * list for O(tokens) removal. Not thread-shared; all methods are synchronous.
 *
 * Layout: a few typed arrays rather than an object per id or term, so a 100,000-id index is some
 * 200,000 strings (ids and terms), two (sharded) Maps and a dozen typed arrays. Building or loading one then
 * gives the garbage collector little to trace or move: with an array per term and an object per id,
 * loading such an index held the event loop for 20–50 ms at a time in young-generation collections.
 * @example
 * const ix = new LexicalIndex({ text: ['lemma', 'gloss'] });
 * ix.update('n1', { lemma: 'entity', gloss: 'that which is perceived' });
 * ix.search('perc', { prefix: true }) // ['n1']
 */
export class LexicalIndex {
  readonly #fields: readonly string[];
  // Terms. A term number names each term that has postings ("live") or that sits empty in #sorted
  // ("stale"); a number is reused once its term is gone from both.
  readonly #termNo = new ShardedMap();
  readonly #termStr: string[] = [];
  readonly #freeTerms: number[] = [];
  #liveTerms = 0;
  /**
   * Postings: term t's are #post.data[#pAt[t], #pAt[t] + 3·#pLen[t]), (doc number, tf, slot)
   * triples where slot is the term's place in the doc's list; room for #pCap[t] triples. Packed
   * int32 triples rather than Map<id, tf>: a short prefix ('a') expands to thousands of terms and
   * hundreds of thousands of postings, and scanning packed small integers is what keeps such a
   * search within a few milliseconds (docs/lexical-index.md, measurements).
   */
  readonly #post = new Arena();
  #pAt = new Int32Array(0);
  #pLen = new Int32Array(0);
  #pCap = new Int32Array(0);
  // Ids. Doc d's terms are #dterm.data[#dAt[d], #dAt[d] + 2·#dLen[d]), (term number, entry number
  // of d in that term's postings) pairs; swap-removal keeps the entry numbers current.
  readonly #ids = new ShardedMap();
  readonly #idOf: (string | undefined)[] = [];
  readonly #freeDocs: number[] = [];
  readonly #dterm = new Arena();
  #dAt = new Int32Array(0);
  #dLen = new Int32Array(0);
  // Prefix lookup. Invariant: every live term is in exactly one of #sorted (term numbers, ascending
  // by `<` on the terms, UTF-16 order) and #fresh. #sorted also holds the #stale terms.
  #sorted: number[] = [];
  #fresh = new Set<number>();
  #stale = 0;
  // Search scratch, indexed by doc number; zeroed again for every doc a search touches.
  #matched = new Uint32Array(0);
  #seen = new Uint32Array(0);
  #tf = new Float64Array(0);
  /**
   * Per doc number, its id's first six UTF-16 units packed three to a number (16 bits each, an
   * absent unit as 0): comparing keys orders ids as `<` does, except that equal keys (a shared
   * six-unit prefix, or a NUL against the end) leave it to the strings. Ranking reads these typed
   * arrays instead of each doc's id string: ties in (matched, tf) are the rule for common terms
   * (most postings have tf 1), and reading both ids at every tie dominated the search time.
   */
  #key0 = new Float64Array(0);
  #key1 = new Float64Array(0);
  /** Doc numbers a search touched. A typed buffer, not push(): growing a JS array by push cost
   * ~60 ns per element here (heap allocation), 50x the rest of the accumulation loop. */
  #touched = new Int32Array(0);

  /**
   * @throws TypeError unless `options.text` is an array of non-empty strings; RangeError when it is
   * empty or names a field twice.
   */
  constructor(options: LexicalOptions) {
    this.#fields = Object.freeze(checkOptions(options));
  }

  /** The indexed fields (sorted). */
  get fields(): readonly string[] {
    return this.#fields;
  }

  /** Number of ids indexed (an id whose fields hold no token is not indexed). */
  get size(): number {
    return this.#ids.size;
  }

  /** Number of distinct terms. */
  get terms(): number {
    return this.#liveTerms;
  }

  /**
   * Replaces what is indexed for `id` with the tokens of `value`'s indexed fields (undefined value
   * = remove). Absent fields are skipped. O(tokens of the old and new value). The index is unchanged
   * when it throws.
   * @throws TypeError for an empty id, a value that is not an object, or an indexed field holding
   * something other than a string.
   * @example ix.update('n1', { lemma: 'entity' }); ix.update('n1', undefined);
   */
  update(id: string, value: Record<string, unknown> | undefined): void {
    checkId(id);
    if (value === undefined) {
      this.remove(id);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new TypeError('"value" expected an object or undefined');
    const counts = new Map<string, number>();
    for (const f of this.#fields) {
      const v = Object.prototype.hasOwnProperty.call(value, f) ? value[f] : undefined;
      if (v === undefined) continue;
      if (typeof v !== 'string') throw new TypeError(`"value.${f}" expected a string, got ${typeof v}`);
      for (const t of tokenize(v)) counts.set(t, (counts.get(t) ?? 0) + 1);
    }
    this.remove(id);
    if (counts.size > 0) this.#add(id, counts);
  }

  /**
   * Removes `id` from the index (nothing happens when it is not indexed). O(its distinct terms).
   * @throws TypeError for an empty id.
   */
  remove(id: string): void {
    checkId(id);
    const d = this.#ids.get(id);
    if (d === undefined) return;
    const dterm = this.#dterm.data;
    const post = this.#post.data;
    const at = this.#dAt[d];
    const k = this.#dLen[d];
    for (let j = 0; j < k; j++) {
      const t = dterm[at + 2 * j];
      const e = dterm[at + 2 * j + 1];
      const base = this.#pAt[t];
      const last = this.#pLen[t] - 1;
      if (e !== last) {
        // Swap-remove: the last entry moves into the hole; its doc learns its new place.
        const src = base + 3 * last;
        const dst = base + 3 * e;
        post[dst] = post[src];
        post[dst + 1] = post[src + 1];
        post[dst + 2] = post[src + 2];
        dterm[this.#dAt[post[dst]] + 2 * post[dst + 2] + 1] = e;
      }
      this.#pLen[t] = last;
      if (last === 0) {
        this.#liveTerms--;
        if (this.#fresh.delete(t)) this.#dropTerm(t);
        else this.#stale++;
      }
    }
    this.#dterm.dead += 2 * k;
    this.#dLen[d] = 0;
    this.#idOf[d] = undefined;
    this.#freeDocs.push(d);
    this.#ids.delete(id);
  }

  /** Forgets an empty term that is in neither #sorted nor #fresh; its number and room are free. */
  #dropTerm(t: number): void {
    this.#termNo.delete(this.#termStr[t]);
    this.#termStr[t] = '';
    this.#post.dead += 3 * this.#pCap[t];
    this.#pCap[t] = 0;
    this.#freeTerms.push(t);
  }

  /** The number of term `s`, made live (a new term goes to #fresh, a stale one comes back). */
  #liveTerm(s: string): number {
    let t = this.#termNo.get(s);
    if (t !== undefined) {
      if (this.#pLen[t] === 0) {
        this.#stale--;
        this.#liveTerms++;
      }
      return t;
    }
    t = this.#freeTerms.pop() ?? this.#termStr.length;
    if (t >= this.#pAt.length) {
      this.#pAt = grown(this.#pAt, t + 1);
      this.#pLen = grown(this.#pLen, t + 1);
      this.#pCap = grown(this.#pCap, t + 1);
    }
    this.#termStr[t] = s;
    this.#pLen[t] = 0;
    this.#pCap[t] = 0;
    this.#termNo.set(s, t);
    this.#fresh.add(t);
    this.#liveTerms++;
    return t;
  }

  /** Room for one more posting of term t (moving its postings to a larger region when full). */
  #reserve(t: number): void {
    const cap = this.#pCap[t];
    if (this.#pLen[t] < cap) return;
    const n = Math.max(2, 2 * cap);
    const at = this.#post.alloc(3 * n, () => this.#compactPostings());
    const post = this.#post.data;
    post.copyWithin(at, this.#pAt[t], this.#pAt[t] + 3 * this.#pLen[t]);
    this.#post.dead += 3 * cap;
    this.#pAt[t] = at;
    this.#pCap[t] = n;
  }

  /** Copies every term's postings region, in term number order, into a fresh array. */
  #compactPostings(): void {
    const old = this.#post.data;
    const out = new Int32Array(Math.max(64, 2 * (this.#post.end - this.#post.dead)));
    let end = 0;
    for (let t = 0; t < this.#termStr.length; t++) {
      const cap = this.#pCap[t];
      if (cap === 0) continue;
      out.set(old.subarray(this.#pAt[t], this.#pAt[t] + 3 * this.#pLen[t]), end);
      this.#pAt[t] = end;
      end += 3 * cap;
    }
    this.#post.data = out;
    this.#post.end = end;
    this.#post.dead = 0;
  }

  /** Copies every doc's term list, in doc number order, into a fresh array. */
  #compactDocs(): void {
    const old = this.#dterm.data;
    const out = new Int32Array(Math.max(64, 2 * (this.#dterm.end - this.#dterm.dead)));
    let end = 0;
    for (let d = 0; d < this.#idOf.length; d++) {
      const n = 2 * this.#dLen[d];
      if (n === 0) continue;
      out.set(old.subarray(this.#dAt[d], this.#dAt[d] + n), end);
      this.#dAt[d] = end;
      end += n;
    }
    this.#dterm.data = out;
    this.#dterm.end = end;
    this.#dterm.dead = 0;
  }

  /** A doc number for `id` (a free one, else the next), with room in the per-doc arrays. */
  #newDoc(id: string): number {
    const d = this.#freeDocs.pop() ?? this.#idOf.length;
    if (d === this.#idOf.length) this.#idOf.push(id);
    else this.#idOf[d] = id;
    if (d >= this.#dAt.length) {
      this.#dAt = grown(this.#dAt, d + 1);
      this.#dLen = grown(this.#dLen, d + 1);
      this.#key0 = grown(this.#key0, d + 1);
      this.#key1 = grown(this.#key1, d + 1);
    }
    const u = (i: number): number => (i < id.length ? id.charCodeAt(i) : 0);
    this.#key0[d] = u(0) * 2 ** 32 + u(1) * 2 ** 16 + u(2);
    this.#key1[d] = u(3) * 2 ** 32 + u(4) * 2 ** 16 + u(5);
    this.#ids.set(id, d);
    return d;
  }

  #add(id: string, counts: Map<string, number>): void {
    const d = this.#newDoc(id);
    const k = counts.size;
    const at = this.#dterm.alloc(2 * k, () => this.#compactDocs());
    this.#dAt[d] = at;
    this.#dLen[d] = k;
    let j = 0;
    for (const [s, f] of counts) {
      const t = this.#liveTerm(s);
      this.#reserve(t);
      const e = this.#pLen[t]++;
      const post = this.#post.data;
      const o = this.#pAt[t] + 3 * e;
      post[o] = d;
      post[o + 1] = f;
      post[o + 2] = j;
      const dterm = this.#dterm.data;
      dterm[at + 2 * j] = t;
      dterm[at + 2 * j + 1] = e;
      j++;
    }
  }

  /** First index in #sorted whose term is ≥ `s`. */
  #lowerBound(s: string): number {
    const a = this.#sorted;
    const str = this.#termStr;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (str[a[mid]] < s) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Merges the fresh terms into #sorted and drops the stale ones: O(terms + fresh·log fresh). */
  #rebuildSorted(): void {
    const str = this.#termStr;
    const fresh = [...this.#fresh].sort((a, b) => (str[a] < str[b] ? -1 : str[a] > str[b] ? 1 : 0));
    const old = this.#sorted;
    const out: number[] = new Array(this.#liveTerms);
    let i = 0;
    let j = 0;
    for (let k = 0; k < out.length; k++) {
      for (; i < old.length && this.#pLen[old[i]] === 0; i++) this.#dropTerm(old[i]); // stale
      if (j >= fresh.length || (i < old.length && str[old[i]] < str[fresh[j]])) out[k] = old[i++];
      else out[k] = fresh[j++];
    }
    for (; i < old.length; i++) this.#dropTerm(old[i]); // only stale ones are left
    this.#sorted = out;
    this.#fresh = new Set();
    this.#stale = 0;
  }

  /**
   * The terms starting with `p`: #sorted[lo, hi) (stale ones empty) plus the fresh ones (`extra`).
   * Returned as a range, not a list of terms: a one-letter prefix spans thousands of terms.
   */
  #expand(p: string): Group {
    if (this.#fresh.size > FRESH_SCAN_MAX || this.#stale > FRESH_SCAN_MAX + (this.#sorted.length >>> 1))
      this.#rebuildSorted();
    const a = this.#sorted;
    const lo = this.#lowerBound(p);
    let hi = lo;
    let size = 0;
    for (; hi < a.length && this.#termStr[a[hi]].startsWith(p); hi++) size += this.#pLen[a[hi]];
    const extra: number[] = [];
    for (const t of this.#fresh) {
      if (!this.#termStr[t].startsWith(p)) continue;
      extra.push(t);
      size += this.#pLen[t];
    }
    return { term: p, t: -1, lo, hi, extra, size };
  }

  /** Scans group `g`'s postings with `scan(from, to)`: its fresh terms, then its #sorted range. */
  #eachRegion(group: Group, scan: (from: number, to: number) => void): void {
    for (const t of group.extra) scan(this.#pAt[t], this.#pAt[t] + 3 * this.#pLen[t]);
    for (let i = group.lo; i < group.hi; i++) {
      const t = this.#sorted[i];
      scan(this.#pAt[t], this.#pAt[t] + 3 * this.#pLen[t]);
    }
  }

  /**
   * Ids matching `query`, best first: more distinct query terms matched, then a higher total term
   * frequency, then id (UTF-16 order, as `Collection.scan`). Distinct exact terms count once; with
   * `prefix`, the last token is a prefix term (it counts separately even if it also occurs exactly)
   * and its frequency in an id sums over every term it matches. A query without tokens finds nothing.
   * @throws TypeError/RangeError for a non-string query or bad options.
   * @example ix.search('perceived entity') ; ix.search('ent', { prefix: true, mode: 'any', limit: 10 })
   */
  search(query: string, opts: SearchOptions = {}): string[] {
    if (typeof query !== 'string') throw new TypeError(`"query" expected a string, got ${typeof query}`);
    if (typeof opts !== 'object' || opts === null) throw new TypeError('"opts" expected an object');
    const mode = opts.mode ?? 'all';
    if (mode !== 'all' && mode !== 'any')
      throw new RangeError(`"opts.mode" expected 'all' or 'any', got ${JSON.stringify(mode)}`);
    const prefix = opts.prefix ?? false;
    if (typeof prefix !== 'boolean') throw new TypeError(`"opts.prefix" expected a boolean, got ${typeof prefix}`);
    const limit = integer('opts.limit', opts.limit ?? DEFAULT_SEARCH_LIMIT, 1, Number.MAX_SAFE_INTEGER);
    const all = mode === 'all';

    const tokens = tokenize(query);
    if (tokens.length === 0) return [];
    const last = prefix ? tokens.pop()! : undefined;
    const groups: Group[] = [];
    for (const s of new Set(tokens)) {
      const t = this.#termNo.get(s);
      if (t === undefined || this.#pLen[t] === 0) {
        if (all) return [];
        continue;
      }
      groups.push({ term: s, t, lo: 0, hi: 0, extra: [t], size: this.#pLen[t] });
    }
    if (last !== undefined) {
      const g = this.#expand(last);
      if (g.size > 0) groups.push(g);
      else if (all) return [];
    }
    if (groups.length === 0) return [];
    const post = this.#post.data;
    // One exact term: each id occurs once in its postings, so they are ranked as they stand (tf,
    // then id), without per-doc counters to fill and zero again.
    if (groups.length === 1 && groups[0].t >= 0) {
      const top = new Top(limit, this.#idOf, this.#key0, this.#key1);
      const t = groups[0].t;
      for (let i = this.#pAt[t], end = i + 3 * this.#pLen[t]; i < end; i += 3) top.offer(post[i], 1, post[i + 1]);
      return top.ids();
    }
    // 'all': the rarest term first, so later terms only advance ids that matched every earlier one.
    if (all) groups.sort((x, y) => x.size - y.size);

    const cap = this.#idOf.length;
    if (this.#matched.length < cap) {
      const n = Math.max(cap, this.#matched.length * 2);
      this.#matched = new Uint32Array(n);
      this.#seen = new Uint32Array(n);
      this.#tf = new Float64Array(n);
      this.#touched = new Int32Array(n);
    }
    const matched = this.#matched;
    const seen = this.#seen;
    const tf = this.#tf;
    const touched = this.#touched;
    const dterm = this.#dterm.data;
    let nTouched = 0;
    let alive = 0; // 'all': ids that matched every group so far
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      if (all && g > 0 && alive * PROBE_COST < group.size) {
        // Few ids left: look the term up in their own term lists instead of scanning its postings.
        let next = 0;
        for (let j = 0; j < nTouched; j++) {
          const d = touched[j];
          if (matched[d] !== g) continue;
          let hit = false;
          for (let at = this.#dAt[d], end = at + 2 * this.#dLen[d]; at < end; at += 2) {
            const t = dterm[at];
            if (group.t >= 0 ? t === group.t : this.#termStr[t].startsWith(group.term)) {
              tf[d] += post[this.#pAt[t] + 3 * dterm[at + 1] + 1];
              hit = true;
            }
          }
          if (hit) {
            matched[d]++;
            next++;
          }
        }
        alive = next;
      } else if (all) {
        alive = 0;
        this.#eachRegion(
          group,
          (from, to) => (alive += scanAll(post, from, to, g, matched, tf, touched, nTouched + alive)),
        );
        if (g === 0) nTouched = alive;
      } else {
        this.#eachRegion(
          group,
          (from, to) => (nTouched = scanAny(post, from, to, g + 1, matched, seen, tf, touched, nTouched)),
        );
      }
      if (all && alive === 0) break;
    }

    const need = all ? groups.length : 1;
    const top = new Top(limit, this.#idOf, this.#key0, this.#key1);
    for (let j = 0; j < nTouched; j++) {
      const d = touched[j];
      const m = matched[d];
      if (m >= need) top.offer(d, m, tf[d]);
      matched[d] = 0;
      seen[d] = 0;
      tf[d] = 0;
    }
    return top.ids();
  }

  /**
   * The whole index as canonical bytes (the same content gives the same bytes, whatever the order
   * of updates). The bytes hold plaintext terms and ids: seal them before storing.
   * @example const sealed = seal(ix.serialize());
   */
  serialize(): Uint8Array {
    const steps = this.#serializeSteps(1 << 20);
    for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return concatBytes(r.value);
  }

  /**
   * serialize() as consecutive parts of `partBytes` (the last one shorter), awaiting `pause()`
   * every few thousand ids so a large index does not hold the event loop for the whole encoding.
   * No large buffer is grown or copied, and each part can be sealed on its own. The index must not
   * change until the promise settles (the store serializes inside its commit queue, where no write
   * runs meanwhile).
   * @example const parts = await ix.serializeParts(256 * 1024, () => new Promise(setImmediate));
   */
  async serializeParts(partBytes: number, pause: () => Promise<void>): Promise<Uint8Array[]> {
    integer('partBytes', partBytes, 1024, 2 ** 30);
    const steps = this.#serializeSteps(partBytes);
    for (let r = steps.next(); ; r = steps.next()) {
      if (r.done === true) return r.value;
      await pause();
    }
  }

  /** The encoding of serialize(), in parts of `partBytes`, yielding between bounded steps. */
  *#serializeSteps(partBytes: number): Generator<void, Uint8Array[]> {
    const terms = yield* sortCodePointsSteps(this.#termStr.filter((_, t) => this.#pLen[t] > 0));
    // Term number → its place in `terms`.
    const rank = new Int32Array(this.#termStr.length);
    for (let i = 0; i < terms.length; i++) {
      if (i % 4096 === 4095) yield;
      rank[this.#termNo.get(terms[i])!] = i;
    }
    yield;
    const out = new PartWriter(partBytes);
    const w = out.w;
    w.bytes(Uint8Array.from(MAGIC));
    w.byte(FORMAT_VERSION);
    w.varint(this.#fields.length);
    for (const f of this.#fields) w.str(f);
    w.varint(terms.length);
    let prev: Uint8Array = new Uint8Array(0);
    let written = 0;
    for (const s of terms) {
      if (++written % 1024 === 0) yield;
      out.cut();
      const b = utf8(s);
      let shared = 0;
      const n = Math.min(prev.length, b.length);
      while (shared < n && prev[shared] === b[shared]) shared++;
      w.varint(shared);
      w.varint(b.length - shared);
      w.bytes(b.subarray(shared));
      prev = b;
    }
    yield;
    const ids = yield* sortCodePointsSteps(this.#idOf.filter((id) => id !== undefined));
    w.varint(ids.length);
    // Per id, (term rank, frequency) pairs in term order, packed as rank·2^21 + f into one reused
    // Float64Array so sorting is numeric and allocates nothing (a frequency this large never occurs
    // in practice; it is written through the slow path all the same).
    let packed = new Float64Array(64);
    const SHIFT = 2 ** 21;
    const post = this.#post.data;
    const dterm = this.#dterm.data;
    const freq = (at: number): number => post[this.#pAt[dterm[at]] + 3 * dterm[at + 1] + 1];
    let step = 0;
    for (const id of ids) {
      if (++step % 256 === 0) yield;
      const d = this.#ids.get(id)!;
      out.cut();
      w.str(id);
      const at = this.#dAt[d];
      const k = this.#dLen[d];
      if (packed.length < k) packed = new Float64Array(2 * k);
      let big = false;
      for (let j = 0; j < k; j++) {
        const f = freq(at + 2 * j);
        if (f >= SHIFT) big = true;
        packed[j] = rank[dterm[at + 2 * j]] * SHIFT + Math.min(f, SHIFT - 1);
      }
      const view = packed.subarray(0, k).sort();
      w.varint(k);
      let prevRank = 0;
      for (let j = 0; j < k; j++) {
        const r = Math.floor(view[j] / SHIFT);
        let f = view[j] - r * SHIFT;
        if (big && f === SHIFT - 1) {
          for (let x = 0; x < k; x++) if (rank[dterm[at + 2 * x]] === r) f = freq(at + 2 * x);
        }
        w.varint(r - prevRank);
        w.varint(f);
        prevRank = r;
      }
    }
    return out.finish();
  }

  /**
   * Rebuilds an index from `serialize()` bytes (which it does not keep or alter).
   * @throws PqdbError CORRUPTION for bytes that are not a canonical serialization (checksum,
   * structure, order, UTF-8); FORMAT_VERSION for an unknown version; TypeError/RangeError for bad
   * options, RangeError when `options.text` differs from the fields the index was built with.
   * @example const ix = LexicalIndex.deserialize(open(sealed), { text: ['lemma', 'gloss'] });
   */
  static deserialize(bytes: Uint8Array, options: LexicalOptions): LexicalIndex {
    const steps = LexicalIndex.#deserializeSteps(bytes, options);
    for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return r.value;
  }

  /** deserialize(), awaiting `pause()` between bounded steps (a few hundred ids, a megabyte of copying). */
  static async deserializeAsync(
    bytes: Uint8Array,
    options: LexicalOptions,
    pause: () => Promise<void>,
  ): Promise<LexicalIndex> {
    const steps = LexicalIndex.#deserializeSteps(bytes, options);
    for (let r = steps.next(); ; r = steps.next()) {
      if (r.done === true) return r.value;
      await pause();
    }
  }

  static *#deserializeSteps(bytes: Uint8Array, options: LexicalOptions): Generator<void, LexicalIndex> {
    checkBytes('bytes', bytes);
    const ix = new LexicalIndex(options);
    const corrupt = (why: string) => new PqdbError('CORRUPTION', `lexical index does not decode: ${why}`);
    if (bytes.length < MAGIC.length + 1 + 4) throw corrupt('truncated');
    const end = bytes.length - 4;
    const stored = (bytes[end] | (bytes[end + 1] << 8) | (bytes[end + 2] << 16) | (bytes[end + 3] << 24)) >>> 0;
    let crc = 0;
    for (let at = 0; at < end; at += 1 << 20) {
      crc = crc32c(bytes.subarray(at, Math.min(end, at + (1 << 20))), crc);
      if (end > 1 << 20) yield;
    }
    if (crc !== stored) throw corrupt('checksum mismatch');
    for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) throw corrupt('bad magic');
    if (bytes[4] !== FORMAT_VERSION)
      throw new PqdbError('FORMAT_VERSION', `lexical index format ${bytes[4]} is not supported`);
    let p = 5;
    const varint = (): number => {
      // One byte (a value below 128) is the common case: read it without the general decoder.
      if (p < end && bytes[p] < 0x80) return bytes[p++];
      const [v, next] = readVarint(bytes, p, end, corrupt);
      p = next;
      return v;
    };
    const raw = (n: number): Uint8Array => {
      if (n > end - p) throw corrupt('truncated');
      return bytes.subarray(p, (p += n));
    };
    const text = (b: Uint8Array, what: string): string => {
      try {
        return dec.decode(b);
      } catch {
        throw corrupt(`${what} is not UTF-8`);
      }
    };
    /** Strictly increasing byte strings (the canonical order of every list). */
    const increasing = (a: Uint8Array, b: Uint8Array): boolean => {
      const n = Math.min(a.length, b.length);
      for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i];
      return a.length < b.length;
    };
    // A count can be no larger than the bytes left (every element takes at least `min` bytes).
    const count = (min: number): number => {
      const n = varint();
      if (n * min > end - p) throw corrupt('count exceeds the data');
      return n;
    };

    const fields: string[] = [];
    let prev: Uint8Array = new Uint8Array(0);
    for (let i = count(2); i > 0; i--) {
      const b = raw(varint());
      if (b.length === 0 || (fields.length > 0 && !increasing(prev, b))) throw corrupt('fields out of order');
      fields.push(text(b, 'a field name'));
      prev = b;
    }
    if (fields.length !== ix.#fields.length || fields.some((f, i) => f !== ix.#fields[i])) {
      throw new RangeError(
        `"options.text" expected the indexed fields ${JSON.stringify(fields)}, got ${JSON.stringify(ix.#fields)}`,
      );
    }
    // Term number = place in the serialized (code point) order.
    const nTerms = count(2);
    // `buf` holds the previous term: a term keeps its `shared` first bytes and writes its suffix
    // after them. A term of at most 64 code points takes at most 256 bytes.
    const buf = new Uint8Array(4 * MAX_TOKEN_CODE_POINTS);
    let prevLen = 0;
    for (let t = 0; t < nTerms; t++) {
      if (t % 1024 === 1023) yield;
      const shared = varint();
      const suffix = raw(varint());
      if (shared > prevLen || suffix.length === 0) throw corrupt('bad term');
      // Canonical front coding: `shared` is the whole common prefix and the order is strict.
      if (shared < prevLen && suffix[0] <= buf[shared]) throw corrupt('terms out of order');
      const n = shared + suffix.length;
      if (n > buf.length) throw corrupt('term too long');
      buf.set(suffix, shared);
      const s = text(buf.subarray(0, n), 'a term');
      if (
        s.length > MAX_TOKEN_CODE_POINTS &&
        (s.length > 2 * MAX_TOKEN_CODE_POINTS || Array.from(s).length > MAX_TOKEN_CODE_POINTS)
      )
        throw corrupt('term too long');
      ix.#termStr.push(s);
      ix.#termNo.set(s, t);
      prevLen = n;
    }
    // Docs: their (term, frequency) pairs go to #dterm first, counting postings per term; then each
    // term gets a region of exactly its size and the pairs become (term, entry number).
    const nDocs = count(4);
    ix.#dAt = new Int32Array(nDocs);
    ix.#dLen = new Int32Array(nDocs);
    ix.#key0 = new Float64Array(nDocs);
    ix.#key1 = new Float64Array(nDocs);
    const counts = new Int32Array(nTerms);
    const dt = ix.#dterm;
    // Room for every pair at once (each takes at least two bytes): doubling as it fills would copy
    // tens of megabytes in single steps, and a large zeroed allocation costs nothing until touched.
    dt.data = new Int32Array(end - p + 2);
    prev = new Uint8Array(0);
    yield;
    for (let d = 0; d < nDocs; d++) {
      if (d % 256 === 255) yield;
      const idBytes = raw(varint());
      if (idBytes.length === 0 || (d > 0 && !increasing(prev, idBytes))) throw corrupt('ids out of order');
      prev = idBytes;
      const id = text(idBytes, 'an id');
      const k = count(2);
      if (k === 0) throw corrupt(`id "${id}" has no terms`);
      ix.#newDoc(id);
      const at = dt.alloc(2 * k, () => undefined);
      ix.#dAt[d] = at;
      ix.#dLen[d] = k;
      const pairs = dt.data;
      let t = 0;
      for (let j = 0; j < k; j++) {
        const delta = varint();
        if (j > 0 && delta === 0) throw corrupt('term indices out of order');
        t += delta;
        const f = varint();
        if (t >= nTerms || f === 0) throw corrupt('bad posting');
        if (f > 0x7fffffff) throw corrupt('term frequency out of range');
        pairs[at + 2 * j] = t;
        pairs[at + 2 * j + 1] = f;
        counts[t]++;
      }
    }
    if (p !== end) throw corrupt('trailing bytes');
    // The room taken for the pairs was an upper bound (about twice what WordNet needs): keep what
    // is used, copied a megabyte per step.
    if (dt.data.length > dt.end + (dt.end >>> 3) + 64) {
      const exact = new Int32Array(dt.end + (dt.end >>> 3) + 64);
      for (let at = 0; at < dt.end; at += 1 << 18) {
        exact.set(dt.data.subarray(at, Math.min(dt.end, at + (1 << 18))), at);
        yield;
      }
      dt.data = exact;
    }
    ix.#pAt = new Int32Array(nTerms);
    ix.#pLen = new Int32Array(nTerms);
    ix.#pCap = counts;
    let total = 0;
    for (let t = 0; t < nTerms; t++) {
      if (counts[t] === 0) throw corrupt('a term without postings');
      ix.#pAt[t] = total;
      total += 3 * counts[t];
    }
    const post = new Int32Array(total);
    // Touched in order, a megabyte per step: the first writes of the scattered fill below would
    // otherwise fault in every page of the array within one step (15–20 ms per 4 MB measured).
    for (let at = 0; at < total; at += 1 << 18) {
      post.fill(0, at, Math.min(total, at + (1 << 18)));
      yield;
    }
    ix.#post.data = post;
    ix.#post.end = total;
    const pairs = dt.data;
    for (let d = 0; d < nDocs; d++) {
      if (d % 1024 === 1023) yield;
      const at = ix.#dAt[d];
      for (let j = 0, k = ix.#dLen[d]; j < k; j++) {
        const t = pairs[at + 2 * j];
        const e = ix.#pLen[t]++;
        const o = ix.#pAt[t] + 3 * e;
        post[o] = d;
        post[o + 1] = pairs[at + 2 * j + 1];
        post[o + 2] = j;
        pairs[at + 2 * j + 1] = e;
      }
    }
    ix.#liveTerms = nTerms;
    yield;
    // Terms come in code point order, which is also the UTF-16 order of #sorted unless two of them
    // differ first at an astral character: then they wait in #fresh for the first prefix search.
    let ordered = true;
    for (let t = 1; t < nTerms && ordered; t++) {
      if (t % 8192 === 0) yield;
      if (!(ix.#termStr[t - 1] < ix.#termStr[t])) ordered = false;
    }
    if (ordered) ix.#sorted = Array.from({ length: nTerms }, (_, t) => t);
    else for (let t = 0; t < nTerms; t++) ix.#fresh.add(t);
    return ix;
  }
}
