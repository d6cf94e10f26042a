// Page digests a replica and its primary compare at the start of a session (docs/replication.md,
// "Pages that differ"), so that a page whose bytes on the replica are not the primary's (damaged on
// the replica's medium, or kept by a release that did not open shipped pages) is sent again and
// replaced. Bounded in three steps:
//
//   page digest   SHA-384("pqdb replication page v1" ‖ be32 id ‖ page bytes); 48 zero bytes for a
//                 page the replica cannot read (a checksum that fails): no page has that digest
//   range         the page ids a HELLO names, in its order, cut into runs of RANGE_PAGES (4,096);
//                 a range's digest is SHA-384 of its pages' digests in order. The HELLO carries one
//                 per range: at most 256 (12 KiB) for the 2^20 pages a HELLO may name
//   per page      for the ranges whose digest differs the replica sends its pages' digests (one
//                 DIGESTS message per range, 192 KiB at most); the primary resends the pages whose
//                 digest is not its own (REPLACE), ahead of its catch-up
//
// A range that holds a page the primary no longer has differs too (the catch-up drops that page);
// its other pages are compared one by one. Nothing here is trusted by the replica: a page sent as
// a replacement is verified like every shipped page (the staged open, then src/replication/_check.ts)
// before it replaces anything. The cost is one read and one SHA-384 of every page the replica holds,
// on both sides, per session start; the primary keeps each page's digest once computed (its pages
// are immutable and an id is never written again), so for it only the first session costs that.

import { PqdbError } from '../errors';
import { sha384 } from '../kernels/sha2';
import { type PageStore } from '../storage/page-store';
import { readPagesOf } from '../storage/page-store-base';
import { encodeMessage, MSG_HELLO, MSG_HELLO2 } from './messages';

/** Page ids per range. */
export const RANGE_PAGES = 4096;
/** Bytes of one digest. */
export const DIGEST_BYTES = 48;
/** Pages read together while digesting. */
const READ_BATCH = 32;
/** Page digests the primary keeps (48 bytes each in a pool, plus a map entry: about 80 MiB at most). */
const MAX_CACHED = 1 << 20;
/** Digests per pool block (3 MiB). */
const BLOCK = 1 << 16;

const LABEL = new TextEncoder().encode('pqdb replication page v1');

/** The digest of page `id` holding `bytes`. */
export function pageDigest(id: number, bytes: Uint8Array): Uint8Array {
  const h = sha384.create().update(LABEL);
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, id);
  return h.update(b).update(bytes).digest();
}

/** How many ranges `n` page ids make. */
export function rangeCount(n: number): number {
  return Math.ceil(n / RANGE_PAGES);
}

/** The page ids of range `r` of `ids`. */
export function rangeIds(ids: readonly number[], r: number): readonly number[] {
  return ids.slice(r * RANGE_PAGES, (r + 1) * RANGE_PAGES);
}

/**
 * The digests of pages `ids` as `pages` holds them, in order: `ids.length` × 48 bytes. A page that
 * does not read back (CORRUPTION: its checksum fails) or is gone gets 48 zero bytes.
 * @throws what reading the page store throws but CORRUPTION (IO_ERROR, NOT_OPEN)
 */
export async function digestsOf(pages: PageStore, ids: readonly number[]): Promise<Uint8Array> {
  const out = new Uint8Array(ids.length * DIGEST_BYTES);
  for (let at = 0; at < ids.length; at += READ_BATCH) {
    const batch = ids.slice(at, at + READ_BATCH);
    let read: (Uint8Array | undefined)[];
    try {
      read = await readPagesOf(pages, batch);
    } catch (e) {
      if (!isCorruption(e)) throw e;
      read = [];
      for (const id of batch) read.push(await pages.readPage(id).catch(unreadable));
    }
    read.forEach((bytes, i) => {
      if (bytes !== undefined) out.set(pageDigest(batch[i], bytes), (at + i) * DIGEST_BYTES);
    });
  }
  return out;
}

/** One digest per range of `digests` (page digests in order): SHA-384 of the range's digests. */
export function rangeDigests(digests: Uint8Array): Uint8Array {
  const n = digests.length / DIGEST_BYTES;
  const out = new Uint8Array(rangeCount(n) * DIGEST_BYTES);
  for (let r = 0; r * RANGE_PAGES < n; r++)
    out.set(
      sha384(digests.subarray(r * RANGE_PAGES * DIGEST_BYTES, (r + 1) * RANGE_PAGES * DIGEST_BYTES)),
      r * DIGEST_BYTES,
    );
  return out;
}

/** The page digests of range `r` of `digests`. */
export function rangeOfDigests(digests: Uint8Array, r: number): Uint8Array {
  return digests.subarray(r * RANGE_PAGES * DIGEST_BYTES, (r + 1) * RANGE_PAGES * DIGEST_BYTES);
}

function isCorruption(e: unknown): boolean {
  return e instanceof PqdbError && e.code === 'CORRUPTION';
}

function unreadable(e: unknown): undefined {
  if (isCorruption(e)) return undefined;
  throw e;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

/** The primary's page digests, computed once per page (its pages are immutable). */
export class PageDigests {
  readonly #pages: PageStore;
  /** Page id → its slot in the pool. */
  readonly #slots = new Map<number, number>();
  readonly #pool: Uint8Array[] = [];
  readonly #free: number[] = [];
  #used = 0;

  constructor(pages: PageStore) {
    this.#pages = pages;
  }

  #get(id: number): Uint8Array | undefined {
    const slot = this.#slots.get(id);
    if (slot === undefined) return undefined;
    const at = (slot % BLOCK) * DIGEST_BYTES;
    return this.#pool[Math.floor(slot / BLOCK)].slice(at, at + DIGEST_BYTES); // a slot may be reused
  }

  #keep(id: number, d: Uint8Array): void {
    if (this.#slots.has(id)) return;
    let slot = this.#free.pop();
    if (slot === undefined) {
      if (this.#used >= MAX_CACHED) return;
      slot = this.#used++;
      if (slot % BLOCK === 0) this.#pool.push(new Uint8Array(BLOCK * DIGEST_BYTES));
    }
    this.#pool[Math.floor(slot / BLOCK)].set(d, (slot % BLOCK) * DIGEST_BYTES);
    this.#slots.set(id, slot);
  }

  /** Digests of pages `ids` (undefined for a page the primary does not have or cannot read). */
  async of(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const out: (Uint8Array | undefined)[] = ids.map((id) => this.#get(id));
    const todo = ids.filter((_, i) => out[i] === undefined);
    if (todo.length === 0) return out;
    const computed = await digestsOf(this.#pages, todo);
    const zero = new Uint8Array(DIGEST_BYTES);
    const byId = new Map<number, Uint8Array>();
    todo.forEach((id, i) => {
      const d = computed.slice(i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES);
      if (same(d, zero)) return; // absent or unreadable here: nothing to compare with, nothing kept
      byId.set(id, d);
      this.#keep(id, d);
    });
    return ids.map((id, i) => out[i] ?? byId.get(id));
  }

  /** Pages a commit deleted. */
  forget(ids: readonly number[]): void {
    for (const id of ids) {
      const slot = this.#slots.get(id);
      if (slot === undefined) continue;
      this.#slots.delete(id);
      this.#free.push(slot);
    }
  }

  /** The ranges of `ids` whose digest (of `ranges`, one per range) is not the one this side computes. */
  async differingRanges(ids: readonly number[], ranges: Uint8Array): Promise<number[]> {
    const out: number[] = [];
    for (let r = 0; r < rangeCount(ids.length); r++) {
      const own = await this.of(rangeIds(ids, r));
      // A page this side lacks makes its range differ: the others of it are compared one by one.
      if (own.some((d) => d === undefined)) out.push(r);
      else {
        const all = new Uint8Array(own.length * DIGEST_BYTES);
        own.forEach((d, i) => all.set(d!, i * DIGEST_BYTES));
        if (!same(sha384(all), ranges.subarray(r * DIGEST_BYTES, (r + 1) * DIGEST_BYTES))) out.push(r);
      }
    }
    return out;
  }

  /** The pages of `ids` this side has whose digest is not the one in `digests` (in the order of `ids`). */
  async differingPages(ids: readonly number[], digests: Uint8Array): Promise<number[]> {
    const own = await this.of(ids);
    return ids.filter((_, i) => {
      const d = own[i];
      return d !== undefined && !same(d, digests.subarray(i * DIGEST_BYTES, (i + 1) * DIGEST_BYTES));
    });
  }
}

/**
 * A replica's hello: HELLO2 (with its range digests; `digests` are its page digests, kept for the
 * DIGESTS it may be asked for) or, for a primary that refused one, a plain HELLO.
 */
export async function helloOf(
  pages: PageStore,
  applied: number,
  withDigests: boolean,
): Promise<{ bytes: Uint8Array; digests?: Uint8Array }> {
  const pageIds = await pages.listPages();
  if (!withDigests) return { bytes: encodeMessage({ type: MSG_HELLO, applied, pageIds }) };
  const digests = await digestsOf(pages, pageIds);
  return { bytes: encodeMessage({ type: MSG_HELLO2, applied, pageIds, ranges: rangeDigests(digests) }), digests };
}
