// The replication messages (docs/replication.md, "Shipping"), carried as the payloads of channel
// frames. Every message is one frame: a type byte, then fields in a fixed order, integers
// big-endian, byte strings length-prefixed (u32). Nothing here is trusted by the replica before the
// commit it carries has been verified against the store's integrity rules (src/replication/replica.ts);
// the decoder only bounds what it reads, so a malformed message is CORRUPTION, never an exception
// of another kind or an oversized allocation.
//
//   HELLO    1 ‖ be64 applied commit ‖ u32 n ‖ n × u32 page id        (replica → primary)
//   COMMIT   2 ‖ be64 commit ‖ be64 time ms ‖ u8 snapshot ‖ u32 n ‖ n × (u32 id ‖ u32 len ‖ bytes)
//              ‖ u32 d ‖ d × u32 deleted id ‖ u32 len ‖ sealed manifest  (primary → replica)
//   STATUS   3 ‖ be64 commit ‖ be64 time ms                           (primary → replica: heartbeat)
//   APPLIED  4 ‖ be64 applied commit                                   (replica → primary)
//   PAGES    5 ‖ u32 n ‖ n × (u32 id ‖ u32 len ‖ bytes)                  (primary → replica)
//   HELLO2   6 ‖ be64 applied commit ‖ u32 n ‖ n × u32 page id ‖ u32 r ‖ r × 48-byte range digest
//                                                                     (replica → primary)
//   DIFFER   7 ‖ u32 k ‖ k × u32 range                                 (primary → replica)
//   DIGESTS  8 ‖ u32 range ‖ u32 m ‖ m × 48-byte page digest           (replica → primary)
//   REPLACE  9 ‖ u32 n ‖ n × (u32 id ‖ u32 len ‖ bytes)                  (primary → replica)
// A commit whose pages exceed one message sends them ahead in PAGES messages; they belong to the
// COMMIT that follows. HELLO2 is a HELLO with page digests (src/replication/_digests.ts): the
// primary answers with DIFFER (the ranges whose digest is not its own), the replica with one
// DIGESTS per range named, and the primary sends the pages that differ in REPLACE messages ahead
// of its catch-up's COMMIT, which they belong to as replacements of the replica's copies.

import { PqdbError } from '../errors';
import { concatBytes, getU64, setU64 } from '../_bytes';

export const MSG_HELLO = 1;
export const MSG_COMMIT = 2;
export const MSG_STATUS = 3;
export const MSG_APPLIED = 4;
export const MSG_PAGES = 5;
export const MSG_HELLO2 = 6;
export const MSG_DIFFER = 7;
export const MSG_DIGESTS = 8;
export const MSG_REPLACE = 9;
/** Page bytes per message, well under the channel's message bound. */
export const PAGES_PER_MESSAGE_BYTES = 4 << 20;

/** A replica's opening message: the commit it has applied and the pages it holds. */
export interface Hello {
  type: typeof MSG_HELLO;
  applied: number;
  pageIds: number[];
}

/** A hello with page digests: one per range of RANGE_PAGES ids of `pageIds` (48 bytes each). */
export interface Hello2 {
  type: typeof MSG_HELLO2;
  applied: number;
  pageIds: number[];
  ranges: Uint8Array;
}

/** The ranges of a HELLO2 whose digest is not the primary's, ascending. */
export interface Differ {
  type: typeof MSG_DIFFER;
  ranges: number[];
}

/** The page digests of one range of a HELLO2 (48 bytes per page, in the hello's order). */
export interface Digests {
  type: typeof MSG_DIGESTS;
  range: number;
  digests: Uint8Array;
}

/** Pages sent again to replace the replica's copies; they belong to the COMMIT that follows. */
export interface Replace {
  type: typeof MSG_REPLACE;
  pages: { id: number; bytes: Uint8Array }[];
}

/** A commit to apply: its pages, the pages it deletes and its sealed manifest. */
export interface CommitMessage {
  type: typeof MSG_COMMIT;
  commit: number;
  /** When the primary committed it (ms since the epoch). */
  time: number;
  /**
   * A catch-up: the pages the replica lacks and the ones it must drop to hold the page set of
   * `commit` (which may be any commit past the replica's, not only the next one).
   */
  snapshot: boolean;
  pages: { id: number; bytes: Uint8Array }[];
  deletes: number[];
  manifest: Uint8Array;
  /** Not on the wire: ids of `pages` that came in REPLACE messages (they replace the replica's copies). */
  replaces?: number[];
}

export interface Status {
  type: typeof MSG_STATUS;
  commit: number;
  time: number;
}

export interface Applied {
  type: typeof MSG_APPLIED;
  applied: number;
}

/** Pages sent ahead of the COMMIT they belong to. */
export interface Pages {
  type: typeof MSG_PAGES;
  pages: { id: number; bytes: Uint8Array }[];
}

export type Message = Hello | CommitMessage | Status | Applied | Pages | Hello2 | Differ | Digests | Replace;

/** `m` as messages of about `perMessage` page bytes at most (plus the manifest, or one larger page): PAGES…, then COMMIT. */
export function splitCommit(m: CommitMessage, perMessage = PAGES_PER_MESSAGE_BYTES): Uint8Array[] {
  const out: Uint8Array[] = [];
  let batch: CommitMessage['pages'] = [];
  let n = 0;
  for (const p of m.pages) {
    if (n + p.bytes.length > perMessage && batch.length > 0) {
      out.push(encodeMessage({ type: MSG_PAGES, pages: batch }));
      batch = [];
      n = 0;
    }
    batch.push(p);
    n += p.bytes.length;
  }
  out.push(encodeMessage({ ...m, pages: batch }));
  return out;
}

/** Bounds on a message (the channel bounds a frame too). */
const MAX_PAGES = 1 << 20;
/** Ids per range of a HELLO2 (src/replication/_digests.ts RANGE_PAGES). */
const RANGE_PAGES = 4096;
const DIGEST_BYTES = 48;

class Writer {
  #parts: Uint8Array[] = [];
  u8(x: number): this {
    return this.#push(Uint8Array.of(x));
  }
  u32(x: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, x);
    return this.#push(b);
  }
  u64(x: number): this {
    const b = new Uint8Array(8);
    setU64(new DataView(b.buffer), 0, x);
    return this.#push(b);
  }
  bytes(b: Uint8Array): this {
    return this.u32(b.length).#push(b);
  }
  raw(b: Uint8Array): this {
    return this.#push(b);
  }
  #push(b: Uint8Array): this {
    this.#parts.push(b);
    return this;
  }
  done(): Uint8Array {
    return concatBytes(this.#parts);
  }
}

class Reader {
  #at = 0;
  readonly #view: DataView;
  constructor(readonly b: Uint8Array) {
    this.#view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }
  #need(n: number): void {
    if (this.#at + n > this.b.length) throw bad('is truncated');
  }
  u8(): number {
    this.#need(1);
    return this.b[this.#at++];
  }
  u32(): number {
    this.#need(4);
    const x = this.#view.getUint32(this.#at);
    this.#at += 4;
    return x;
  }
  u64(): number {
    this.#need(8);
    const x = getU64(this.#view, this.#at);
    this.#at += 8;
    if (x > Number.MAX_SAFE_INTEGER) throw bad('has an integer out of range');
    return x;
  }
  count(): number {
    const n = this.u32();
    if (n > MAX_PAGES) throw bad('lists too many pages');
    return n;
  }
  raw(n: number): Uint8Array {
    this.#need(n);
    const out = this.b.slice(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
  bytes(): Uint8Array {
    const n = this.u32();
    this.#need(n);
    const out = this.b.slice(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
  end(): void {
    if (this.#at !== this.b.length) throw bad('has trailing bytes');
  }
}

const bad = (what: string) => new PqdbError('CORRUPTION', `a replication message ${what}`);

export function encodeMessage(m: Message): Uint8Array {
  const w = new Writer().u8(m.type);
  switch (m.type) {
    case MSG_HELLO:
      w.u64(m.applied).u32(m.pageIds.length);
      for (const id of m.pageIds) w.u32(id);
      break;
    case MSG_COMMIT:
      w.u64(m.commit)
        .u64(m.time)
        .u8(m.snapshot ? 1 : 0)
        .u32(m.pages.length);
      for (const p of m.pages) w.u32(p.id).bytes(p.bytes);
      w.u32(m.deletes.length);
      for (const id of m.deletes) w.u32(id);
      w.bytes(m.manifest);
      break;
    case MSG_STATUS:
      w.u64(m.commit).u64(m.time);
      break;
    case MSG_APPLIED:
      w.u64(m.applied);
      break;
    case MSG_PAGES:
    case MSG_REPLACE:
      w.u32(m.pages.length);
      for (const p of m.pages) w.u32(p.id).bytes(p.bytes);
      break;
    case MSG_HELLO2:
      w.u64(m.applied).u32(m.pageIds.length);
      for (const id of m.pageIds) w.u32(id);
      w.u32(m.ranges.length / DIGEST_BYTES).raw(m.ranges);
      break;
    case MSG_DIFFER:
      w.u32(m.ranges.length);
      for (const r of m.ranges) w.u32(r);
      break;
    case MSG_DIGESTS:
      w.u32(m.range)
        .u32(m.digests.length / DIGEST_BYTES)
        .raw(m.digests);
      break;
  }
  return w.done();
}

/** @throws PqdbError CORRUPTION for anything but a well-formed message */
export function decodeMessage(b: Uint8Array): Message {
  const r = new Reader(b);
  const type = r.u8();
  let m: Message;
  if (type === MSG_HELLO) {
    const applied = r.u64();
    const pageIds = Array.from({ length: r.count() }, () => r.u32());
    m = { type, applied, pageIds };
  } else if (type === MSG_COMMIT) {
    const commit = r.u64();
    const time = r.u64();
    const flag = r.u8();
    if (flag > 1) throw bad('has a bad snapshot flag');
    const pages = Array.from({ length: r.count() }, () => ({ id: r.u32(), bytes: r.bytes() }));
    const deletes = Array.from({ length: r.count() }, () => r.u32());
    m = { type, commit, time, snapshot: flag === 1, pages, deletes, manifest: r.bytes() };
  } else if (type === MSG_STATUS) m = { type, commit: r.u64(), time: r.u64() };
  else if (type === MSG_APPLIED) m = { type, applied: r.u64() };
  else if (type === MSG_PAGES || type === MSG_REPLACE)
    m = { type, pages: Array.from({ length: r.count() }, () => ({ id: r.u32(), bytes: r.bytes() })) };
  else if (type === MSG_HELLO2) {
    const applied = r.u64();
    const pageIds = Array.from({ length: r.count() }, () => r.u32());
    const n = r.u32();
    if (n !== Math.ceil(pageIds.length / RANGE_PAGES)) throw bad('has a range count that does not fit its pages');
    m = { type, applied, pageIds, ranges: r.raw(n * DIGEST_BYTES) };
  } else if (type === MSG_DIFFER) {
    const k = r.u32();
    if (k > MAX_PAGES / RANGE_PAGES) throw bad('names too many ranges');
    const ranges = Array.from({ length: k }, () => r.u32());
    if (ranges.some((x, i) => i > 0 && x <= ranges[i - 1])) throw bad('names ranges out of order');
    m = { type, ranges };
  } else if (type === MSG_DIGESTS) {
    const range = r.u32();
    const n = r.u32();
    if (n < 1 || n > RANGE_PAGES) throw bad('has a range of a bad size');
    m = { type, range, digests: r.raw(n * DIGEST_BYTES) };
  } else throw bad(`has an unknown type ${type}`);
  r.end();
  return m;
}
