// Sealed records (DESIGN §4, §5; the byte layout is frozen in docs/format.md and its golden vectors).
//
//   data key   K  = HKDF_suite(ikm = root R_g, salt = salt_g,
//                              info = "pqdb data key v1" ‖ suite ‖ be32(g) ‖ SHA-384(canonical governance), 32)
//   header     H  = version(1) ‖ suite(1) ‖ flags(1) ‖ 0(1) ‖ be32(generation) ‖ be64(sequence)   (16 bytes)
//   AAD           = H ‖ be16(|collection|) ‖ collection ‖ be16(|id|) ‖ id
//   nonce         = 0^4 ‖ be64(sequence)                    (the write sequence is unique per store)
//   GCM-SIV suites: record = H ‖ AEAD_K(nonce, AAD, plaintext)            (ciphertext ‖ 16-byte tag)
//   GCM suite:      K_r = HKDF-Expand(K, "pqdb record key v1" ‖ be64(sequence), 32),
//                   C   = HKDF-Expand(K, "pqdb record commit v1" ‖ be64(sequence), 32),
//                   record = H ‖ C ‖ AES-256-GCM_{K_r}(nonce, AAD, plaintext)
//                   With a commit salt σ (16 random bytes a store draws per commit page and keeps
//                   once in the page, `address.salt`): K_r = HKDF-Expand(K, "pqdb record key v2" ‖
//                   σ ‖ be64(sequence), 32) and C likewise with "pqdb record commit v2", so a write
//                   sequence handed out again (after a failed commit, a torn tail, a restore) still
//                   gets a fresh key: no (key, nonce) pair repeats under AES-GCM. σ adds no byte to
//                   the record; a wrong σ gives a wrong key, so it is bound like the AAD.
// Nothing in a record depends on how the root was established (ML-KEM hybrid or classical X25519):
// the per-record cost of post-quantum key establishment is zero bytes.

import { bytes, integer } from '../_args';
import { utf8, utf8Length, writeUtf8 } from '../_utf8';
import { PqdbError } from '../errors';
import { hkdf, expand } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import { openOnce, sealOnce, type AeadIntoRecord, type KeyedAead } from '../kernels/aead';
import { suite as suiteOf, type Suite, type SuiteName } from './suites';
import { concatBytes, getU64 } from '../_bytes';

export const RECORD_VERSION = 1;
export const HEADER_BYTES = 16;
export const TAG_BYTES = 16;
export const COMMITMENT_BYTES = 32;
const MAX_SEQUENCE = Number.MAX_SAFE_INTEGER;
const enc = new TextEncoder();
const DATA_KEY_LABEL = enc.encode('pqdb data key v1');
const RECORD_KEY_LABEL = enc.encode('pqdb record key v1');
const COMMIT_LABEL = enc.encode('pqdb record commit v1');
const RECORD_KEY_LABEL_SALTED = enc.encode('pqdb record key v2');
const COMMIT_LABEL_SALTED = enc.encode('pqdb record commit v2');
/** Bytes of a commit salt. */
export const SALT_BYTES = 16;

/** Governance state captured with a write (DESIGN §9): small, flat, JSON-like values. */
export type Governance = Readonly<Record<string, string | number | boolean | null>>;

/**
 * Canonical encoding of a governance state: keys sorted, JSON with no spaces, UTF-8. Only strings,
 * finite numbers, booleans and null are allowed, so the encoding is unique.
 * @throws TypeError for nested or non-JSON values.
 */
export function canonicalGovernance(g: Governance | undefined): Uint8Array {
  return utf8(canonicalGovernanceText(g));
}

/** The canonical governance encoding as text (see canonicalGovernance). */
export function canonicalGovernanceText(g: Governance | undefined): string {
  if (g === undefined) return '{}';
  if (typeof g !== 'object' || g === null || Array.isArray(g))
    throw new TypeError('"governance" expected a flat object');
  const keys = Object.keys(g).sort();
  for (const k of keys) {
    const v = g[k];
    const ok =
      v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
    if (!ok) throw new TypeError(`"governance.${k}" expected a string, finite number, boolean or null`);
  }
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, g[k]])));
}

// Fields are written byte by byte: a DataView over a small new array's `.buffer` makes V8 move the
// array off its heap, which cost more than the rest of sealing a short record (measured: nonceOf,
// be64 and encodeHeader took 4 of 57 s of a 1,000,000-record migration's main-thread time).

/** Writes `v` (an integer below 2^53) big-endian into out[at..at+8). */
function putU64(out: Uint8Array, at: number, v: number): void {
  putU32(out, at, Math.floor(v / 2 ** 32));
  putU32(out, at + 4, v >>> 0);
}

/** Writes `v` (an integer below 2^32) big-endian into out[at..at+4). */
function putU32(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = (v >>> 16) & 0xff;
  out[at + 2] = (v >>> 8) & 0xff;
  out[at + 3] = v & 0xff;
}

function be32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  putU32(b, 0, n);
  return b;
}

/**
 * The data key of (root, suite, generation, governance): HKDF with the suite's hash. Never stored.
 * @throws RangeError for a root or salt of the wrong length, an unknown suite or a bad generation.
 */
export function deriveDataKey(
  root: Uint8Array,
  salt: Uint8Array,
  suiteName: SuiteName | number,
  generation: number,
  governance?: Governance | string,
): Uint8Array {
  bytes('root', root, 32);
  bytes('salt', salt, 32);
  const s = suiteOf(suiteName);
  integer('generation', generation, 0, 2 ** 32 - 1);
  const canonical = typeof governance === 'string' ? utf8(governance) : canonicalGovernance(governance);
  const info = concatBytes([DATA_KEY_LABEL, new Uint8Array([s.id]), be32(generation), sha384(canonical)]);
  return hkdf(s.kdf, root, salt, info, 32);
}

/** Where a record lives and when it was written: everything the header and AAD bind. */
export interface RecordAddress {
  collection: string;
  id: string;
  generation: number;
  /** The store-wide write sequence (the nonce is derived from it). */
  sequence: number;
  /** The commit salt σ of the page the record is sealed into (suites with subkeys; see above). */
  salt?: Uint8Array;
}

export interface RecordHeader {
  version: number;
  suite: Suite;
  flags: number;
  generation: number;
  sequence: number;
}

function encodeHeader(s: Suite, flags: number, generation: number, sequence: number): Uint8Array {
  const h = new Uint8Array(HEADER_BYTES);
  h[0] = RECORD_VERSION;
  h[1] = s.id;
  h[2] = flags;
  putU32(h, 4, generation);
  putU64(h, 8, sequence);
  return h;
}

/**
 * Parses a sealed record's header.
 * @throws PqdbError CORRUPTION for a short record; FORMAT_VERSION for an unknown version or suite.
 */
export function readHeader(record: Uint8Array): RecordHeader {
  bytes('record', record);
  if (record.length < HEADER_BYTES + TAG_BYTES)
    throw new PqdbError('CORRUPTION', `sealed record of ${record.length} bytes is shorter than a header and a tag`);
  if (record[0] !== RECORD_VERSION)
    throw new PqdbError(
      'FORMAT_VERSION',
      `sealed record version ${record[0]} is not supported (expected ${RECORD_VERSION})`,
    );
  let s: Suite;
  try {
    s = suiteOf(record[1]);
  } catch (cause) {
    throw new PqdbError('FORMAT_VERSION', `sealed record names unknown suite ${record[1]}`, { cause });
  }
  const dv = new DataView(record.buffer, record.byteOffset, HEADER_BYTES);
  return { version: record[0], suite: s, flags: record[2], generation: dv.getUint32(4), sequence: getU64(dv, 8) };
}

/** A record's header and its AEAD's associated data (sealRecord, recordAeadInto). */
function headerAndAad(s: Suite, flags: number, a: RecordAddress): { header: Uint8Array; aad: Uint8Array } {
  const header = encodeHeader(s, flags, a.generation, a.sequence);
  return { header, aad: aadOf(header, a.collection, a.id) };
}

function aadOf(header: Uint8Array, collection: string, id: string): Uint8Array {
  const cl = utf8Length(collection);
  const il = utf8Length(id);
  if (cl > 0xffff || il > 0xffff) throw new RangeError('collection and record ids are limited to 65,535 UTF-8 bytes');
  // One allocation: header ‖ be16(|c|) ‖ c ‖ be16(|id|) ‖ id.
  const out = new Uint8Array(HEADER_BYTES + 4 + cl + il);
  out.set(header);
  let at = HEADER_BYTES;
  out[at++] = cl >> 8;
  out[at++] = cl & 0xff;
  at = writeUtf8(collection, out, at);
  out[at++] = il >> 8;
  out[at++] = il & 0xff;
  writeUtf8(id, out, at);
  return out;
}

function nonceOf(sequence: number): Uint8Array {
  const n = new Uint8Array(12);
  putU64(n, 4, sequence);
  return n;
}

function recordKeys(
  s: Suite,
  dataKey: Uint8Array,
  sequence: number,
  salt?: Uint8Array,
): { key: Uint8Array; commitment?: Uint8Array } {
  if (!s.commitment) return { key: dataKey };
  if (salt !== undefined) bytes('salt', salt, SALT_BYTES);
  return {
    key: expand(
      s.kdf,
      dataKey,
      subkeyInfo(salt === undefined ? RECORD_KEY_LABEL : RECORD_KEY_LABEL_SALTED, salt, sequence),
      32,
    ),
    commitment: expand(
      s.kdf,
      dataKey,
      subkeyInfo(salt === undefined ? COMMIT_LABEL : COMMIT_LABEL_SALTED, salt, sequence),
      COMMITMENT_BYTES,
    ),
  };
}

/** label ‖ salt (when given) ‖ be64(sequence): the HKDF-Expand info of a record's subkeys. */
function subkeyInfo(label: Uint8Array, salt: Uint8Array | undefined, sequence: number): Uint8Array {
  const saltBytes = salt === undefined ? 0 : SALT_BYTES;
  const info = new Uint8Array(label.length + saltBytes + 8);
  info.set(label);
  if (salt !== undefined) info.set(salt, label.length);
  putU64(info, label.length + saltBytes, sequence);
  return info;
}

function checkAddress(a: RecordAddress): void {
  if (typeof a !== 'object' || a === null)
    throw new TypeError('"address" expected { collection, id, generation, sequence }');
  if (typeof a.collection !== 'string') throw new TypeError('"collection" expected a string');
  if (typeof a.id !== 'string') throw new TypeError('"id" expected a string');
  integer('generation', a.generation, 0, 2 ** 32 - 1);
  integer('sequence', a.sequence, 0, MAX_SEQUENCE);
  if (a.salt !== undefined && (!(a.salt instanceof Uint8Array) || a.salt.length !== SALT_BYTES))
    throw new TypeError(`"salt" expected Uint8Array of length ${SALT_BYTES}`);
}

/** Bytes a sealed record of `plaintextLength` bytes takes under `suite`. */
export function sealedLength(suiteName: SuiteName | number, plaintextLength: number): number {
  const s = suiteOf(suiteName);
  return HEADER_BYTES + (s.commitment ? COMMITMENT_BYTES : 0) + plaintextLength + TAG_BYTES;
}

/** A data key, optionally with a keyed AEAD already expanded for it (used by suites without subkeys). */
export type DataKey = Uint8Array | { key: Uint8Array; aead: KeyedAead };

/**
 * Seals `plaintext` for `address` with the data key (from deriveDataKey) under `suite`, into a new
 * array or into `output`.
 * @throws TypeError/RangeError for malformed arguments.
 */
export function sealRecord(
  suiteName: SuiteName | number,
  dataKeyOrKeyed: DataKey,
  address: RecordAddress,
  plaintext: Uint8Array,
  flags = 0,
  output?: Uint8Array,
): Uint8Array {
  const keyed = dataKeyOrKeyed instanceof Uint8Array ? undefined : dataKeyOrKeyed.aead;
  const dataKey = dataKeyOrKeyed instanceof Uint8Array ? dataKeyOrKeyed : dataKeyOrKeyed.key;
  const s = suiteOf(suiteName);
  bytes('dataKey', dataKey, 32);
  checkAddress(address);
  bytes('plaintext', plaintext);
  integer('flags', flags, 0, 255);
  const { header, aad } = headerAndAad(s, flags, address);
  const { key, commitment } = recordKeys(s, dataKey, address.sequence, address.salt);
  try {
    // Written into `output` (exactly sealedLength bytes, e.g. its slot in a page) when given.
    const out =
      output === undefined
        ? new Uint8Array(sealedLength(s.id, plaintext.length))
        : bytes('output', output, sealedLength(s.id, plaintext.length));
    out.set(header);
    let at = HEADER_BYTES;
    if (commitment) {
      out.set(commitment, at);
      at += COMMITMENT_BYTES;
    }
    // A per-record subkey (wiped below), or a data key with no keyed AEAD given, goes through the
    // one-shot form, which keeps no copy of the key.
    if (keyed !== undefined && key === dataKey)
      keyed.encrypt(nonceOf(address.sequence), plaintext, aad, out.subarray(at));
    else sealOnce(s.aead, key, nonceOf(address.sequence), aad, plaintext, out.subarray(at));
    return out;
  } finally {
    if (key !== dataKey) key.fill(0);
  }
}

/**
 * For a suite without per-record subkeys (the record is sealed under the data key itself): writes
 * the record's header into `output` (exactly sealedLength bytes, e.g. its slot in a page) and
 * returns what its AEAD seals, into the rest of `output`, so that a commit seals a page's records
 * together (KeyedAead.encryptInto). Undefined for a suite with subkeys (seal it with sealRecord).
 * The result's bytes are the same as sealRecord's.
 * @throws TypeError/RangeError for malformed arguments.
 */
export function recordAeadInto(
  suiteName: SuiteName | number,
  address: RecordAddress,
  plaintext: Uint8Array,
  output: Uint8Array,
): AeadIntoRecord | undefined {
  const s = suiteOf(suiteName);
  if (s.commitment) return undefined;
  checkAddress(address);
  bytes('plaintext', plaintext);
  bytes('output', output, sealedLength(s.id, plaintext.length));
  const { header, aad } = headerAndAad(s, 0, address);
  output.set(header);
  return {
    nonce: nonceOf(address.sequence),
    aad,
    data: plaintext,
    out: output.subarray(HEADER_BYTES),
  };
}

/**
 * Opens a sealed record stored at (collection, id); `keyFor(suite, generation)` returns the data
 * key the header calls for; `salt`, the commit salt it was sealed with, if any. With `output` (at
 * least the plaintext's length, not overlapping `record`), the plaintext is written at its start
 * and returned as a view of it: a pass opening many records reuses one buffer instead of an
 * allocation each (beyond 64 bytes V8 gives every new array a backing store of its own to collect).
 * @throws PqdbError AUTH_FAILED when the record, its header or its place were altered or the key is
 * wrong; CORRUPTION/FORMAT_VERSION for unreadable headers; RangeError for an `output` too short.
 */
export function openRecord(
  record: Uint8Array,
  collection: string,
  id: string,
  keyFor: (suite: Suite, generation: number) => DataKey,
  salt?: Uint8Array,
  output?: Uint8Array,
): { plaintext: Uint8Array; header: RecordHeader } {
  const header = readHeader(record);
  const s = header.suite;
  const given = keyFor(s, header.generation);
  const keyed = given instanceof Uint8Array ? undefined : given.aead;
  const dataKey = bytes('dataKey', given instanceof Uint8Array ? given : given.key, 32);
  const aad = aadOf(record.subarray(0, HEADER_BYTES), collection, id);
  const { key, commitment } = recordKeys(s, dataKey, header.sequence, salt);
  try {
    let at = HEADER_BYTES;
    if (commitment) {
      if (record.length < HEADER_BYTES + COMMITMENT_BYTES + TAG_BYTES)
        throw new PqdbError('AUTH_FAILED', 'authentication failed');
      let d = 0;
      for (let i = 0; i < COMMITMENT_BYTES; i++) d |= commitment[i] ^ record[HEADER_BYTES + i];
      if (d !== 0) throw new PqdbError('AUTH_FAILED', 'authentication failed');
      at += COMMITMENT_BYTES;
    }
    const body = record.subarray(at);
    let into: Uint8Array | undefined;
    if (output !== undefined) {
      const length = Math.max(0, body.length - TAG_BYTES);
      if (!(output instanceof Uint8Array) || output.length < length)
        throw new RangeError(`"output" expected Uint8Array of length >= ${length}`);
      into = output.subarray(0, length);
    }
    if (keyed !== undefined && key === dataKey)
      return { plaintext: keyed.decrypt(nonceOf(header.sequence), body, aad, into), header };
    return { plaintext: openOnce(s.aead, key, nonceOf(header.sequence), aad, body, into), header };
  } finally {
    if (key !== dataKey) key.fill(0);
  }
}
