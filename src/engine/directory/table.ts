// One collection's table of the key directory (DESIGN §6): id → the location of the record's live
// version.
//
// Memory: no object per record. The table is typed-array columns (one row per live record, ~35
// bytes) with the ids' UTF-8 bytes back to back in one byte arena, and an open-addressing hash
// table of row numbers over them (FNV-1a of the id's bytes, linear probing). Governance states are
// interned: a row holds the number of its state. A `Location` object is made only when one is asked
// for. A table of a base kept in partitions (PartSource) loads a partition on first use.

import { utf8Length } from '../../_utf8';
import { emptyRows, fnv1a, partOf, type Interned, type Location, type Rows } from './rows';

const INITIAL_ROWS = 64;
const EMPTY = 0;
const TOMBSTONE = -1;
const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** A table's share of the partitions of a lazily loaded base (see PartSource). */
interface TableParts {
  bits: number;
  /** Per partition, 1 once loaded (shared by the directory's tables). */
  loaded: Uint8Array;
  /** Loads partition p into every table (KeyDirectory). */
  load(p: number): void;
  loadAll(): void;
  rows: readonly number[];
  bytes: readonly number[];
  /** Rows and sealed bytes of the partitions not loaded yet. */
  unloadedRows: number;
  unloadedBytes: number;
  /** Unloaded partitions that rows were written to or removed from since (loaded before a count). */
  touched: Set<number>;
  /** Per unloaded partition, ids removed since (their snapshot rows are skipped when it loads). */
  removed: Map<number, Set<string>>;
}

/** One collection's live records: typed columns, an id arena and a hash index over them. */
export class DirectoryTable implements Iterable<[string, Location]> {
  readonly #interned: Interned;
  #size = 0;
  /** Sum of the live records' sealed lengths. */
  #bytes = 0;
  /** Rows handed out so far (free rows below it are listed in #free). */
  #rows = 0;
  #free: number[] = [];
  #idAt: Uint32Array = new Uint32Array(INITIAL_ROWS);
  /** UTF-8 length of the row's id; 0 for a free row (ids are never empty). */
  #idLen: Uint16Array = new Uint16Array(INITIAL_ROWS);
  #page: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #offset: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #length: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #leaf: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #generation: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #sequence: Float64Array = new Float64Array(INITIAL_ROWS);
  #gov: Uint32Array = new Uint32Array(INITIAL_ROWS);
  #suite: Uint8Array = new Uint8Array(INITIAL_ROWS);
  #arena: Uint8Array = new Uint8Array(INITIAL_ROWS * 16);
  #arenaEnd = 0;
  #arenaDead = 0;
  /** Row + 1, EMPTY or TOMBSTONE; its length is a power of two. */
  #slots = new Int32Array(INITIAL_ROWS * 2);
  /** Slots that are not EMPTY (live and tombstones). */
  #usedSlots = 0;
  /** The key being looked up, as UTF-8. */
  #key = new Uint8Array(256);
  #keyLen = 0;
  /** FNV-1a of the key buffer's id once computed (probing, inserting and partitioning share it), else -1. */
  #keyHash = -1;
  /** The partitions of a lazily loaded base, while any is not loaded. */
  #parts?: TableParts;

  constructor(interned: Interned) {
    this.#interned = interned;
  }

  /** Number of live records (loads the partitions written to since the open, if any). */
  get size(): number {
    return this.#settle() ? this.#size + this.#parts!.unloadedRows : this.#size;
  }

  get(id: string): Location | undefined {
    const row = this.#find(id);
    return row < 0 ? undefined : this.#location(row);
  }

  has(id: string): boolean {
    return this.#find(id) >= 0;
  }

  set(id: string, loc: Location): void {
    this.#setKey(id);
    const slot = this.#probe();
    if (slot < 0) this.#touch(false);
    const row = slot >= 0 ? this.#slots[slot] - 1 : this.#insertKey();
    this.#bytes += loc.length - (slot >= 0 ? this.#length[row] : 0);
    this.#page[row] = loc.pageId;
    this.#offset[row] = loc.offset;
    this.#length[row] = loc.length;
    this.#leaf[row] = loc.leafIndex;
    this.#generation[row] = loc.generation;
    this.#sequence[row] = loc.sequence;
    this.#suite[row] = loc.suite;
    this.#gov[row] = this.#interned.of(loc.governance);
  }

  /** Removes `id`: true when it was live (or may have been, in a partition not loaded yet). */
  delete(id: string): boolean {
    this.#setKey(id);
    return this.#deleteKey();
  }

  /** delete() of the key buffer's id. */
  #deleteKey(): boolean {
    const slot = this.#size === 0 ? -1 : this.#probe();
    const lazy = this.#touch(true);
    if (slot < 0) return lazy;
    const row = this.#slots[slot] - 1;
    this.#slots[slot] = TOMBSTONE;
    this.#bytes -= this.#length[row];
    this.#arenaDead += this.#idLen[row];
    this.#idLen[row] = 0;
    this.#free.push(row);
    this.#size--;
    return true;
  }

  /** The live records as [id, location] (made as they are visited; edits meanwhile are tolerated). */
  *[Symbol.iterator](): IterableIterator<[string, Location]> {
    this.#parts?.loadAll();
    for (let row = 0; row < this.#rows; row++) if (this.#idLen[row] !== 0) yield [this.#id(row), this.#location(row)];
  }

  /** The live records' locations. */
  *values(): IterableIterator<Location> {
    this.#parts?.loadAll();
    for (let row = 0; row < this.#rows; row++) if (this.#idLen[row] !== 0) yield this.#location(row);
  }

  /** The live records' ids, in no particular order. */
  keys(): string[] {
    this.#parts?.loadAll();
    const out: string[] = [];
    for (let row = 0; row < this.#rows; row++) if (this.#idLen[row] !== 0) out.push(this.#id(row));
    return out;
  }

  /** Sum of the live records' sealed lengths. */
  recordBytes(): number {
    return this.#settle() ? this.#bytes + this.#parts!.unloadedBytes : this.#bytes;
  }

  /**
   * recordBytes without loading anything: a record written since the open to an unloaded
   * partition counts twice (its old version too), so live bytes may be overstated.
   */
  recordBytesEstimate(): number {
    return this.#bytes + (this.#parts?.unloadedBytes ?? 0);
  }

  /** Adds each live record's length to its page's entry of `out`. */
  addLiveBytes(out: Map<number, number>): void {
    this.#parts?.loadAll();
    for (let row = 0; row < this.#rows; row++)
      if (this.#idLen[row] !== 0) out.set(this.#page[row], (out.get(this.#page[row]) ?? 0) + this.#length[row]);
  }

  /** Adds the live records' key generations and suites to the sets; returns how many there are. */
  addHeld(generations: Set<number>, suites: Set<number>): number {
    this.#parts?.loadAll();
    let n = 0;
    for (let row = 0, g = -1, s = -1; row < this.#rows; row++) {
      if (this.#idLen[row] === 0) continue;
      n++;
      if (this.#generation[row] !== g) generations.add((g = this.#generation[row]));
      if (this.#suite[row] !== s) suites.add((s = this.#suite[row]));
    }
    return n;
  }

  /** Live record counts per suite id. */
  suiteCounts(): Record<number, number> {
    this.#parts?.loadAll();
    const out: Record<number, number> = {};
    for (let row = 0; row < this.#rows; row++)
      if (this.#idLen[row] !== 0) out[this.#suite[row]] = (out[this.#suite[row]] ?? 0) + 1;
    return out;
  }

  /** True when a live record is sealed with `suite`. */
  usesSuite(suite: number): boolean {
    this.#parts?.loadAll();
    for (let row = 0; row < this.#rows; row++) if (this.#idLen[row] !== 0 && this.#suite[row] === suite) return true;
    return false;
  }

  /**
   * The rows of `ids` (every live record when omitted) as columns; an id of `ids` with no live
   * record gets a removal row (its id with every other column 0 and `removed` set). `govIndex` maps
   * an interned state number to its index in the snapshot's list.
   */
  async rows(
    govIndex: (interned: number) => number,
    ids?: Iterable<string>,
    pause: () => Promise<void> = async () => undefined,
  ): Promise<Rows & { removed: Uint8Array }> {
    const removedIds: Uint8Array[] = [];
    const order: number[] = []; // >= 0: a live row; < 0: -(removal index + 1)
    if (ids === undefined) {
      this.#parts?.loadAll();
      for (let row = 0; row < this.#rows; row++) if (this.#idLen[row] !== 0) order.push(row);
    } else
      for (const id of ids) {
        const row = this.#find(id);
        order.push(row >= 0 ? row : -(removedIds.push(encoder.encode(id)) - 1) - 1);
      }
    const n = order.length;
    let idBytes = 0;
    for (const o of order) idBytes += o >= 0 ? this.#idLen[o] : removedIds[-o - 1].length;
    const out = emptyRows(n, idBytes);
    const removed = new Uint8Array(n);
    let at = 0;
    for (let i = 0; i < n; i++) {
      if ((i & 1023) === 1023) await pause(); // in steps: reads get in
      // Read after any pause: a get meanwhile may load a partition and compact the arena.
      const arena = this.#arena;
      const o = order[i];
      if (o < 0) {
        const id = removedIds[-o - 1];
        out.ids.set(id, at);
        out.idLength[i] = id.length;
        at += id.length;
        removed[i] = 1;
        continue;
      }
      const len = this.#idLen[o];
      for (let k = 0, from = this.#idAt[o]; k < len; k++) out.ids[at + k] = arena[from + k];
      at += len;
      out.idLength[i] = len;
      out.page[i] = this.#page[o];
      out.offset[i] = this.#offset[o];
      out.length[i] = this.#length[o];
      out.leaf[i] = this.#leaf[o];
      out.generation[i] = this.#generation[o];
      out.sequence[i] = this.#sequence[o];
      out.governance[i] = govIndex(this.#gov[o]);
      out.suite[i] = this.#suite[o];
    }
    return { ...out, removed };
  }

  /**
   * Applies snapshot rows: each row replaces its id's record, or with `removed[i]` set removes it.
   * `governance` is the snapshot's list of states.
   */
  applyRows(r: Rows, governance: readonly string[], removed?: Uint8Array, adopt = false): void {
    const gov = governance.map((s) => this.#interned.of(s));
    // Into an empty table (a base, or a first run over a base in partitions): in one pass.
    const clean = this.#parts === undefined || this.#parts.removed.size === 0;
    if (this.#rows === 0 && clean && (removed === undefined || removed.every((x) => x === 0)))
      return this.#load(r, gov, adopt);
    this.#eachRow(r, (i) => {
      if (removed?.[i] === 1) {
        this.#deleteKey();
        return;
      }
      const slot = this.#probe();
      if (slot < 0) this.#touch(false);
      const row = slot >= 0 ? this.#slots[slot] - 1 : this.#insertKey();
      this.#bytes += r.length[i] - (slot >= 0 ? this.#length[row] : 0);
      this.#putRow(row, r, i, gov);
    });
  }

  /** Room for the rows of `r`, then `visit(i, at, len)` with row i's id (at `at`, `len` bytes) in the key buffer. */
  #eachRow(r: Rows, visit: (i: number, at: number, len: number) => void): void {
    this.#reserve(this.#size + r.n);
    if (this.#rows + r.n > this.#idLen.length) this.#growRows(this.#rows + r.n);
    if (this.#arenaEnd + r.ids.length > this.#arena.length) this.#growArena(r.ids.length);
    for (let i = 0, at = 0; i < r.n; i++) {
      const len = r.idLength[i];
      this.#setKeyBytes(r.ids, at, len);
      visit(i, at, len);
      at += len;
    }
  }

  /** Row `row` takes snapshot row `i` of `r` (`gov`: the snapshot's states as interned numbers). */
  #putRow(row: number, r: Rows, i: number, gov: readonly number[]): void {
    this.#page[row] = r.page[i];
    this.#offset[row] = r.offset[i];
    this.#length[row] = r.length[i];
    this.#leaf[row] = r.leaf[i];
    this.#generation[row] = r.generation[i];
    this.#sequence[row] = r.sequence[i];
    this.#gov[row] = gov[r.governance[i]];
    this.#suite[row] = r.suite[i];
  }

  /**
   * Takes the partitions of a lazily loaded base (before any row of it is here): `rows` and `bytes`
   * per partition, `loaded` and the loaders shared with the directory's other tables.
   */
  lazy(parts: Omit<TableParts, 'unloadedRows' | 'unloadedBytes' | 'touched' | 'removed'>): void {
    let rows = 0;
    let bytes = 0;
    for (let p = 0; p < parts.rows.length; p++)
      if (parts.loaded[p] === 0) ((rows += parts.rows[p]), (bytes += parts.bytes[p]));
    this.#parts = { ...parts, unloadedRows: rows, unloadedBytes: bytes, touched: new Set(), removed: new Map() };
  }

  /**
   * Adds the rows of base partition `p` (authenticated, decoded, checked: checkPart) that nothing
   * written since replaced or removed.
   */
  mergePart(p: number, r: Rows, governance: readonly string[]): void {
    const parts = this.#parts;
    if (parts === undefined) throw new RangeError('no partition is waiting to load');
    const gov = governance.map((s) => this.#interned.of(s));
    const removed = parts.removed.get(p);
    this.#eachRow(r, (i, at, len) => {
      if (this.#probe() >= 0) return; // written since the snapshot
      if (removed !== undefined && removed.has(decoder.decode(r.ids.subarray(at, at + len)))) return;
      const row = this.#insertKey();
      this.#bytes += r.length[i];
      this.#putRow(row, r, i, gov);
    });
  }

  /** Partition `p` was loaded into every table (after mergePart, where it had rows of this one); `last`: it was the last. */
  partLoaded(p: number, last: boolean): void {
    const parts = this.#parts;
    if (parts === undefined) return;
    parts.unloadedRows -= parts.rows[p];
    parts.unloadedBytes -= parts.bytes[p];
    parts.touched.delete(p);
    parts.removed.delete(p);
    if (last) this.#parts = undefined;
  }

  /**
   * A write to the key buffer's id, which is not in the table: when its partition is not loaded,
   * notes it (`remove`: as removed). Returns true when the partition is not loaded.
   */
  #touch(remove: boolean): boolean {
    const parts = this.#parts;
    if (parts === undefined) return false;
    const p = partOf(this.#hash(), parts.bits);
    if (parts.loaded[p] === 1) return false;
    parts.touched.add(p);
    let ids = parts.removed.get(p);
    if (remove) {
      if (ids === undefined) parts.removed.set(p, (ids = new Set()));
      ids.add(decoder.decode(this.#key.subarray(0, this.#keyLen)));
    } else ids?.delete(decoder.decode(this.#key.subarray(0, this.#keyLen)));
    return true;
  }

  /** Loads the unloaded partitions written to since; true when some are still not loaded. */
  #settle(): boolean {
    const parts = this.#parts;
    if (parts === undefined) return false;
    for (const p of [...parts.touched]) parts.load(p);
    return this.#parts !== undefined;
  }

  /** applyRows into an empty table: columns copied whole, the index built in one pass. */
  #load(r: Rows, gov: readonly number[], adopt: boolean): void {
    // With `adopt` the columns are taken as they are (views into the opened snapshot, which the
    // table then owns: its caller must not wipe or reuse it; they are copied when the table grows);
    // else they are copied.
    const n = r.n;
    if (n === 0) return;
    const own = <T extends { slice(): T }>(a: T): T => (adopt ? a : a.slice());
    this.#idLen = own(r.idLength);
    this.#page = own(r.page);
    this.#offset = own(r.offset);
    this.#length = own(r.length);
    this.#leaf = own(r.leaf);
    this.#generation = own(r.generation);
    this.#sequence = own(r.sequence);
    this.#suite = own(r.suite);
    const same = gov.every((g, i) => g === i);
    this.#gov = same ? own(r.governance) : Uint32Array.from(r.governance, (g) => gov[g]);
    this.#idAt = new Uint32Array(n);
    this.#arena = own(r.ids);
    this.#arenaEnd = r.ids.length;
    this.#arenaDead = 0;
    this.#free = [];
    let slots = INITIAL_ROWS * 2;
    while (n * 10 >= slots * 5) slots *= 2;
    // One pass, with the columns in locals (this loop is most of an open's CPU after the AEAD).
    const table = (this.#slots = new Int32Array(slots));
    const mask = slots - 1;
    const idAt = this.#idAt;
    const idLen = this.#idLen;
    const length = this.#length;
    const arena = this.#arena;
    const parts = this.#parts;
    let at = 0;
    let bytes = 0;
    for (let row = 0; row < n; row++) {
      idAt[row] = at;
      const len = idLen[row];
      let h = 0x811c9dc5;
      for (let i = at; i < at + len; i++) h = Math.imul(h ^ arena[i], 0x01000193);
      let s = (h >>> 0) & mask;
      while (table[s] !== EMPTY) s = (s + 1) & mask;
      table[s] = row + 1;
      at += len;
      bytes += length[row];
      const p = parts === undefined ? 0 : partOf(h >>> 0, parts.bits);
      if (parts !== undefined && parts.loaded[p] === 0) parts.touched.add(p); // as #touch (nothing was removed)
    }
    this.#usedSlots = n;
    this.#rows = n;
    this.#size = n;
    this.#bytes = bytes;
  }

  #location(row: number): Location {
    return {
      leafIndex: this.#leaf[row],
      generation: this.#generation[row],
      pageId: this.#page[row],
      offset: this.#offset[row],
      length: this.#length[row],
      sequence: this.#sequence[row],
      suite: this.#suite[row],
      governance: this.#interned.strings[this.#gov[row]],
    };
  }

  #id(row: number): string {
    const at = this.#idAt[row];
    const len = this.#idLen[row];
    const a = this.#arena;
    let ascii = true;
    for (let i = at; i < at + len; i++) if (a[i] > 0x7f) ascii = false;
    if (!ascii) return decoder.decode(a.subarray(at, at + len));
    return len <= 64
      ? String.fromCharCode.apply(null, a.subarray(at, at + len) as unknown as number[])
      : decoder.decode(a.subarray(at, at + len));
  }

  /** Puts the UTF-8 bytes of `id` in the key buffer. */
  #setKey(id: string): void {
    let ascii = id.length <= this.#key.length;
    if (ascii)
      for (let i = 0; i < id.length; i++) {
        const c = id.charCodeAt(i);
        if (c > 0x7f) {
          ascii = false;
          break;
        }
        this.#key[i] = c;
      }
    this.#keyHash = -1;
    if (ascii) {
      this.#keyLen = id.length;
      return;
    }
    const need = utf8Length(id);
    if (need > this.#key.length) this.#key = new Uint8Array(need * 2);
    this.#keyLen = encoder.encodeInto(id, this.#key).written;
  }

  #setKeyBytes(src: Uint8Array, at: number, len: number): void {
    if (len > this.#key.length) this.#key = new Uint8Array(len * 2);
    this.#key.set(src.subarray(at, at + len));
    this.#keyLen = len;
    this.#keyHash = -1;
  }

  #hash(): number {
    if (this.#keyHash < 0) this.#keyHash = fnv1a(this.#key, 0, this.#keyLen);
    return this.#keyHash;
  }

  #find(id: string): number {
    this.#setKey(id);
    let slot = this.#size === 0 ? -1 : this.#probe();
    const parts = this.#parts;
    if (slot < 0 && parts !== undefined) {
      const p = partOf(this.#hash(), parts.bits);
      if (parts.loaded[p] === 1 || parts.removed.get(p)?.has(id)) return -1;
      parts.load(p);
      this.#setKey(id); // loading used the key buffer
      slot = this.#size === 0 ? -1 : this.#probe();
    }
    return slot < 0 ? -1 : this.#slots[slot] - 1;
  }

  /** The slot of the key buffer's id, or -1. */
  #probe(): number {
    const slots = this.#slots;
    const mask = slots.length - 1;
    const len = this.#keyLen;
    const k = this.#key;
    const a = this.#arena;
    for (let s = this.#hash() & mask; ; s = (s + 1) & mask) {
      const v = slots[s];
      if (v === EMPTY) return -1;
      if (v === TOMBSTONE) continue;
      const row = v - 1;
      if (this.#idLen[row] !== len) continue;
      const at = this.#idAt[row];
      let same = true;
      for (let i = 0; i < len; i++)
        if (a[at + i] !== k[i]) {
          same = false;
          break;
        }
      if (same) return s;
    }
  }

  /** A new row for the key buffer's id (not present), indexed. */
  #insertKey(): number {
    this.#reserve(this.#size + 1);
    const len = this.#keyLen;
    if (this.#arenaEnd + len > this.#arena.length) this.#growArena(len);
    const row = this.#free.length > 0 ? this.#free.pop()! : this.#rows++;
    if (row >= this.#idLen.length) this.#growRows(row + 1);
    this.#arena.set(this.#key.subarray(0, len), this.#arenaEnd);
    this.#idAt[row] = this.#arenaEnd;
    this.#idLen[row] = len;
    this.#arenaEnd += len;
    this.#size++;
    this.#index(row, this.#hash());
    return row;
  }

  #index(row: number, hash: number): void {
    const slots = this.#slots;
    const mask = slots.length - 1;
    let s = hash & mask;
    while (slots[s] > 0) s = (s + 1) & mask;
    if (slots[s] === EMPTY) this.#usedSlots++;
    slots[s] = row + 1;
  }

  /** Room in the hash index for `n` live records (rebuilt at 2× when live + tombstones pass 70%). */
  #reserve(n: number): void {
    const extra = n - this.#size;
    if ((this.#usedSlots + extra) * 10 < this.#slots.length * 7) return;
    let cap = this.#slots.length;
    while (n * 10 >= cap * 5) cap *= 2;
    this.#slots = new Int32Array(cap);
    this.#usedSlots = 0;
    for (let row = 0; row < this.#rows; row++) {
      const len = this.#idLen[row];
      if (len === 0) continue;
      this.#index(row, fnv1a(this.#arena, this.#idAt[row], len)); // the key buffer is left as it is
    }
  }

  #growRows(min: number): void {
    const n = Math.max(min, this.#idLen.length * 2);
    const grow = <T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(n);
      b.set(a);
      return b;
    };
    this.#idAt = grow(this.#idAt);
    this.#idLen = grow(this.#idLen);
    this.#page = grow(this.#page);
    this.#offset = grow(this.#offset);
    this.#length = grow(this.#length);
    this.#leaf = grow(this.#leaf);
    this.#generation = grow(this.#generation);
    this.#sequence = grow(this.#sequence);
    this.#gov = grow(this.#gov);
    this.#suite = grow(this.#suite);
  }

  /** Room for `need` more id bytes: the arena is compacted when half of it is dead, else doubled. */
  #growArena(need: number): void {
    if (this.#arenaDead * 2 <= this.#arenaEnd) {
      const next = new Uint8Array(Math.max(this.#arena.length * 2, (this.#arenaEnd + need) * 2));
      next.set(this.#arena.subarray(0, this.#arenaEnd));
      this.#arena = next;
      return;
    }
    const live = this.#arenaEnd - this.#arenaDead;
    const size = Math.max(this.#arena.length * (this.#arenaDead * 2 > this.#arenaEnd ? 1 : 2), (live + need) * 2);
    const next = new Uint8Array(size);
    let at = 0;
    for (let row = 0; row < this.#rows; row++) {
      const len = this.#idLen[row];
      if (len === 0) continue;
      next.set(this.#arena.subarray(this.#idAt[row], this.#idAt[row] + len), at);
      this.#idAt[row] = at;
      at += len;
    }
    this.#arena = next;
    this.#arenaEnd = at;
    this.#arenaDead = 0;
  }
}
