// Queries over a collection's secondary indexes (docs/api.md, "Secondary indexes"):
// `collection.where(field | fields)` picks the index whose fields are, or begin with, the ones named
// and gives a range — `equals`, `between`, `startsWith`, `anyOf` — and `collection.orderBy(field)`
// the whole index; `reverse`, `offset`, `limit` and `filter` shape what streams out. Results are
// read through the read gate as a scan's are: a record the policy in force does not allow reading
// is skipped and counted (`withheld`).

import { compareKeys, type IndexKey, type KeyPart, type KeyRange } from './field-index';
import type { Value } from './codec';
import { WITHHELD } from './writes';

/** Ids whose values a query reads at a time (those landing in one page take it once). */
const READ_STEP = 256;

/** @internal What a query reads of its collection (collection.ts builds it). */
export interface QuerySource {
  /** The first `max` ids in `ranges` (disjoint, in key order) under the index on `fields`, in order or reversed. */
  ids(fields: readonly string[], ranges: readonly KeyRange[], reverse: boolean, max: number): Promise<string[]>;
  /** Records' values through the read gate (WITHHELD where the policy keeps one from reading). */
  read(ids: readonly string[]): Promise<(Value | undefined | typeof WITHHELD)[]>;
  /** The declared indexes' field lists. */
  indexes(): readonly (readonly string[])[];
}

/** Which ends `between` includes: the lower by default, not the upper (as IDBKeyRange.bound and Dexie's between). */
export interface BetweenOptions {
  /** Whether the lower bound is included (default true). */
  lower?: boolean;
  /** Whether the upper bound is included (default false, as IDBKeyRange.bound and Dexie). */
  upper?: boolean;
}

const part = (v: unknown, what: string): KeyPart => {
  if (typeof v === 'string' || typeof v === 'boolean' || v instanceof Uint8Array) return v;
  if (typeof v === 'number' && !Number.isNaN(v)) return v;
  throw new TypeError(`${what} expected a string, number, boolean or Uint8Array`);
};

/** `v` as a bound on `n` fields at most: a value for one field, an array for a prefix of several. */
function bound(v: unknown, n: number, what: string): IndexKey {
  const parts = n > 1 && Array.isArray(v) ? v : [v];
  if (parts.length === 0 || parts.length > n) throw new TypeError(`${what} expected 1 to ${n} values`);
  return parts.map((x, i) => part(x, `${what}[${i}]`));
}

/** The start of a query on `fields`: pick the range. */
export class Where<V> {
  readonly #src: QuerySource;
  readonly #fields: readonly string[];
  readonly #index: readonly string[];

  /** @internal Made by collection.where. @throws TypeError when no declared index starts with `fields` */
  constructor(src: QuerySource, fields: readonly string[]) {
    this.#src = src;
    this.#fields = fields;
    const exact = src.indexes().find((ix) => ix.length === fields.length && ix.every((f, i) => f === fields[i]));
    const prefix = src.indexes().find((ix) => ix.length > fields.length && fields.every((f, i) => ix[i] === f));
    const index = exact ?? prefix;
    if (index === undefined)
      throw new TypeError(
        `no index on ${fields.join(', ')}: declare it with index: { by: [${JSON.stringify(fields.length === 1 ? fields[0] : fields)}] }`,
      );
    this.#index = index;
  }

  #query(ranges: KeyRange[]): Query<V> {
    return new Query<V>(this.#src, this.#index, ranges);
  }

  /** Records whose indexed value equals `value` (an array: a prefix of a compound index's fields). */
  equals(value: unknown): Query<V> {
    const b = bound(value, this.#fields.length, '"value"');
    return this.#query([{ lower: b, upper: b }]);
  }

  /** Records with `lower` ≤ value < `upper` (see BetweenOptions to include or exclude either end). */
  between(lower: unknown, upper: unknown, options: BetweenOptions = {}): Query<V> {
    const lo = bound(lower, this.#fields.length, '"lower"');
    const hi = bound(upper, this.#fields.length, '"upper"');
    const lowerOpen = options.lower === false;
    const upperOpen = options.upper !== true;
    const c = compareKeys(lo, hi);
    if (c > 0 || (c === 0 && (lowerOpen || upperOpen))) return this.#query([]);
    return this.#query([{ lower: lo, upper: hi, lowerOpen, upperOpen }]);
  }

  /** Records whose (last named) string field starts with `prefix`. */
  startsWith(prefix: unknown): Query<V> {
    const b = bound(prefix, this.#fields.length, '"prefix"');
    if (typeof b[b.length - 1] !== 'string') throw new TypeError('"prefix" expected a string');
    return this.#query([{ lower: b, startsWith: true }]);
  }

  /** Records whose indexed value is any of `values` (each as for `equals`), in key order. */
  anyOf(values: readonly unknown[]): Query<V> {
    if (!Array.isArray(values)) throw new TypeError('"values" expected an array');
    const keys = values.map((v, i) => bound(v, this.#fields.length, `"values[${i}]"`)).sort(compareKeys);
    const distinct = keys.filter((k, i) => i === 0 || compareKeys(k, keys[i - 1]) !== 0);
    return this.#query(distinct.map((k) => ({ lower: k, upper: k })));
  }

  /** Every record the index holds, in its order. */
  all(): Query<V> {
    return this.#query([{}]);
  }
}

/** A query's results: `for await (const { id, value } of query)`, or `await query.toArray()`. */
export class Query<V> implements AsyncIterable<{ id: string; value: V }> {
  readonly #src: QuerySource;
  readonly #fields: readonly string[];
  readonly #ranges: readonly KeyRange[];
  #reverse = false;
  #offset = 0;
  #limit = Infinity;
  readonly #filters: ((value: V, id: string) => boolean)[] = [];
  /** Records the policy in force withheld in the last run. */
  withheld = 0;

  /** @internal Made by Where. */
  constructor(src: QuerySource, fields: readonly string[], ranges: readonly KeyRange[]) {
    this.#src = src;
    this.#fields = fields;
    this.#ranges = ranges;
  }

  /** Results in descending key order. */
  reverse(): this {
    this.#reverse = !this.#reverse;
    return this;
  }

  /** Skips the first `n` results (after `filter`). */
  offset(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) throw new TypeError('"n" expected an integer ≥ 0');
    this.#offset = n;
    return this;
  }

  /** At most `n` results. */
  limit(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) throw new TypeError('"n" expected an integer ≥ 0');
    this.#limit = n;
    return this;
  }

  /** Keeps only the results `fn` accepts (it sees each decrypted value). */
  filter(fn: (value: V, id: string) => boolean): this {
    if (typeof fn !== 'function') throw new TypeError('"fn" expected a function');
    this.#filters.push(fn);
    return this;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<{ id: string; value: V }> {
    this.withheld = 0;
    if (this.#limit === 0) return;
    let skip = this.#offset;
    let left = this.#limit;
    // Without a filter, only as many ids as offset + limit are taken from the index (more, in
    // larger steps, when withheld or deleted records leave the page short).
    let max = this.#filters.length === 0 ? this.#offset + this.#limit + 8 : Infinity;
    let taken = 0;
    for (;;) {
      const ids = await this.#src.ids(this.#fields, this.#ranges, this.#reverse, max);
      for (let at = taken; at < ids.length;) {
        // A step of ids, no more than the results still wanted (and a few for withheld ones).
        const step = ids.slice(at, Math.min(ids.length, at + READ_STEP, at + left + skip + 8));
        at += step.length;
        const values = await this.#src.read(step);
        for (let k = 0; k < step.length; k++) {
          const id = step[k];
          const value = values[k];
          if (value === WITHHELD) {
            this.withheld++;
            continue;
          }
          if (value === undefined) continue; // deleted since the ids were taken
          const v = value as V;
          if (!this.#filters.every((f) => f(v, id))) continue;
          if (skip > 0) {
            skip--;
            continue;
          }
          yield { id, value: v };
          if (--left === 0) return;
        }
      }
      if (ids.length < max) return;
      taken = ids.length;
      max *= 4;
    }
  }

  /** Every result, in order. */
  async toArray(): Promise<{ id: string; value: V }[]> {
    const out: { id: string; value: V }[] = [];
    for await (const r of this) out.push(r);
    return out;
  }
}
