// Commit, log and index pages as the engine writes them into a PageStore (which sees only these
// opaque bytes). Layouts are documented in docs/format.md.
//
// Commit page (version 2):
//   "PQDP" ‖ 2 ‖ be32(generation) ‖ be32(|sealed index|) ‖ salt(16) ‖ sealed index ‖ record blobs
//   sealed index = AES-256-GCM-SIV(K_page_g, nonce = 0^8 ‖ be32(page id), aad = first 9 bytes ‖ be32(page id) ‖ salt)
//   salt = 16 random bytes per commit page, the commit salt of its records (src/crypto/record.ts)
//   K_page_g     = HKDF-SHA384(R_g, salt_g, "pqdb page key v1", 32)
//   index        = varint(n) then per operation:
//                  kind(1: put, 2: delete, 3: put by a migration's copy) ‖ str(collection) ‖ str(id) ‖ be64(sequence)
//                  put and copy: str(canonical governance) ‖ varint(blob offset) ‖ varint(blob length)
//   str(s) = varint(UTF-8 length) ‖ UTF-8; record blobs are sealed records (src/crypto/record.ts).
// The index is sealed, so collection names, ids and governance states are not readable from the
// medium; each record blob authenticates itself and its place (AAD), and the index entry's sequence
// must equal the blob header's (no swapping in an older version of a record).
//
// The manifest's framing is in src/engine/manifest/sealing.ts.
//
// Log page (leaf hashes a checkpoint added to a generation's Merkle log; public, not sealed):
//   "PQDG" ‖ 1 ‖ be32(generation) ‖ be64(from) ‖ be64(to) ‖ leaf hashes [from, to) (48 each)
// Lexical index page (a collection's search index as of a checkpoint):
//   "PQDI" ‖ 1 ‖ be32(generation) ‖ be32(n) ‖ n × (be32(|part|) ‖ part), part i =
//   AES-256-GCM-SIV(K_lex_g, nonce = be32(i) ‖ 0^4 ‖ be32(page id),
//                   aad = first 9 bytes ‖ be32(page id) ‖ str(collection) ‖ be32(i) ‖ be32(n))
//   of the serialized index's bytes [i·256 KiB, (i+1)·256 KiB)
//   K_lex_g = HKDF-SHA384(R_g, salt_g, "pqdb lexical index key v1", 32); the plaintext is
//   LexicalIndex.serialize() (terms and ids), so no token is stored in the clear.

import { PqdbError } from '../errors';
import { gcmsiv, type AeadIntoRecord, type KeyedAead } from '../kernels/aead';
import { hkdf } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import { decodeUtf8, utf8Length, writeUtf8 } from '../_utf8';
import { getU64, setU64 } from '../_bytes';
import { SALT_BYTES } from '../crypto/record';

const enc = new TextEncoder();
const PAGE_MAGIC = [0x50, 0x51, 0x44, 0x50]; // PQDP
const LOG_MAGIC = [0x50, 0x51, 0x44, 0x47]; // PQDG
const INDEX_MAGIC = [0x50, 0x51, 0x44, 0x49]; // PQDI
const CHECKPOINT_MAGIC = [0x50, 0x51, 0x44, 0x43]; // PQDC: a signed checkpoint (src/crypto/proofs.ts) is its own page
/** PQDF: a log's history floor (src/engine/history-floor.ts). */
const FLOOR_MAGIC = [0x50, 0x51, 0x44, 0x46];
/** PQDD: a part of a persisted key directory (src/engine/directory/pages.ts). */
export const DIRECTORY_MAGIC = [0x50, 0x51, 0x44, 0x44];
const HASH_BYTES = 48;
/** Magic, version and be32(generation): the part of every page head that names its kind and key. */
const KIND_HEAD_BYTES = 9;
/** Commit page head: kind head ‖ be32(|sealed index|) ‖ commit salt. */
const PAGE_HEAD_BYTES = 13 + SALT_BYTES;
/** The commit page format (2: with a commit salt). */
export const COMMIT_PAGE_VERSION = 2;
/** Log page head: kind head ‖ be64(from) ‖ be64(to). */
const LOG_HEAD_BYTES = 25;
/** Index page head: kind head ‖ be32(number of parts). */
const INDEX_HEAD_BYTES = 13;
/** AES-256-GCM-SIV tag. */
const TAG_BYTES = 16;
export const PAGE_VERSION = 1;

export type PageOp =
  | { kind: 'put'; collection: string; id: string; sequence: number; governance: string; blob: Uint8Array }
  | { kind: 'delete'; collection: string; id: string; sequence: number };

/** Where a put's record blob sits in its page. */
export type IndexedOp =
  | {
      kind: 'put';
      collection: string;
      id: string;
      sequence: number;
      governance: string;
      offset: number;
      length: number;
      copy?: boolean;
    }
  | { kind: 'delete'; collection: string; id: string; sequence: number };

export function pageKey(root: Uint8Array, salt: Uint8Array): Uint8Array {
  return hkdf(sha384, root, salt, enc.encode('pqdb page key v1'), 32);
}

export function lexicalKey(root: Uint8Array, salt: Uint8Array): Uint8Array {
  return hkdf(sha384, root, salt, enc.encode('pqdb lexical index key v1'), 32);
}

/** What kind of page `page` is, from its magic (undefined for none of pqdb's). */
export function pageKind(
  page: Uint8Array,
): 'commit' | 'log' | 'index' | 'checkpoint' | 'directory' | 'floor' | undefined {
  const is = (magic: number[]) => page.length >= 4 && magic.every((m, i) => page[i] === m);
  return is(PAGE_MAGIC)
    ? 'commit'
    : is(LOG_MAGIC)
      ? 'log'
      : is(INDEX_MAGIC)
        ? 'index'
        : is(CHECKPOINT_MAGIC)
          ? 'checkpoint'
          : is(DIRECTORY_MAGIC)
            ? 'directory'
            : is(FLOOR_MAGIC)
              ? 'floor'
              : undefined;
}

/** A log page holding leaves [from, from + hashes.length / 48) of a generation's log. */
export async function encodeLogPage(
  generation: number,
  from: number,
  hashes: Uint8Array,
  pause: () => Promise<void> = async () => undefined,
): Promise<Uint8Array> {
  const out = new Uint8Array(LOG_HEAD_BYTES + hashes.length);
  out.set(LOG_MAGIC);
  out[4] = PAGE_VERSION;
  const dv = new DataView(out.buffer);
  dv.setUint32(5, generation);
  setU64(dv, 9, from);
  setU64(dv, 17, from + hashes.length / HASH_BYTES);
  // Copied a quarter megabyte per step: 100,000 leaves are 4.8 MB, and touching that much fresh
  // memory at once holds the event loop for tens of milliseconds.
  for (let at = 0; at < hashes.length; at += LOG_COPY_STEP) {
    if (at > 0) await pause();
    out.set(hashes.subarray(at, at + LOG_COPY_STEP), LOG_HEAD_BYTES + at);
  }
  return out;
}

const LOG_COPY_STEP = 256 * 1024;

/**
 * The leaf hashes of a log page (a view into `page`), checked against the generation and range
 * [from, to) the manifest names. @throws PqdbError CORRUPTION, FORMAT_VERSION
 */
export function decodeLogPage(page: Uint8Array, generation: number, from: number, to: number): Uint8Array {
  if (page.length < LOG_HEAD_BYTES || pageKind(page) !== 'log')
    throw new PqdbError('CORRUPTION', 'not a pqdb log page');
  if (page[4] !== PAGE_VERSION) throw new PqdbError('FORMAT_VERSION', `log page version ${page[4]} is not supported`);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  if (dv.getUint32(5) !== generation)
    throw new PqdbError('CORRUPTION', `log page is of generation ${dv.getUint32(5)}, expected ${generation}`);
  if (getU64(dv, 9) !== from || getU64(dv, 17) !== to || page.length !== LOG_HEAD_BYTES + (to - from) * HASH_BYTES) {
    throw new PqdbError('CORRUPTION', `log page does not hold the leaves [${from}, ${to}) its manifest entry names`);
  }
  return page.subarray(LOG_HEAD_BYTES);
}

/** The generation and leaf range a log page's head names (unchecked), or undefined for a short page. */
export function logPageRange(page: Uint8Array): { generation: number; from: number; to: number } | undefined {
  if (page.length < LOG_HEAD_BYTES || pageKind(page) !== 'log') return undefined;
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  return { generation: dv.getUint32(5), from: getU64(dv, 9), to: getU64(dv, 17) };
}

/** Bytes of serialized index per sealed part of an index page: each part seals in a few milliseconds. */
export const INDEX_PART_BYTES = 256 * 1024;

function indexAad(head: Uint8Array, pageId: number, collection: string, part: number, parts: number): Uint8Array {
  const aad = new Out();
  aad.push(head.subarray(0, 9));
  aad.push(be32(pageId));
  aad.str(collection);
  aad.push(be32(part));
  aad.push(be32(parts));
  return aad.bytes();
}

const be32 = (v: number) => Uint8Array.of(v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);

/** Nonce of part `part` of index page `pageId`: be32(part) ‖ 0^4 ‖ be32(page id), unique under K_lex. */
function indexNonce(pageId: number, part: number): Uint8Array {
  const n = new Uint8Array(12);
  n.set(be32(part), 0);
  n.set(be32(pageId), 8);
  return n;
}

/**
 * Seals a collection's serialized lexical index into an index page, one sealed part per element of
 * `parts` (LexicalIndex.serializeParts; a single array is cut into parts of INDEX_PART_BYTES),
 * awaiting `pause()` between parts so a large index does not hold the event loop. Each part is
 * sealed in place into the page, so no step copies the whole page.
 */
export async function encodeIndexPage(
  pageId: number,
  generation: number,
  key: Uint8Array,
  collection: string,
  parts: Uint8Array | readonly Uint8Array[],
  pause: () => Promise<void> = async () => undefined,
): Promise<Uint8Array> {
  if (parts instanceof Uint8Array) {
    const whole = parts;
    parts = Array.from({ length: Math.max(1, Math.ceil(whole.length / INDEX_PART_BYTES)) }, (_, i) =>
      whole.subarray(i * INDEX_PART_BYTES, (i + 1) * INDEX_PART_BYTES),
    );
  }
  if (parts.length === 0) throw new RangeError('"parts" expected at least one part');
  const head = new Uint8Array(KIND_HEAD_BYTES);
  head.set(INDEX_MAGIC);
  head[4] = PAGE_VERSION;
  new DataView(head.buffer).setUint32(5, generation);
  const out = new Uint8Array(INDEX_HEAD_BYTES + parts.reduce((n, p) => n + 4 + p.length + TAG_BYTES, 0));
  out.set(head);
  const dv = new DataView(out.buffer);
  dv.setUint32(9, parts.length);
  let at = INDEX_HEAD_BYTES;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) await pause();
    const len = parts[i].length + TAG_BYTES;
    dv.setUint32(at, len);
    gcmsiv(key, indexNonce(pageId, i), indexAad(head, pageId, collection, i, parts.length)).encrypt(
      parts[i],
      out.subarray(at + 4, at + 4 + len),
    );
    at += 4 + len;
  }
  return out;
}

/** The generation an index page was sealed under. @throws PqdbError CORRUPTION, FORMAT_VERSION */
export function indexPageGeneration(page: Uint8Array): number {
  if (page.length < INDEX_HEAD_BYTES || pageKind(page) !== 'index')
    throw new PqdbError('CORRUPTION', 'not a pqdb lexical index page');
  if (page[4] !== PAGE_VERSION) throw new PqdbError('FORMAT_VERSION', `index page version ${page[4]} is not supported`);
  return new DataView(page.buffer, page.byteOffset).getUint32(5);
}

/** Opens an index page of `collection` (every part, in order). @throws PqdbError AUTH_FAILED, CORRUPTION */
export function decodeIndexPage(pageId: number, key: Uint8Array, collection: string, page: Uint8Array): Uint8Array {
  const steps = decodeIndexPageSteps(pageId, key, collection, page);
  for (let r = steps.next(); ; r = steps.next()) if (r.done === true) return r.value;
}

/** decodeIndexPage, awaiting `pause()` between parts. */
export async function decodeIndexPageAsync(
  pageId: number,
  key: Uint8Array,
  collection: string,
  page: Uint8Array,
  pause: () => Promise<void>,
): Promise<Uint8Array> {
  const steps = decodeIndexPageSteps(pageId, key, collection, page);
  for (let r = steps.next(); ; r = steps.next()) {
    if (r.done === true) return r.value;
    await pause();
  }
}

function* decodeIndexPageSteps(
  pageId: number,
  key: Uint8Array,
  collection: string,
  page: Uint8Array,
): Generator<void, Uint8Array> {
  indexPageGeneration(page);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  const parts = dv.getUint32(9);
  // The framing first (lengths only), then each part opened in place into the output.
  const lens: number[] = [];
  let at = INDEX_HEAD_BYTES;
  for (let i = 0; i < parts; i++) {
    if (at + 4 > page.length) throw new PqdbError('CORRUPTION', 'lexical index page is truncated');
    const len = dv.getUint32(at);
    if (at + 4 + len > page.length || len < TAG_BYTES)
      throw new PqdbError('CORRUPTION', 'lexical index page is truncated');
    lens.push(len);
    at += 4 + len;
  }
  if (at !== page.length || parts === 0) throw new PqdbError('CORRUPTION', 'lexical index page has trailing bytes');
  const out = new Uint8Array(lens.reduce((n, len) => n + len - TAG_BYTES, 0));
  let from = INDEX_HEAD_BYTES;
  let to = 0;
  try {
    for (let i = 0; i < parts; i++) {
      const len = lens[i];
      gcmsiv(key, indexNonce(pageId, i), indexAad(page, pageId, collection, i, parts)).decrypt(
        page.subarray(from + 4, from + 4 + len),
        out.subarray(to, to + len - TAG_BYTES),
      );
      from += 4 + len;
      to += len - TAG_BYTES;
      yield;
    }
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/** A growable byte buffer (one allocation per doubling, not one per field). */
class Out {
  buf = new Uint8Array(256);
  n = 0;
  private room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    b.set(this.buf.subarray(0, this.n));
    this.buf = b;
  }
  push(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.n++] = b;
  }
  varint(v: number): void {
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.n++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.n++] = v;
  }
  str(s: string): void {
    const len = utf8Length(s);
    this.varint(len);
    this.room(len);
    this.n = writeUtf8(s, this.buf, this.n);
  }
  u64(v: number): void {
    this.room(8);
    setU64(new DataView(this.buf.buffer, this.buf.byteOffset + this.n, 8), 0, v);
    this.n += 8;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.n);
  }
}

class In {
  p = 0;
  constructor(readonly b: Uint8Array) {}
  fail(): never {
    throw new PqdbError('CORRUPTION', 'commit page index does not decode');
  }
  byte(): number {
    if (this.p >= this.b.length) this.fail();
    return this.b[this.p++];
  }
  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const x = this.byte();
      v += (x & 0x7f) * scale;
      if (x < 0x80) return v;
      scale *= 0x80;
    }
    return this.fail();
  }
  str(): string {
    const n = this.varint();
    if (this.p + n > this.b.length) this.fail();
    let s: string;
    try {
      s = decodeUtf8(this.b, this.p, this.p + n);
    } catch {
      this.fail(); // not UTF-8
    }
    this.p += n;
    return s;
  }
  u64(): number {
    const b = this.b;
    const p = this.p;
    if (p + 8 > b.length) this.fail();
    this.p += 8;
    return (
      ((b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) * 2 ** 32 +
      (((b[p + 4] << 24) | (b[p + 5] << 16) | (b[p + 6] << 8) | b[p + 7]) >>> 0)
    );
  }
}

function pageNonce(pageId: number): Uint8Array {
  const n = new Uint8Array(12);
  new DataView(n.buffer).setUint32(8, pageId);
  return n;
}

/** The sealed index's AAD: kind head ‖ be32(page id) ‖ commit salt. */
function indexAadOf(head: Uint8Array, pageId: number): Uint8Array {
  const aad = new Uint8Array(KIND_HEAD_BYTES + 4 + SALT_BYTES);
  aad.set(head.subarray(0, KIND_HEAD_BYTES));
  new DataView(aad.buffer).setUint32(KIND_HEAD_BYTES, pageId);
  aad.set(head.subarray(PAGE_HEAD_BYTES - SALT_BYTES, PAGE_HEAD_BYTES), KIND_HEAD_BYTES + 4);
  return aad;
}

/** The commit salt of a commit page (a view; the page was checked by decodePage or pageGeneration). */
export function pageSalt(page: Uint8Array): Uint8Array {
  return page.subarray(PAGE_HEAD_BYTES - SALT_BYTES, PAGE_HEAD_BYTES);
}

/** An operation to write: puts give their sealed length and a function sealing into their slot. */
export type PageWriteOp =
  | {
      kind: 'put';
      collection: string;
      id: string;
      sequence: number;
      governance: string;
      length: number;
      /** Seals the record into `slot`, with the page's commit salt. */
      seal: (slot: Uint8Array, salt: Uint8Array) => void;
      /**
       * Where the record can be sealed together with its neighbours (no per-record subkey):
       * `prepare` writes its header into `slot` and gives what the AEAD seals; consecutive ops of
       * one `group` (suite, generation, governance) are sealed by one `aead().encryptInto`, the AEAD
       * looked up when the group is sealed (a key cache may evict between lookups).
       */
      batch?: { group: string; prepare: (slot: Uint8Array) => AeadIntoRecord; aead: () => KeyedAead };
      copy?: boolean;
    }
  | { kind: 'delete'; collection: string; id: string; sequence: number };

/**
 * Builds a commit page of generation `generation` holding `ops`: the page is allocated once and each
 * record is sealed straight into its slot. Returns the page and where each record landed. The
 * commit salt is `salt` when given (records sealed ahead with it: Draft.commitSalt), else fresh
 * random bytes.
 */
export function encodePage(
  pageId: number,
  generation: number,
  key: Uint8Array,
  ops: readonly PageWriteOp[],
  salt?: Uint8Array,
): { bytes: Uint8Array; index: IndexedOp[] } {
  if (salt !== undefined && (!(salt instanceof Uint8Array) || salt.length !== SALT_BYTES))
    throw new TypeError(`"salt" expected Uint8Array of length ${SALT_BYTES}`);
  const index = new Out();
  index.varint(ops.length);
  let blobOffset = 0;
  const located: IndexedOp[] = [];
  for (const op of ops) {
    index.byte(op.kind === 'delete' ? 2 : op.copy === true ? 3 : 1);
    index.str(op.collection);
    index.str(op.id);
    index.u64(op.sequence);
    if (op.kind === 'put') {
      index.str(op.governance);
      index.varint(blobOffset);
      index.varint(op.length);
      located.push({
        kind: 'put',
        collection: op.collection,
        id: op.id,
        sequence: op.sequence,
        governance: op.governance,
        offset: blobOffset,
        length: op.length,
        ...(op.copy === true ? { copy: true } : {}),
      });
      blobOffset += op.length;
    } else located.push(op);
  }
  const head = new Uint8Array(PAGE_HEAD_BYTES);
  head.set(PAGE_MAGIC);
  head[4] = COMMIT_PAGE_VERSION;
  const dv = new DataView(head.buffer);
  const pageSaltBytes = head.subarray(PAGE_HEAD_BYTES - SALT_BYTES);
  // Fresh per page: a reused sequence still gets a fresh record key.
  if (salt === undefined) globalThis.crypto.getRandomValues(pageSaltBytes);
  else pageSaltBytes.set(salt);
  dv.setUint32(5, generation);
  const aad = indexAadOf(head, pageId);
  const sealed = gcmsiv(key, pageNonce(pageId), aad).encrypt(index.bytes());
  dv.setUint32(9, sealed.length);
  const base = PAGE_HEAD_BYTES + sealed.length;
  const page = new Uint8Array(base + blobOffset);
  page.set(head);
  page.set(sealed, PAGE_HEAD_BYTES);
  // Records sealed in order; a run of records of one group goes through one encryptInto.
  let group: { key: string; aead: () => KeyedAead; records: AeadIntoRecord[] } | undefined;
  const flush = (): void => {
    if (group !== undefined) group.aead().encryptInto(group.records);
    group = undefined;
  };
  let i = 0;
  for (const op of ops) {
    const at = located[i++];
    if (op.kind === 'put' && at.kind === 'put') {
      at.offset += base; // absolute within the page, as decodePage reports
      const slot = page.subarray(at.offset, at.offset + at.length);
      if (op.batch === undefined) {
        flush();
        op.seal(slot, pageSaltBytes);
        continue;
      }
      if (group !== undefined && group.key !== op.batch.group) flush();
      group ??= { key: op.batch.group, aead: op.batch.aead, records: [] };
      group.records.push(op.batch.prepare(slot));
    }
  }
  flush();
  return { bytes: page, index: located };
}

/** The generation a page was written under (read before its key is known). */
export function pageGeneration(page: Uint8Array): number {
  if (page.length < PAGE_HEAD_BYTES || PAGE_MAGIC.some((m, i) => page[i] !== m))
    throw new PqdbError('CORRUPTION', 'not a pqdb commit page');
  if (page[4] !== COMMIT_PAGE_VERSION)
    throw new PqdbError('FORMAT_VERSION', `commit page version ${page[4]} is not supported`);
  return new DataView(page.buffer, page.byteOffset).getUint32(5);
}

/**
 * Opens a commit page's index. Blob offsets are absolute within `page`.
 * @throws PqdbError AUTH_FAILED for a page altered or under another key; CORRUPTION for bad framing.
 */
export function decodePage(pageId: number, key: Uint8Array, page: Uint8Array): IndexedOp[] {
  pageGeneration(page);
  const sealedLen = new DataView(page.buffer, page.byteOffset).getUint32(9);
  if (PAGE_HEAD_BYTES + sealedLen > page.length) throw new PqdbError('CORRUPTION', 'commit page is truncated');
  const aad = indexAadOf(page, pageId);
  const index = new In(
    gcmsiv(key, pageNonce(pageId), aad).decrypt(page.subarray(PAGE_HEAD_BYTES, PAGE_HEAD_BYTES + sealedLen)),
  );
  const base = PAGE_HEAD_BYTES + sealedLen;
  const n = index.varint();
  const ops: IndexedOp[] = [];
  let end = base; // records lie back to back in operation order, as encodePage writes them
  for (let i = 0; i < n; i++) {
    const kind = index.byte();
    const collection = index.str();
    const id = index.str();
    const sequence = index.u64();
    if (kind === 1 || kind === 3) {
      const governance = index.str();
      const offset = base + index.varint();
      const length = index.varint();
      if (offset !== end || offset + length > page.length)
        throw new PqdbError('CORRUPTION', 'commit page record lies outside its place in the page');
      end = offset + length;
      ops.push({
        kind: 'put',
        collection,
        id,
        sequence,
        governance,
        offset,
        length,
        ...(kind === 3 ? { copy: true } : {}),
      });
    } else if (kind === 2) {
      ops.push({ kind: 'delete', collection, id, sequence });
    } else index.fail();
  }
  if (index.p !== index.b.length) index.fail();
  if (end !== page.length) throw new PqdbError('CORRUPTION', 'commit page has bytes after its records');
  return ops;
}
