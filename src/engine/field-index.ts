// A secondary index over one or more fields of a collection (docs/api.md, "Secondary indexes"):
// each record whose indexed fields are all present has one key, the tuple of those values, and the
// index answers ranges of keys in order (equality, between, string prefix, any of, whole order),
// forwards or in reverse. In memory only, like the lexical index's terms: values and their order
// never reach the medium from here.
//
// Layout: a sorted run of (key, id) entries and a small run of entries added since, kept sorted on
// first use after a change; a query merges the two. An entry is live while it is its id's current
// key (identity of the key array), so an update or delete only marks the old entry dead; dead
// entries are dropped, and the runs merged, when they pass a share of the index.

import { PqdbError } from '../errors';
import { readVarint } from '../_varint';
import { ValueWriter } from './codec';
import { compareCodePoints } from './lexical/code-point-order';

/**
 * The serialized form (sealed in a field index page: field-indexes.ts), entries in key order:
 *   "PQFX" ‖ 1 ‖ varint(#fields) ‖ str(field)* ‖ varint(n) ‖ n × (part* ‖ str(id))
 *   part = 0 false | 1 true | 2 ‖ float64 (big-endian) | 3 ‖ str | 4 ‖ varint(length) ‖ bytes
 */
const MAGIC = [0x50, 0x51, 0x46, 0x58]; // PQFX
const FORMAT = 1;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The label of the store key secondary index pages are sealed under (field-indexes.ts). */
export const FIELD_INDEX_KEY_LABEL = 'pqdb field index key v1';
/** What a secondary index page binds as its collection: the name, then 0x00 "by" (no lexical page passes). */
export const fieldIndexBinding = (collection: string) => `${collection}\u0000by`;

/** One field value as an index holds it. */
export type KeyPart = string | number | boolean | Uint8Array;
/** An index key: the values of its fields, in the index's field order. */
export type IndexKey = readonly KeyPart[];

const rank = (v: KeyPart) => (typeof v === 'boolean' ? 0 : typeof v === 'number' ? 1 : typeof v === 'string' ? 2 : 3);

/** Orders two key parts: booleans, then numbers, then strings (by code point), then bytes. */
export function comparePart(a: KeyPart, b: KeyPart): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number') return a < (b as number) ? -1 : a > (b as number) ? 1 : 0;
  if (typeof a === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (typeof a === 'string') return compareCodePoints(a, b as string);
  const x = a as Uint8Array;
  const y = b as Uint8Array;
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** Orders two keys element by element (a shorter key that is a prefix of the other first). */
export function compareKeys(a: IndexKey, b: IndexKey): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = comparePart(a[i], b[i]);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

/** `key` against `bound` on the bound's length only (a bound is a prefix of the fields). */
function comparePrefix(key: IndexKey, bound: IndexKey): number {
  for (let i = 0; i < bound.length; i++) {
    const c = comparePart(key[i], bound[i]);
    if (c !== 0) return c;
  }
  return 0;
}

/** A range of keys: bounds on a prefix of the fields, each inclusive unless open. */
export interface KeyRange {
  lower?: IndexKey;
  upper?: IndexKey;
  lowerOpen?: boolean;
  upperOpen?: boolean;
  /** Keys whose part at `lower.length - 1` starts with that part of `lower` (a string): startsWith. */
  startsWith?: boolean;
}

interface Run {
  keys: IndexKey[];
  ids: string[];
}

const byKey = (a: [IndexKey, string], b: [IndexKey, string]) =>
  compareKeys(a[0], b[0]) || compareCodePoints(a[1], b[1]);

export class FieldIndex {
  /** The indexed fields, in key order. */
  readonly fields: readonly string[];
  readonly #current = new Map<string, IndexKey>();
  #main: Run = { keys: [], ids: [] };
  #added: [IndexKey, string][] = [];
  #addedSorted = true;
  #dead = 0;

  constructor(fields: readonly string[]) {
    this.fields = Object.freeze([...fields]);
  }

  /** Number of ids indexed. */
  get size(): number {
    return this.#current.size;
  }

  /** Indexes `id` under the key its value gives (none when an indexed field is absent). */
  update(id: string, value: Readonly<Record<string, unknown>> | undefined): void {
    const key = value === undefined ? undefined : this.keyOf(value);
    if (this.#current.has(id)) this.#dead++;
    if (key === undefined) {
      this.#current.delete(id);
      return;
    }
    this.#current.set(id, key);
    this.#added.push([key, id]);
    this.#addedSorted = false;
    this.#addedView = undefined;
  }

  /** The key `value` gives, or undefined when one of the fields is absent. */
  keyOf(value: Readonly<Record<string, unknown>>): IndexKey | undefined {
    const key: KeyPart[] = [];
    for (const f of this.fields) {
      const v = value[f];
      if (v === undefined || v === null) return undefined;
      key.push(v as KeyPart);
    }
    return key;
  }

  /** The ids whose keys lie in `range`, in key order (ties by id), or the reverse. */
  *ids(range: KeyRange = {}, reverse = false): Generator<string> {
    this.#settle();
    if (this.#added.length === 0) {
      // One run (the common case once merged): its span in order, dead entries skipped.
      const run = this.#main;
      const [lo, hi] = this.#span(run, range);
      if (reverse) {
        for (let i = hi - 1; i >= lo; i--) if (this.#current.get(run.ids[i]) === run.keys[i]) yield run.ids[i];
      } else for (let i = lo; i < hi; i++) if (this.#current.get(run.ids[i]) === run.keys[i]) yield run.ids[i];
      return;
    }
    const runs: Run[] = [this.#main, this.#addedRun()];
    const spans = runs.map((run) => this.#span(run, range));
    const at = spans.map(([lo, hi]) => (reverse ? hi - 1 : lo));
    const done = (k: number) => (reverse ? at[k] < spans[k][0] : at[k] >= spans[k][1]);
    for (;;) {
      let pick = -1;
      for (let k = 0; k < runs.length; k++) {
        if (done(k)) continue;
        if (pick < 0) {
          pick = k;
          continue;
        }
        const c =
          compareKeys(runs[k].keys[at[k]], runs[pick].keys[at[pick]]) ||
          compareCodePoints(runs[k].ids[at[k]], runs[pick].ids[at[pick]]);
        if (reverse ? c > 0 : c < 0) pick = k;
      }
      if (pick < 0) return;
      const run = runs[pick];
      const i = at[pick];
      at[pick] += reverse ? -1 : 1;
      const id = run.ids[i];
      if (this.#current.get(id) === run.keys[i]) yield id; // else a dead entry: a later key replaced it
    }
  }

  /** [lo, hi) of `run`'s entries within `range` (binary searches on the bounds). */
  #span(run: Run, range: KeyRange): [number, number] {
    const { lower, upper } = range;
    const first = (test: (key: IndexKey) => boolean) => {
      let lo = 0;
      let hi = run.keys.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (test(run.keys[mid])) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    const lo =
      lower === undefined
        ? 0
        : first((k) => (range.lowerOpen === true ? comparePrefix(k, lower) > 0 : comparePrefix(k, lower) >= 0));
    let hi = run.keys.length;
    if (range.startsWith === true && lower !== undefined) {
      const m = lower.length - 1;
      const s = lower[m] as string;
      hi = Math.max(
        lo,
        first(
          (k) =>
            comparePrefix(k, lower.slice(0, m)) > 0 ||
            (comparePrefix(k, lower.slice(0, m)) === 0 && !startsWith(k[m], s) && comparePart(k[m], s) > 0),
        ),
      );
    } else if (upper !== undefined)
      hi = Math.max(
        lo,
        first((k) => (range.upperOpen === true ? comparePrefix(k, upper) >= 0 : comparePrefix(k, upper) > 0)),
      );
    return [lo, hi];
  }

  #addedView?: Run;

  /** The added entries as a run (kept until the next change). */
  #addedRun(): Run {
    return (this.#addedView ??= { keys: this.#added.map((e) => e[0]), ids: this.#added.map((e) => e[1]) });
  }

  /** The index's bytes (plaintext values and ids: the caller seals them). */
  serialize(): Uint8Array {
    this.#settle(true);
    const w = new ValueWriter();
    w.bytes(Uint8Array.from(MAGIC));
    w.byte(FORMAT);
    w.varint(this.fields.length);
    for (const f of this.fields) w.str(f);
    w.varint(this.#main.keys.length);
    const f64 = new DataView(new ArrayBuffer(8));
    for (let i = 0; i < this.#main.keys.length; i++) {
      for (const v of this.#main.keys[i]) {
        if (typeof v === 'boolean') w.byte(v ? 1 : 0);
        else if (typeof v === 'number') {
          w.byte(2);
          f64.setFloat64(0, v);
          w.bytes(new Uint8Array(f64.buffer.slice(0)));
        } else if (typeof v === 'string') {
          w.byte(3);
          w.str(v);
        } else {
          w.byte(4);
          w.varint(v.length);
          w.bytes(v);
        }
      }
      w.str(this.#main.ids[i]);
    }
    return w.done();
  }

  /**
   * An index on `fields` from serialize()'s bytes, checked whole: its fields, every part, entries in
   * strictly increasing order with distinct ids, nothing left over.
   * @throws PqdbError CORRUPTION; FORMAT_VERSION for another format
   */
  static deserialize(bytes: Uint8Array, fields: readonly string[]): FieldIndex {
    const bad = (why: string) => new PqdbError('CORRUPTION', `a secondary index does not decode: ${why}`);
    let p = 0;
    const need = (k: number) => {
      if (p + k > bytes.length) throw bad('truncated');
    };
    const varint = () => {
      const [v, next] = readVarint(bytes, p, bytes.length, bad);
      p = next;
      return v;
    };
    const str = () => {
      const n = varint();
      need(n);
      try {
        return utf8.decode(bytes.subarray(p, (p += n)));
      } catch {
        throw bad('not UTF-8');
      }
    };
    need(5);
    if (!MAGIC.every((m, i) => bytes[i] === m)) throw bad('not a secondary index');
    if (bytes[4] !== FORMAT)
      throw new PqdbError('FORMAT_VERSION', `secondary index format ${bytes[4]} is not supported`);
    p = 5;
    const n = varint();
    const stored: string[] = [];
    for (let i = 0; i < n; i++) stored.push(str());
    if (stored.length !== fields.length || stored.some((f, i) => f !== fields[i])) throw bad('it indexes other fields');
    const ix = new FieldIndex(fields);
    const count = varint();
    const keys: IndexKey[] = [];
    const ids: string[] = [];
    for (let e = 0; e < count; e++) {
      const key: KeyPart[] = [];
      for (let k = 0; k < fields.length; k++) {
        need(1);
        const tag = bytes[p++];
        if (tag === 0 || tag === 1) key.push(tag === 1);
        else if (tag === 2) {
          need(8);
          const v = new DataView(bytes.buffer, bytes.byteOffset + p, 8).getFloat64(0);
          p += 8;
          if (Number.isNaN(v)) throw bad('NaN');
          key.push(v);
        } else if (tag === 3) key.push(str());
        else if (tag === 4) {
          const len = varint();
          need(len);
          key.push(bytes.slice(p, (p += len)));
        } else throw bad('unknown part');
      }
      const id = str();
      if (e > 0 && (compareKeys(keys[e - 1], key) || compareCodePoints(ids[e - 1], id)) >= 0) throw bad('out of order');
      if (ix.#current.has(id)) throw bad(`id ${id} twice`);
      keys.push(key);
      ids.push(id);
      ix.#current.set(id, key);
    }
    if (p !== bytes.length) throw bad('trailing bytes');
    ix.#main = { keys, ids };
    return ix;
  }

  /** Sorts the added run; merges it in (dropping dead entries) once it or the dead pass a share. */
  #settle(force = false): void {
    if (!this.#addedSorted) {
      this.#added.sort(byKey);
      this.#addedSorted = true;
    }
    const total = this.#main.keys.length + this.#added.length;
    const small = this.#added.length <= 1024 + this.#main.keys.length / 8 && this.#dead <= total / 4;
    if (small && !(force && (this.#added.length > 0 || this.#dead > 0))) return;
    const live: [IndexKey, string][] = [];
    for (let i = 0; i < this.#main.keys.length; i++) {
      const id = this.#main.ids[i];
      if (this.#current.get(id) === this.#main.keys[i]) live.push([this.#main.keys[i], id]);
    }
    const added = this.#added.filter(([key, id]) => this.#current.get(id) === key);
    // Both runs sorted: one merge.
    const out: Run = { keys: new Array(live.length + added.length), ids: new Array(live.length + added.length) };
    let i = 0;
    let j = 0;
    for (let n = 0; n < out.keys.length; n++) {
      const fromMain = j >= added.length || (i < live.length && byKey(live[i], added[j]) <= 0);
      const e = fromMain ? live[i++] : added[j++];
      out.keys[n] = e[0];
      out.ids[n] = e[1];
    }
    this.#main = out;
    this.#added = [];
    this.#addedView = undefined;
    this.#dead = 0;
  }
}

const startsWith = (part: KeyPart | undefined, s: string) => typeof part === 'string' && part.startsWith(s);
