// RecordIO: the one place a stored record is opened or sealed. Opening names its purpose — `read`
// (a user's get), `index` (building a lexical index), `verify` (a migration's or the verifier's
// check), `copy` (compaction or a migration re-sealing it), `restore` (a restore re-sealing it into
// a new store) — and applies that purpose's gates: the gate the composition root registers for the
// purpose (current authority: src/engine/gates.ts), asked before anything is decrypted; the
// registry's read gate (a retired suite refuses reads; a copy or a restore is not a read); and, for
// every purpose, the check that the record carries the write sequence (and generation) its index
// entry names, so an older version of a record swapped into its place never opens as the live one.
//
// The plaintext returned is the caller's to wipe once decoded or re-sealed.

import { PqdbError } from '../errors';
import { equalBytes, Scratch } from '../_bytes';
import { openRecord, recordAeadInto, sealRecord, sealedLength } from '../crypto/record';
import { suite as suiteOf } from '../crypto/suites';
import type { KeyRing } from './keys';
import type { Registry } from './registry';
import type { PageCache } from './page-cache';
import { pageSalt, type PageWriteOp } from './page-format';
import type { Location } from './directory';

export type Purpose = 'read' | 'copy' | 'index' | 'verify' | 'restore';

/** What a gate is asked: the record, and the governance state of the version to open. */
export interface GateRequest {
  collection: string;
  id: string;
  governance: string;
}

/**
 * A purpose's gate: undefined lets the record version open; else the refusal, which opening throws
 * (a user's read may take a stand-in instead: RecordIO.read). Asked before anything is decrypted.
 */
export type Gate = (at: GateRequest) => PqdbError | undefined;

/** The gates of each purpose (a purpose with none opens whatever its other checks let through). */
export type Gates = { readonly [P in Purpose]?: Gate };

/** What an index entry says of a stored record version. */
export interface Expected {
  collection: string;
  id: string;
  sequence: number;
  governance: string;
  /** The generation of the page it sits in, when known (the verifier checks it). */
  generation?: number;
  /** The commit salt of the page it sits in. */
  salt?: Uint8Array;
}

/**
 * Opens a sealed record for `purpose`: its plaintext (the caller wipes it), in `output` when given
 * (see openRecord).
 * @throws PqdbError AUTH_FAILED (altered, misplaced or wrong key), CORRUPTION (not the version its
 * index names), SUITE_RETIRED (purposes other than copy and restore, with `registry`).
 */
export function openStored(
  purpose: Purpose,
  blob: Uint8Array,
  at: Expected,
  keys: KeyRing,
  registry?: Registry,
  output?: Uint8Array,
): Uint8Array {
  // Re-sealing a record is not a read of it: a suite retired for reads still yields its records.
  const gated = purpose !== 'copy' && purpose !== 'restore' ? registry : undefined;
  const { plaintext, header } = openRecord(
    blob,
    at.collection,
    at.id,
    (suite, generation) => {
      gated?.checkRead(suite.id);
      return keys.aeadFor(suite.id, generation, at.governance);
    },
    at.salt,
    output,
  );
  const where = `record ${at.collection}/${at.id}`;
  if (header.sequence !== at.sequence) {
    plaintext.fill(0);
    throw new PqdbError(
      'CORRUPTION',
      `${where} is not the version its index names (it carries sequence ${header.sequence}, the index ${at.sequence})`,
    );
  }
  if (at.generation !== undefined && header.generation !== at.generation) {
    plaintext.fill(0);
    throw new PqdbError(
      'CORRUPTION',
      `${where} was sealed under generation ${header.generation} but sits in a page of generation ${at.generation}`,
    );
  }
  return plaintext;
}

/** What a put needs to be sealed into its slot of a commit page. */
export interface PutSpec {
  collection: string;
  id: string;
  suite: number;
  generation: number;
  sequence: number;
  governance: string;
  plaintext: Uint8Array;
  copy?: boolean;
}

/** Records up to this size are read through RecordIO's reused buffers; larger ones get their own. */
const SCRATCH_MAX = 64 << 10;

export class RecordIO {
  readonly #cache: PageCache;
  readonly #keys: KeyRing;
  readonly #registry: () => Registry;
  readonly #saltOf: (pageId: number) => Uint8Array | undefined;
  readonly #gates: Gates;

  /**
   * `saltOf`: the commit salt of a live commit page, as the key directory keeps it; `gates`: each
   * purpose's gate (src/engine/gates.ts makes the store's).
   */
  constructor(
    cache: PageCache,
    keys: KeyRing,
    registry: () => Registry,
    saltOf: (pageId: number) => Uint8Array | undefined = () => undefined,
    gates: Gates = {},
  ) {
    this.#cache = cache;
    this.#keys = keys;
    this.#registry = registry;
    this.#saltOf = saltOf;
    this.#gates = gates;
  }

  /**
   * The same records behind other gates for the purposes `gates` names (a restore opens a copy's
   * records under the current authority it takes, not under the copy's own).
   * @example const restoring = copy.records.gated({ restore: restoreGate(authority) });
   */
  gated(gates: Gates): RecordIO {
    return new RecordIO(this.#cache, this.#keys, this.#registry, this.#saltOf, { ...this.#gates, ...gates });
  }

  /** The refusal of `purpose`'s gate for the record version at `loc`, or undefined when it may open. */
  refusal(purpose: Purpose, collection: string, id: string, loc: Pick<Location, 'governance'>): PqdbError | undefined {
    return this.#gates[purpose]?.({ collection, id, governance: loc.governance });
  }

  /** Throws the refusal of `purpose`'s gate, if any. */
  #gate(purpose: Purpose, collection: string, id: string, loc: Location): void {
    const refused = this.refusal(purpose, collection, id, loc);
    if (refused !== undefined) throw refused;
  }

  /**
   * Opens the record version at `loc` for `purpose` (see openStored), through its gate. A user's
   * read takes the record's bytes alone (a ranged read when its page is not cached: the record's
   * AEAD tag authenticates them, and the location comes from the authenticated directory); the
   * other purposes go through pages in order, so they read and cache whole pages.
   * @throws the gate's refusal (PqdbError AUTHORITY_DENIED), as openStored
   */
  async open(purpose: Purpose, collection: string, id: string, loc: Location): Promise<Uint8Array> {
    this.#gate(purpose, collection, id, loc);
    const { blob, salt } = await this.#sealed(purpose, loc);
    const at = { collection, id, sequence: loc.sequence, governance: loc.governance, salt };
    return openStored(purpose, blob, at, this.#keys, this.#registry());
  }

  /** The plaintext of a user's read, decoded at once (wiped after each); records up to 64 KiB. */
  readonly #plain = new Scratch(1024, SCRATCH_MAX, true);
  /** The sealed bytes of a user's read taken synchronously (public bytes: not wiped). */
  readonly #sealedBuf = new Scratch(1024, SCRATCH_MAX);

  /**
   * A user's read (purpose 'read', as open) returning `decode(plaintext)`: the record is opened into
   * a scratch buffer, decoded in the same synchronous step and the scratch wiped, so no plaintext
   * array is left behind for the collector (and none is allocated: beyond 64 bytes V8 gives every
   * new array a backing store of its own). `decode` must not keep a view of its argument. A record
   * the read gate refuses resolves with `withheld` when one is given (what scans skip and count).
   * @throws as open (the gate's refusal only without `withheld`), and what `decode` throws
   */
  async read<T, W = never>(
    collection: string,
    id: string,
    loc: Location,
    decode: (plaintext: Uint8Array) => T,
    withheld?: W,
  ): Promise<T | W> {
    const refused = this.refusal('read', collection, id, loc);
    if (refused !== undefined) {
      if (withheld !== undefined) return withheld;
      throw refused;
    }
    // The sealed bytes synchronously where they can be had so (a cached page, or node-fs's read
    // into #sealedBuf), opened in the same step: nothing else can use the buffer in between.
    let salt = this.#saltOf(loc.pageId);
    let blob =
      salt !== undefined && loc.length <= SCRATCH_MAX
        ? this.#cache.getRangeSync(loc.pageId, loc.offset, loc.length, this.#sealedBuf.get(loc.length))
        : undefined;
    if (blob === undefined || salt === undefined) ({ blob, salt } = await this.#sealed('read', loc));
    const at = { collection, id, sequence: loc.sequence, governance: loc.governance, salt };
    const plaintext = openStored('read', blob, at, this.#keys, this.#registry(), this.#plain.get(loc.length));
    try {
      return decode(plaintext);
    } finally {
      plaintext.fill(0);
    }
  }

  /**
   * A user's read (as `read`) of the record at `loc` out of `page`, the bytes of its commit page the
   * caller holds: the many reads of a query that land in one page take it once.
   * @throws as read; PqdbError CORRUPTION when the record lies past the page's end
   */
  readIn<T, W = never>(
    page: Uint8Array,
    collection: string,
    id: string,
    loc: Location,
    decode: (plaintext: Uint8Array) => T,
    withheld?: W,
  ): T | W {
    const refused = this.refusal('read', collection, id, loc);
    if (refused !== undefined) {
      if (withheld !== undefined) return withheld;
      throw refused;
    }
    if (loc.offset + loc.length > page.length)
      throw new PqdbError('CORRUPTION', `record ${collection}/${id} lies past the end of page ${loc.pageId}`);
    const blob = page.subarray(loc.offset, loc.offset + loc.length);
    const at = { collection, id, sequence: loc.sequence, governance: loc.governance, salt: pageSalt(page) };
    const plaintext = openStored('read', blob, at, this.#keys, this.#registry(), this.#plain.get(loc.length));
    try {
      return decode(plaintext);
    } finally {
      plaintext.fill(0);
    }
  }

  /** The sealed bytes of the record at `loc` and its page's commit salt (see open). */
  async #sealed(purpose: Purpose, loc: Location): Promise<{ blob: Uint8Array; salt: Uint8Array }> {
    const known = this.#saltOf(loc.pageId);
    if (purpose === 'read' && known !== undefined)
      return { blob: await this.#cache.getRange(loc.pageId, loc.offset, loc.length), salt: known };
    const page = await this.#cache.get(loc.pageId);
    return { blob: page.subarray(loc.offset, loc.offset + loc.length), salt: pageSalt(page) };
  }

  /**
   * Opens the record version at `loc` out of `page`, the bytes of commit page `loc.pageId` the
   * caller already holds (a pass reading each page once; see PageCache.peek). Same checks as open.
   * With `output` (at least loc.length bytes), the plaintext is a view of its start (openRecord).
   * @throws the gate's refusal, as openStored; PqdbError CORRUPTION when the record lies past the page's end
   * @example const plaintext = records.openIn('copy', page, 'words', 'w1', loc);
   */
  openIn(
    purpose: Purpose,
    page: Uint8Array,
    collection: string,
    id: string,
    loc: Location,
    output?: Uint8Array,
  ): Uint8Array {
    this.#gate(purpose, collection, id, loc);
    if (loc.offset + loc.length > page.length)
      throw new PqdbError('CORRUPTION', `record ${collection}/${id} lies past the end of page ${loc.pageId}`);
    const blob = page.subarray(loc.offset, loc.offset + loc.length);
    const at = { collection, id, sequence: loc.sequence, governance: loc.governance, salt: pageSalt(page) };
    return openStored(purpose, blob, at, this.#keys, this.#registry(), output);
  }

  /**
   * A put operation of a commit page that seals `spec.plaintext` straight into its slot. The keyed
   * AEAD is looked up as the record seals, not before: the key cache may evict (and wipe) an entry
   * when a commit holds more governance states than it has room for.
   */
  put(spec: PutSpec): PageWriteOp {
    const { collection, id, suite, generation, sequence, governance, plaintext } = spec;
    const s = suiteOf(suite);
    // No per-record subkey: sealed with the page's other records of its key (encodePage).
    const batch = s.commitment
      ? undefined
      : {
          group: `${generation}/${s.id}/${governance}`,
          prepare: (slot: Uint8Array) =>
            recordAeadInto(s.id, { collection, id, generation, sequence }, plaintext, slot)!,
          aead: () => this.#keys.aeadFor(s.id, generation, governance).aead,
        };
    return putOp(
      spec,
      sealedLength(s.id, plaintext.length),
      (slot, salt) => {
        const address = { collection, id, generation, sequence, salt }; // one shape for every record
        sealRecord(s.id, this.#keys.aeadFor(s.id, generation, governance), address, plaintext, 0, slot);
      },
      batch,
    );
  }

  /**
   * Like put, but seals `spec.plaintext` now, with `salt`, the commit salt the page will carry
   * (Draft.commitSalt): the caller may wipe the plaintext as soon as this returns, and the sealing
   * work is done where the caller chooses (a migration's copy seals in steps between reads, so
   * encoding the commit page is a copy of bytes). The sealed record goes into `into` when given
   * (exactly sealedLength bytes, left untouched by the caller until the commit is encoded: a chunk
   * seals into one reused buffer instead of an allocation per record). Sealing into a page of
   * another salt throws.
   * @example draft.write(records.putSealed(spec, draft.commitSalt()), { kind: 'put', collection, id });
   */
  putSealed(spec: PutSpec, salt: Uint8Array, into?: Uint8Array): PageWriteOp {
    const { collection, id, suite, generation, sequence, governance, plaintext } = spec;
    const length = sealedLength(suite, plaintext.length);
    if (into !== undefined && (!(into instanceof Uint8Array) || into.length !== length))
      throw new RangeError(`"into" expected Uint8Array of length ${length}`);
    const sealed = into ?? new Uint8Array(length);
    const address = { collection, id, generation, sequence, salt };
    sealRecord(suite, this.#keys.aeadFor(suite, generation, governance), address, plaintext, 0, sealed);
    return putOp(spec, sealed.length, (slot, pageSalt) => {
      if (!equalBytes(pageSalt, salt)) throw new Error('a record sealed ahead went into a page of another salt');
      slot.set(sealed);
    });
  }
}

/** The put operation of `spec`, `length` sealed bytes written into its slot by `seal`. */
function putOp(
  spec: PutSpec,
  length: number,
  seal: (slot: Uint8Array, salt: Uint8Array) => void,
  batch?: Extract<PageWriteOp, { kind: 'put' }>['batch'],
): PageWriteOp {
  const { collection, id, sequence, governance } = spec;
  return {
    kind: 'put',
    collection,
    id,
    sequence,
    governance,
    length,
    seal,
    ...(batch !== undefined ? { batch } : {}),
    ...(spec.copy === true ? { copy: true } : {}),
  };
}
