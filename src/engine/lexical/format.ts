// The lexical index's serialized form: encodeSteps writes it (in parts, for sealing part by part),
// decodeSteps parses and checks it into an empty Postings. Both run in bounded steps (generators
// that yield) so the store can encode or load a large index without holding the event loop.
//
// Serialized form (all varints unsigned LEB128, canonical; str(s) = varint(UTF-8 length) ‖ UTF-8):
//   "PQLX" ‖ version(1) ‖ varint(#fields) ‖ str(field)*                     fields in UTF-8 byte order
//   ‖ varint(#terms) ‖ (varint(shared) ‖ varint(|suffix|) ‖ suffix)*         front-coded, UTF-8 byte order
//   ‖ varint(#docs) ‖ (str(id) ‖ varint(k) ‖ (varint(term index delta) ‖ varint(tf)) × k)*   ids in UTF-8 byte order
//   ‖ le32(CRC-32C of everything before)
// Sorting every list makes the bytes a function of the indexed content alone (not of update order).
//
// Security caveats: the bytes hold plaintext terms and ids, so callers seal them before they reach
// storage. The CRC catches accidents, not tampering (sealing authenticates). Decoding checks every
// count against the bytes left before allocating, and rejects non-canonical input.

import { PqdbError } from '../../errors';
import { readVarint } from '../../_varint';
import { utf8 } from '../../_utf8';
import { crc32c } from '../../_crc32c';
import { ValueWriter } from '../codec';
import { MIN_CAPACITY } from './arena';
import { sortCodePointsSteps } from './code-point-order';
import type { Postings } from './postings';
import { MAX_TOKEN_BYTES, MAX_TOKEN_CODE_POINTS, MAX_TOKEN_UNITS } from './tokenizer';

const FORMAT_VERSION = 1;
const MAGIC = [0x50, 0x51, 0x4c, 0x58]; // PQLX
/** Offset of the version byte (right after the magic). */
const VERSION_AT = MAGIC.length;
/** The trailing le32 CRC-32C. */
const CRC_BYTES = 4;
/** Smallest part size serializeParts accepts. */
export const MIN_PART_BYTES = 1024;
/** Largest part size serializeParts accepts. */
export const MAX_PART_BYTES = 2 ** 30;
/** Part size when the parts are joined into one array at once (serialize). */
export const WHOLE_PART_BYTES = 1 << 20;
/** Room a part's buffer has beyond the part, for the entry that crosses its end. */
const PART_SLACK_BYTES = 4096;
/**
 * A doc's (term rank, frequency) pairs are sorted as rank·RANK_SHIFT + min(f, RANK_SHIFT - 1) in a
 * float64 (exact: ranks are below 2^31); a doc with a larger frequency looks those up again.
 */
const RANK_SHIFT = 2 ** 21;
/** First size of the reused array of packed pairs (grown to a doc's number of terms). */
const PACKED_PAIRS = 64;
// Between two yields: terms ranked, terms encoded or decoded, ids encoded or decoded, docs whose
// postings are filled in, terms checked for order, bytes checksummed, int32s copied or zeroed.
const RANKS_PER_STEP = 4096;
const TERMS_PER_STEP = 1024;
const IDS_PER_STEP = 256;
const FILLS_PER_STEP = 1024;
const ORDER_CHECKS_PER_STEP = 8192;
const CRC_STEP_BYTES = 1 << 20;
const COPY_STEP_INTS = 1 << 18; // a megabyte
// Fewest bytes one element takes (lower bounds: a count above bytes-left / min is corrupt).
const MIN_FIELD_BYTES = 2;
const MIN_TERM_BYTES = 2;
const MIN_DOC_BYTES = 4;
const MIN_PAIR_BYTES = 2;

const dec = new TextDecoder('utf-8', { fatal: true });

/**
 * A ValueWriter cut into parts of `size` bytes as it fills (call cut() between entries), with a
 * running CRC-32C: no buffer larger than a part (plus one entry) is allocated, grown or copied.
 */
class PartWriter {
  readonly parts: Uint8Array[] = [];
  readonly w = new ValueWriter();
  #crc = 0;

  constructor(readonly size: number) {
    this.w.buf = new Uint8Array(size + PART_SLACK_BYTES);
  }

  /** Moves every full part out of the writer. */
  cut(): void {
    const w = this.w;
    while (w.n >= this.size) {
      const part = w.buf.subarray(0, this.size);
      this.#crc = crc32c(part, this.#crc);
      this.parts.push(part);
      const next = new Uint8Array(Math.max(this.size + PART_SLACK_BYTES, w.n - this.size));
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

/**
 * The serialized form of `p` indexing `fields` (sorted), in parts of `partBytes` (the last one
 * shorter), yielding between bounded steps. `p` must not change until the generator is done.
 */
export function* encodeSteps(p: Postings, fields: readonly string[], partBytes: number): Generator<void, Uint8Array[]> {
  const terms = yield* sortCodePointsSteps(p.termStr.filter((_, t) => p.pLen[t] > 0));
  // Term number → its place in `terms`.
  const rank = new Int32Array(p.termStr.length);
  for (let i = 0; i < terms.length; i++) {
    if (i % RANKS_PER_STEP === RANKS_PER_STEP - 1) yield;
    rank[p.termNo.get(terms[i])!] = i;
  }
  yield;
  const out = new PartWriter(partBytes);
  const w = out.w;
  w.bytes(Uint8Array.from(MAGIC));
  w.byte(FORMAT_VERSION);
  w.varint(fields.length);
  for (const f of fields) w.str(f);
  w.varint(terms.length);
  let prev: Uint8Array = new Uint8Array(0);
  let written = 0;
  for (const s of terms) {
    if (++written % TERMS_PER_STEP === 0) yield;
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
  const ids = yield* sortCodePointsSteps(p.idOf.filter((id) => id !== undefined));
  w.varint(ids.length);
  // Per id, (term rank, frequency) pairs in term order, packed as rank·RANK_SHIFT + f into one reused
  // Float64Array so sorting is numeric and allocates nothing (a frequency this large never occurs
  // in practice; it is written through the slow path all the same).
  let packed = new Float64Array(PACKED_PAIRS);
  const post = p.post.data;
  const dterm = p.dterm.data;
  const freq = (at: number): number => post[p.pAt[dterm[at]] + 3 * dterm[at + 1] + 1];
  let step = 0;
  for (const id of ids) {
    if (++step % IDS_PER_STEP === 0) yield;
    const d = p.ids.get(id)!;
    out.cut();
    w.str(id);
    const at = p.dAt[d];
    const k = p.dLen[d];
    if (packed.length < k) packed = new Float64Array(2 * k);
    let big = false;
    for (let j = 0; j < k; j++) {
      const f = freq(at + 2 * j);
      if (f >= RANK_SHIFT) big = true;
      packed[j] = rank[dterm[at + 2 * j]] * RANK_SHIFT + Math.min(f, RANK_SHIFT - 1);
    }
    const view = packed.subarray(0, k).sort();
    w.varint(k);
    let prevRank = 0;
    for (let j = 0; j < k; j++) {
      const r = Math.floor(view[j] / RANK_SHIFT);
      let f = view[j] - r * RANK_SHIFT;
      if (big && f === RANK_SHIFT - 1) {
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
 * Parses serialized `bytes` (kept unaltered, not retained) into `p`, a new empty Postings for an
 * index of the fields `indexed` (sorted), yielding between bounded steps (a few hundred ids, a
 * megabyte of copying).
 * @throws PqdbError CORRUPTION for bytes that are not a canonical serialization (checksum,
 * structure, order, UTF-8); FORMAT_VERSION for an unknown version; RangeError when `indexed`
 * differs from the fields the bytes were written for.
 */
export function* decodeSteps(bytes: Uint8Array, indexed: readonly string[], p: Postings): Generator<void, void> {
  const corrupt = (why: string) => new PqdbError('CORRUPTION', `lexical index does not decode: ${why}`);
  if (bytes.length < MAGIC.length + 1 + CRC_BYTES) throw corrupt('truncated');
  const end = bytes.length - CRC_BYTES;
  const stored = (bytes[end] | (bytes[end + 1] << 8) | (bytes[end + 2] << 16) | (bytes[end + 3] << 24)) >>> 0;
  let crc = 0;
  for (let at = 0; at < end; at += CRC_STEP_BYTES) {
    crc = crc32c(bytes.subarray(at, Math.min(end, at + CRC_STEP_BYTES)), crc);
    if (end > CRC_STEP_BYTES) yield;
  }
  if (crc !== stored) throw corrupt('checksum mismatch');
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) throw corrupt('bad magic');
  if (bytes[VERSION_AT] !== FORMAT_VERSION)
    throw new PqdbError('FORMAT_VERSION', `lexical index format ${bytes[VERSION_AT]} is not supported`);
  let pos = VERSION_AT + 1;
  const varint = (): number => {
    // One byte (a value below 128) is the common case: read it without the general decoder.
    if (pos < end && bytes[pos] < 0x80) return bytes[pos++];
    const [v, next] = readVarint(bytes, pos, end, corrupt);
    pos = next;
    return v;
  };
  const raw = (n: number): Uint8Array => {
    if (n > end - pos) throw corrupt('truncated');
    return bytes.subarray(pos, (pos += n));
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
    if (n * min > end - pos) throw corrupt('count exceeds the data');
    return n;
  };

  const fields: string[] = [];
  let prev: Uint8Array = new Uint8Array(0);
  for (let i = count(MIN_FIELD_BYTES); i > 0; i--) {
    const b = raw(varint());
    if (b.length === 0 || (fields.length > 0 && !increasing(prev, b))) throw corrupt('fields out of order');
    fields.push(text(b, 'a field name'));
    prev = b;
  }
  if (fields.length !== indexed.length || fields.some((f, i) => f !== indexed[i])) {
    throw new RangeError(
      `"options.text" expected the indexed fields ${JSON.stringify(fields)}, got ${JSON.stringify(indexed)}`,
    );
  }
  // Term number = place in the serialized (code point) order.
  const nTerms = count(MIN_TERM_BYTES);
  // `buf` holds the previous term: a term keeps its `shared` first bytes and writes its suffix
  // after them. A term of at most 64 code points takes at most 256 bytes.
  const buf = new Uint8Array(MAX_TOKEN_BYTES);
  let prevLen = 0;
  for (let t = 0; t < nTerms; t++) {
    if (t % TERMS_PER_STEP === TERMS_PER_STEP - 1) yield;
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
      (s.length > MAX_TOKEN_UNITS || Array.from(s).length > MAX_TOKEN_CODE_POINTS)
    )
      throw corrupt('term too long');
    p.termStr.push(s);
    p.termNo.set(s, t);
    prevLen = n;
  }
  // Docs: their (term, frequency) pairs go to p.dterm first, counting postings per term; then each
  // term gets a region of exactly its size and the pairs become (term, entry number).
  const nDocs = count(MIN_DOC_BYTES);
  p.dAt = new Int32Array(nDocs);
  p.dLen = new Int32Array(nDocs);
  p.key0 = new Float64Array(nDocs);
  p.key1 = new Float64Array(nDocs);
  const counts = new Int32Array(nTerms);
  const dt = p.dterm;
  // Room for every pair at once (each takes at least two bytes): doubling as it fills would copy
  // tens of megabytes in single steps, and a large zeroed allocation costs nothing until touched.
  dt.data = new Int32Array(end - pos + 2);
  prev = new Uint8Array(0);
  yield;
  for (let d = 0; d < nDocs; d++) {
    if (d % IDS_PER_STEP === IDS_PER_STEP - 1) yield;
    const idBytes = raw(varint());
    if (idBytes.length === 0 || (d > 0 && !increasing(prev, idBytes))) throw corrupt('ids out of order');
    prev = idBytes;
    const id = text(idBytes, 'an id');
    const k = count(MIN_PAIR_BYTES);
    if (k === 0) throw corrupt(`id "${id}" has no terms`);
    p.newDoc(id);
    const pairAt = dt.alloc(2 * k, () => undefined);
    p.dAt[d] = pairAt;
    p.dLen[d] = k;
    const pairs = dt.data;
    let t = 0;
    for (let j = 0; j < k; j++) {
      const delta = varint();
      if (j > 0 && delta === 0) throw corrupt('term indices out of order');
      t += delta;
      const f = varint();
      if (t >= nTerms || f === 0) throw corrupt('bad posting');
      if (f > 0x7fffffff) throw corrupt('term frequency out of range');
      pairs[pairAt + 2 * j] = t;
      pairs[pairAt + 2 * j + 1] = f;
      counts[t]++;
    }
  }
  if (pos !== end) throw corrupt('trailing bytes');
  // The room taken for the pairs was an upper bound (about twice what WordNet needs): keep what
  // is used and an eighth more, copied a megabyte per step.
  const room = dt.end + (dt.end >>> 3) + MIN_CAPACITY;
  if (dt.data.length > room) {
    const exact = new Int32Array(room);
    for (let i = 0; i < dt.end; i += COPY_STEP_INTS) {
      exact.set(dt.data.subarray(i, Math.min(dt.end, i + COPY_STEP_INTS)), i);
      yield;
    }
    dt.data = exact;
  }
  p.pAt = new Int32Array(nTerms);
  p.pLen = new Int32Array(nTerms);
  p.pCap = counts;
  let total = 0;
  for (let t = 0; t < nTerms; t++) {
    if (counts[t] === 0) throw corrupt('a term without postings');
    p.pAt[t] = total;
    total += 3 * counts[t];
  }
  const post = new Int32Array(total);
  // Touched in order, a megabyte per step: the first writes of the scattered fill below would
  // otherwise fault in every page of the array within one step (15–20 ms per 4 MB measured).
  for (let i = 0; i < total; i += COPY_STEP_INTS) {
    post.fill(0, i, Math.min(total, i + COPY_STEP_INTS));
    yield;
  }
  p.post.data = post;
  p.post.end = total;
  const pairs = dt.data;
  for (let d = 0; d < nDocs; d++) {
    if (d % FILLS_PER_STEP === FILLS_PER_STEP - 1) yield;
    const pairAt = p.dAt[d];
    for (let j = 0, k = p.dLen[d]; j < k; j++) {
      const t = pairs[pairAt + 2 * j];
      const e = p.pLen[t]++;
      const o = p.pAt[t] + 3 * e;
      post[o] = d;
      post[o + 1] = pairs[pairAt + 2 * j + 1];
      post[o + 2] = j;
      pairs[pairAt + 2 * j + 1] = e;
    }
  }
  p.liveTerms = nTerms;
  yield;
  // Terms come in code point order, which is also the UTF-16 order of `sorted` unless two of them
  // differ first at an astral character: then they wait in `fresh` for the first prefix search.
  let ordered = true;
  for (let t = 1; t < nTerms && ordered; t++) {
    if (t % ORDER_CHECKS_PER_STEP === 0) yield;
    if (!(p.termStr[t - 1] < p.termStr[t])) ordered = false;
  }
  if (ordered) p.sorted = Array.from({ length: nTerms }, (_, t) => t);
  else for (let t = 0; t < nTerms; t++) p.fresh.add(t);
}
