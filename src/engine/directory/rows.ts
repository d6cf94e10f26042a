// The key directory's rows (DESIGN §6): where a record's live version is (Location), a live commit
// page (PageInfo), the interned governance states, the columns a snapshot writes and reads (Rows),
// and the partition of a row in a base kept in partitions (FNV-1a of its id's UTF-8 bytes).

import { PqdbError } from '../../errors';

/** Where a record's live version is. */
export interface Location {
  /** Index of the record's leaf in its generation's Merkle log. */
  leafIndex: number;
  generation: number;
  pageId: number;
  offset: number;
  length: number;
  sequence: number;
  /** The suite the record is sealed with (its header's suite byte). */
  suite: number;
  /** The captured governance state, in canonical text form. */
  governance: string;
}

/** A live commit page: its key generation, commit salt (16 bytes, read-only) and length in bytes. */
export interface PageInfo {
  generation: number;
  salt: Uint8Array;
  bytes: number;
}

/** Governance states by number, shared by every table of a directory. */
export class Interned {
  readonly strings: string[] = [];
  readonly #index = new Map<string, number>();

  of(s: string): number {
    let i = this.#index.get(s);
    if (i === undefined) {
      i = this.strings.length;
      this.strings.push(s);
      this.#index.set(s, i);
    }
    return i;
  }
}

/** The columns of a table's rows, as a snapshot writes and reads them (one entry per row). */
export interface Rows {
  /** Number of rows. */
  n: number;
  /** UTF-8 length of each id (0 marks a removal in a run). */
  idLength: Uint16Array;
  /** The ids' UTF-8 bytes, back to back in row order. */
  ids: Uint8Array;
  page: Uint32Array;
  offset: Uint32Array;
  length: Uint32Array;
  leaf: Uint32Array;
  generation: Uint32Array;
  sequence: Float64Array;
  /** Index into the snapshot's governance list. */
  governance: Uint32Array;
  suite: Uint8Array;
}

/**
 * A base snapshot kept in partitions that load on first use (partitions.ts): a
 * row's partition is the top `bits` bits of the FNV-1a hash of its id's UTF-8 bytes.
 */
export interface PartSource {
  readonly bits: number;
  /** Per collection, per partition: the rows it holds and the sum of their sealed lengths. */
  readonly tables: ReadonlyMap<string, { rows: readonly number[]; bytes: readonly number[] }>;
  /**
   * Partition `p`, read, authenticated and decoded synchronously: per collection its rows, with the
   * snapshot's governance list. `done()` wipes the plaintext once the rows are copied.
   * @throws PqdbError CORRUPTION, AUTH_FAILED, IO_ERROR (the directory stays as it was)
   */
  load(p: number): {
    governance: readonly string[];
    collections: readonly { name: string; rows: Rows }[];
    done(): void;
  };
}

/**
 * Checks partition `p` (authenticated, decoded) against its base's head: every collection known
 * and listed once, as many rows and sealed bytes as the head says, each row's id in partition
 * `p`, and no collection the head gives rows in `p` left out.
 * @throws PqdbError CORRUPTION
 */
export function checkPart(
  source: Pick<PartSource, 'bits' | 'tables'>,
  p: number,
  collections: readonly { name: string; rows: Rows }[],
): void {
  const bad = () => {
    throw new PqdbError('CORRUPTION', `partition ${p} of the persisted key directory does not match its base`);
  };
  const seen = new Set<string>();
  for (const { name, rows } of collections) {
    const want = source.tables.get(name);
    let bytes = 0;
    for (let i = 0, at = 0; i < rows.n; i++) {
      bytes += rows.length[i];
      if (partOf(fnv1a(rows.ids, at, rows.idLength[i]), source.bits) !== p) bad();
      at += rows.idLength[i];
    }
    if (want === undefined || seen.has(name) || want.rows[p] !== rows.n || want.bytes[p] !== bytes) bad();
    seen.add(name);
  }
  for (const [name, want] of source.tables) if (want.rows[p] !== 0 && !seen.has(name)) bad();
}

/** The partition of a row whose id hashes to `hash`, of 2^bits. */
export const partOf = (hash: number, bits: number): number => (bits === 0 ? 0 : hash >>> (32 - bits));

/** FNV-1a (32 bits) of `len` bytes of `b` at `at`. */
export function fnv1a(b: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < at + len; i++) h = Math.imul(h ^ b[i], 0x01000193);
  return h >>> 0;
}

/** Columns for `n` rows and `idBytes` bytes of ids. */
export function emptyRows(n: number, idBytes: number): Rows {
  return {
    n,
    idLength: new Uint16Array(n),
    ids: new Uint8Array(idBytes),
    page: new Uint32Array(n),
    offset: new Uint32Array(n),
    length: new Uint32Array(n),
    leaf: new Uint32Array(n),
    generation: new Uint32Array(n),
    sequence: new Float64Array(n),
    governance: new Uint32Array(n),
    suite: new Uint8Array(n),
  };
}

/** The rows of `list` one after another, in fresh columns. */
export function concatRows(list: readonly Rows[]): Rows {
  let n = 0;
  let idBytes = 0;
  for (const r of list) ((n += r.n), (idBytes += r.ids.length));
  const out = emptyRows(n, idBytes);
  let at = 0;
  let idAt = 0;
  for (const r of list) {
    out.ids.set(r.ids, idAt);
    for (const k of [
      'idLength',
      'page',
      'offset',
      'length',
      'leaf',
      'generation',
      'sequence',
      'governance',
      'suite',
    ] as const)
      (out[k] as Uint32Array).set(r[k] as Uint32Array, at);
    at += r.n;
    idAt += r.ids.length;
  }
  return out;
}
