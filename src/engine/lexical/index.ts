// The lexical (full-text) index over one collection's string fields: the store calls `update` on
// every put and delete and persists `serialize()` sealed at checkpoints (docs/lexical-index.md).
// LexicalIndex checks every argument and delegates: tokenizer.ts (words), postings.ts (storage and
// updates), search.ts (queries), format.ts (the serialized form).
//
// Security caveats: terms are plaintext in memory while the index exists, like the records the
// store decrypts; `serialize()` returns plaintext terms and ids, so callers seal it before it
// reaches storage. Search time depends on the data and the query (it is not constant-time).

import { bytes as checkBytes, integer } from '../../_args';
import { concatBytes } from '../../_bytes';
import { compareCodePoints } from './code-point-order';
import { decodeSteps, encodeSteps, MAX_PART_BYTES, MIN_PART_BYTES, WHOLE_PART_BYTES } from './format';
import { Postings } from './postings';
import { DEFAULT_SEARCH_LIMIT, SearchScratch, searchPostings, type SearchOptions } from './search';
import { tokenize } from './tokenizer';

export { MAX_TOKEN_CODE_POINTS, tokenize } from './tokenizer';
export { DEFAULT_SEARCH_LIMIT, type SearchOptions } from './search';

export interface LexicalOptions {
  /** Names of the string fields whose text is indexed (all pooled into one bag of words per id). */
  readonly text: readonly string[];
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
 * An in-memory inverted index: term → postings (doc number, term frequency), plus each id's term
 * list for O(tokens) removal (postings.ts holds the layout). Not thread-shared; all methods are
 * synchronous.
 * @example
 * const ix = new LexicalIndex({ text: ['lemma', 'gloss'] });
 * ix.update('n1', { lemma: 'entity', gloss: 'that which is perceived' });
 * ix.search('perc', { prefix: true }) // ['n1']
 */
export class LexicalIndex {
  readonly #fields: readonly string[];
  readonly #p = new Postings();
  readonly #scratch = new SearchScratch();

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
    return this.#p.ids.size;
  }

  /** Number of distinct terms. */
  get terms(): number {
    return this.#p.liveTerms;
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
    if (counts.size > 0) this.#p.add(id, counts);
  }

  /**
   * Removes `id` from the index (nothing happens when it is not indexed). O(its distinct terms).
   * @throws TypeError for an empty id.
   */
  remove(id: string): void {
    checkId(id);
    this.#p.remove(id);
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
    return searchPostings(this.#p, this.#scratch, query, mode === 'all', prefix, limit);
  }

  /**
   * The whole index as canonical bytes (the same content gives the same bytes, whatever the order
   * of updates). The bytes hold plaintext terms and ids: seal them before storing.
   * @example const sealed = seal(ix.serialize());
   */
  serialize(): Uint8Array {
    const steps = encodeSteps(this.#p, this.#fields, WHOLE_PART_BYTES);
    for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return concatBytes(r.value);
  }

  /**
   * serialize() as consecutive parts of `partBytes` (the last one shorter), awaiting `pause()`
   * every few thousand ids so a large index does not hold the event loop for the whole encoding.
   * No large buffer is grown or copied, and each part can be sealed on its own. The index must not
   * change until the promise settles (the store serializes inside its commit queue, where no write
   * runs meanwhile).
   * @throws TypeError/RangeError unless `partBytes` is an integer in [1024, 2^30].
   * @example const parts = await ix.serializeParts(256 * 1024, () => new Promise(setImmediate));
   */
  async serializeParts(partBytes: number, pause: () => Promise<void>): Promise<Uint8Array[]> {
    integer('partBytes', partBytes, MIN_PART_BYTES, MAX_PART_BYTES);
    const steps = encodeSteps(this.#p, this.#fields, partBytes);
    for (let r = steps.next(); ; r = steps.next()) {
      if (r.done === true) return r.value;
      await pause();
    }
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

  /**
   * deserialize(), awaiting `pause()` between bounded steps (a few hundred ids, a megabyte of copying).
   * @throws as deserialize() (the promise rejects).
   */
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
    yield* decodeSteps(bytes, ix.#fields, ix.#p);
    return ix;
  }
}
