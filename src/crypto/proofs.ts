// Verifiable batches (DESIGN §7): record leaves, signed checkpoints and self-verifying sealed-record
// exports. The byte layouts are documented in docs/format.md.
//
//   leaf data   = "PQDL" ‖ 1 ‖ store id (16) ‖ str16(collection) ‖ str16(id) ‖ be64(sequence) ‖
//                 suite (1) ‖ be32(generation) ‖ SHA-384(sealed record = header ‖ ciphertext) ‖
//                 SHA-384(canonical governance)
//   (DESIGN §7's fields plus the governance hash: the data key depends on the governance state, so
//   an export carries it, and binding it in the leaf makes every byte of an export verified)
//   checkpoint  = "PQDC" ‖ 1 ‖ store id (16) ‖ be32(generation) ‖ be64(tree size) ‖ root (48) ‖
//                 previous checkpoint hash (48; zero for the first)                 (129 bytes)
//   signed      = checkpoint ‖ signer key id (16) ‖ ML-DSA-87 signature (4,627) over the checkpoint
//                 with the FIPS 204 context "pqdb checkpoint v1"
//   export      = "PQDX" ‖ 1 ‖ be16(|leaf data|) ‖ leaf data ‖ be32(|record|) ‖ record ‖
//                 be16(|governance|) ‖ canonical governance ‖ be64(leaf index) ‖ proof count (1) ‖
//                 proof hashes (48 each) ‖ signed checkpoint
// `verifySealed` needs nothing but the export and the signer's public key.

import { bytes } from '../_args';
import { PqdbError } from '../errors';
import { utf8, utf8Length, writeUtf8 } from '../_utf8';
import { sha384 } from '../kernels/sha2';
import { ml_dsa87 } from '../kernels/mldsa';
import { leafHash, verifyInclusion, HASH_BYTES } from './merkle';
import { sha384Many, leafHashes } from '../kernels/merkle-hash';
import { readHeader, openRecord, SALT_BYTES, type DataKey, type RecordHeader } from './record';
import type { Suite } from './suites';
import { equalBytes, getU64 } from '../_bytes';

const CONTEXT = utf8('pqdb checkpoint v1');
export const CHECKPOINT_BYTES = 129;
export const SIGNATURE_BYTES = 4627;
export const KEY_ID_BYTES = 16;
export const SIGNED_CHECKPOINT_BYTES = CHECKPOINT_BYTES + KEY_ID_BYTES + SIGNATURE_BYTES;
const dec = new TextDecoder('utf-8', { fatal: true });

export interface Checkpoint {
  storeId: Uint8Array;
  generation: number;
  size: number;
  root: Uint8Array;
  previous: Uint8Array;
}

function putU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v >>> 24;
  b[at + 1] = v >>> 16;
  b[at + 2] = v >>> 8;
  b[at + 3] = v;
}
function putU64(b: Uint8Array, at: number, v: number): void {
  putU32(b, at, Math.floor(v / 2 ** 32));
  putU32(b, at + 4, v >>> 0);
}
function readU64(b: Uint8Array, at: number): number {
  return getU64(new DataView(b.buffer, b.byteOffset), at);
}

/** SHA-384 of canonical governance texts: few distinct states recur across many records. */
const governanceHashes = new Map<string, Uint8Array>();
function governanceHash(governance: string): Uint8Array {
  let h = governanceHashes.get(governance);
  if (h === undefined) {
    h = sha384(utf8(governance));
    if (governanceHashes.size >= 1024) governanceHashes.clear();
    governanceHashes.set(governance, h);
  }
  return h;
}

/** The canonical leaf data of a sealed record (DESIGN §7). */
export function leafData(
  storeId: Uint8Array,
  collection: string,
  id: string,
  sequence: number,
  suite: number,
  generation: number,
  record: Uint8Array,
  governance: string,
  salt: Uint8Array = NO_SALT,
  blind: Uint8Array = NO_BLIND,
): Uint8Array {
  const out = new Uint8Array(leafBytes(collection, id));
  const gov = governanceHash(governance);
  writeLeaf(out, storeId, collection, id, sequence, suite, generation, sha384(record), gov, salt, blind);
  return out;
}

/** Bytes of a leaf's data for (collection, id). */
const leafBytes = (collection: string, id: string) =>
  5 + 16 + 2 + utf8Length(collection) + 2 + utf8Length(id) + 8 + 1 + 4 + 2 * HASH_BYTES + SALT_BYTES + BLIND_BYTES;

/** Leaf kinds: a stored record version, and a delete (so dropping a delete-only commit shows). */
const LEAF_PUT = 1;
const LEAF_DELETE = 2;
/** The commit salt of leaves computed without one (16 zero bytes). */
const NO_SALT = new Uint8Array(SALT_BYTES);
/**
 * Bytes of a leaf's blind: a value only holders of the store's secret can compute (the engine takes
 * an HMAC of the commit salt under a key from the store secret), so the leaf hashes a log page
 * publishes cannot be matched against guessed ids or governance states. An export carries its
 * leaf, blind included, so verifySealed needs nothing else.
 */
export const BLIND_BYTES = 32;
const NO_BLIND = new Uint8Array(BLIND_BYTES);
const ZERO_HASH = new Uint8Array(HASH_BYTES);

function writeLeaf(
  out: Uint8Array,
  storeId: Uint8Array,
  collection: string,
  id: string,
  sequence: number,
  suite: number,
  generation: number,
  recordHash: Uint8Array,
  govHash: Uint8Array,
  salt: Uint8Array,
  blind: Uint8Array,
  kind = LEAF_PUT,
): void {
  const cl = utf8Length(collection);
  const il = utf8Length(id);
  out.set([0x50, 0x51, 0x44, 0x4c, kind]);
  out.set(bytes('storeId', storeId, 16), 5);
  let at = 21;
  out[at++] = cl >> 8;
  out[at++] = cl & 0xff;
  at = writeUtf8(collection, out, at);
  out[at++] = il >> 8;
  out[at++] = il & 0xff;
  at = writeUtf8(id, out, at);
  putU64(out, at, sequence);
  at += 8;
  out[at++] = suite;
  putU32(out, at, generation);
  at += 4;
  out.set(recordHash, at);
  out.set(govHash, at + HASH_BYTES);
  out.set(bytes('salt', salt, SALT_BYTES), at + 2 * HASH_BYTES);
  out.set(bytes('blind', blind, BLIND_BYTES), at + 2 * HASH_BYTES + SALT_BYTES);
}

/**
 * One operation of a batch whose leaf hashes are computed together (recordLeafHashes): a stored
 * record, or a delete when `record` is undefined (its leaf has kind 2, suite 0 and zero hashes).
 */
export interface LeafInput {
  collection: string;
  id: string;
  sequence: number;
  suite: number;
  generation: number;
  record?: Uint8Array;
  governance: string;
  /** The commit salt of the page the operation is in. */
  salt?: Uint8Array;
  /** The leaf's blind (BLIND_BYTES). */
  blind?: Uint8Array;
}

/**
 * Leaf hashes of many records in two kernel passes (SHA-384 of every record, then every leaf), the
 * leaf data packed into one buffer: what a commit or a store opening does for all its records.
 */
export function recordLeafHashes(storeId: Uint8Array, items: readonly LeafInput[]): Uint8Array {
  const puts = items.filter((x) => x.record !== undefined);
  const recordHashes = sha384Many(puts.map((x) => x.record!));
  let p = 0;
  const sizes = items.map((x) => leafBytes(x.collection, x.id));
  const all = new Uint8Array(sizes.reduce((a, b) => a + b, 0));
  const views: Uint8Array[] = [];
  let at = 0;
  items.forEach((x, i) => {
    const v = all.subarray(at, at + sizes[i]);
    const put = x.record !== undefined;
    const recordHash = put ? recordHashes.subarray(p * HASH_BYTES, ++p * HASH_BYTES) : ZERO_HASH;
    const govHash = put ? governanceHash(x.governance) : ZERO_HASH;
    const kind = put ? LEAF_PUT : LEAF_DELETE;
    const salt = x.salt ?? NO_SALT;
    const blind = x.blind ?? NO_BLIND;
    const suite = put ? x.suite : 0;
    writeLeaf(v, storeId, x.collection, x.id, x.sequence, suite, x.generation, recordHash, govHash, salt, blind, kind);
    views.push(v);
    at += sizes[i];
  });
  return leafHashes(views);
}

/** The leaf hash SHA-384(0x00 ‖ leaf data) of a sealed record. */
export function recordLeafHash(
  storeId: Uint8Array,
  collection: string,
  id: string,
  sequence: number,
  suite: number,
  generation: number,
  record: Uint8Array,
  governance: string,
  salt: Uint8Array = NO_SALT,
  blind: Uint8Array = NO_BLIND,
): Uint8Array {
  return leafHash(leafData(storeId, collection, id, sequence, suite, generation, record, governance, salt, blind));
}

export function encodeCheckpoint(c: Checkpoint): Uint8Array {
  const out = new Uint8Array(CHECKPOINT_BYTES);
  out.set([0x50, 0x51, 0x44, 0x43, 1]);
  out.set(bytes('storeId', c.storeId, 16), 5);
  putU32(out, 21, c.generation);
  putU64(out, 25, c.size);
  out.set(bytes('root', c.root, HASH_BYTES), 33);
  out.set(bytes('previous', c.previous, HASH_BYTES), 81);
  return out;
}

export function decodeCheckpoint(b: Uint8Array): Checkpoint | undefined {
  if (b.length < CHECKPOINT_BYTES || b[0] !== 0x50 || b[1] !== 0x51 || b[2] !== 0x44 || b[3] !== 0x43 || b[4] !== 1)
    return undefined;
  return {
    storeId: b.slice(5, 21),
    generation: new DataView(b.buffer, b.byteOffset).getUint32(21),
    size: readU64(b, 25),
    root: b.slice(33, 81),
    previous: b.slice(81, 129),
  };
}

/** The 16-byte id a signed checkpoint names its signer by: SHA-384(public key)[0, 16). */
export function signerKeyId(publicKey: Uint8Array): Uint8Array {
  return sha384(bytes('publicKey', publicKey)).slice(0, KEY_ID_BYTES);
}

/** Signs a checkpoint with ML-DSA-87 (hedged). */
export function signCheckpoint(c: Checkpoint, signerSecretKey: Uint8Array, signerPublicKey: Uint8Array): Uint8Array {
  const msg = encodeCheckpoint(c);
  const out = new Uint8Array(SIGNED_CHECKPOINT_BYTES);
  out.set(msg);
  out.set(signerKeyId(signerPublicKey), CHECKPOINT_BYTES);
  out.set(ml_dsa87.sign(msg, signerSecretKey, { context: CONTEXT }), CHECKPOINT_BYTES + KEY_ID_BYTES);
  return out;
}

/**
 * Checkpoints that verified recently, with the exact key they verified under: verifying many exports
 * of one checkpoint costs one ML-DSA-87 verification, then a byte comparison each. Only successes
 * are kept, matched on every byte of both the signed checkpoint and the key.
 */
const verified: { signed: Uint8Array; publicKey: Uint8Array }[] = [];
const VERIFIED_CACHE = 8;

/** Verifies a signed checkpoint; the decoded checkpoint, or undefined when anything is wrong. */
export function verifyCheckpoint(signed: Uint8Array, signerPublicKey: Uint8Array): Checkpoint | undefined {
  if (!(signed instanceof Uint8Array) || signed.length !== SIGNED_CHECKPOINT_BYTES) return undefined;
  const c = decodeCheckpoint(signed);
  if (c === undefined) return undefined;
  const id = signerKeyId(signerPublicKey);
  for (let i = 0; i < KEY_ID_BYTES; i++) if (id[i] !== signed[CHECKPOINT_BYTES + i]) return undefined;
  const hit = verified.findIndex((v) => equalBytes(v.signed, signed) && equalBytes(v.publicKey, signerPublicKey));
  if (hit >= 0) {
    verified.unshift(...verified.splice(hit, 1));
    return c;
  }
  const ok = ml_dsa87.verify(
    signed.subarray(CHECKPOINT_BYTES + KEY_ID_BYTES),
    signed.subarray(0, CHECKPOINT_BYTES),
    signerPublicKey,
    { context: CONTEXT },
  );
  if (!ok) return undefined;
  verified.unshift({ signed: signed.slice(), publicKey: signerPublicKey.slice() });
  if (verified.length > VERIFIED_CACHE) verified.pop();
  return c;
}

/** SHA-384 of a signed checkpoint: the `previous` link of the next one. */
export function checkpointHash(signed: Uint8Array): Uint8Array {
  return sha384(signed);
}

export interface SealedExport {
  leafData: Uint8Array;
  record: Uint8Array;
  governance: string;
  leafIndex: number;
  proof: Uint8Array[];
  signedCheckpoint: Uint8Array;
  /** The commit salt the record was sealed with (16 bytes; needed to open suite-3 records). */
  salt: Uint8Array;
}

/** Sealed export format: 2 adds the commit salt, after the signed checkpoint. */
const EXPORT_VERSION = 2;

export function encodeExport(e: SealedExport): Uint8Array {
  const gov = utf8(e.governance);
  const size =
    5 +
    2 +
    e.leafData.length +
    4 +
    e.record.length +
    2 +
    gov.length +
    8 +
    1 +
    e.proof.length * HASH_BYTES +
    e.signedCheckpoint.length +
    SALT_BYTES;
  const out = new Uint8Array(size);
  out.set([0x50, 0x51, 0x44, 0x58, EXPORT_VERSION]);
  let at = 5;
  out[at++] = e.leafData.length >> 8;
  out[at++] = e.leafData.length & 0xff;
  out.set(e.leafData, at);
  at += e.leafData.length;
  putU32(out, at, e.record.length);
  at += 4;
  out.set(e.record, at);
  at += e.record.length;
  out[at++] = gov.length >> 8;
  out[at++] = gov.length & 0xff;
  out.set(gov, at);
  at += gov.length;
  putU64(out, at, e.leafIndex);
  at += 8;
  out[at++] = e.proof.length;
  for (const p of e.proof) {
    out.set(p, at);
    at += HASH_BYTES;
  }
  out.set(e.signedCheckpoint, at);
  out.set(bytes('salt', e.salt, SALT_BYTES), at + e.signedCheckpoint.length);
  return out;
}

function decodeExport(b: Uint8Array): SealedExport | undefined {
  try {
    if (b.length < 8 || b[0] !== 0x50 || b[1] !== 0x51 || b[2] !== 0x44 || b[3] !== 0x58 || b[4] !== EXPORT_VERSION)
      return undefined;
    let at = 5;
    const ll = (b[at] << 8) | b[at + 1];
    at += 2;
    const leaf = b.slice(at, at + ll);
    at += ll;
    const rl = new DataView(b.buffer, b.byteOffset).getUint32(at);
    at += 4;
    const record = b.slice(at, at + rl);
    at += rl;
    const gl = (b[at] << 8) | b[at + 1];
    at += 2;
    const governance = dec.decode(b.subarray(at, at + gl));
    at += gl;
    const leafIndex = readU64(b, at);
    at += 8;
    const n = b[at++];
    const proof: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      proof.push(b.slice(at, at + HASH_BYTES));
      at += HASH_BYTES;
    }
    const signedCheckpoint = b.slice(at, b.length - SALT_BYTES);
    const salt = b.slice(b.length - SALT_BYTES);
    if (
      leaf.length !== ll ||
      record.length !== rl ||
      at + SALT_BYTES > b.length ||
      proof.some((p) => p.length !== HASH_BYTES)
    )
      return undefined;
    return { leafData: leaf, record, governance, leafIndex, proof, signedCheckpoint, salt };
  } catch {
    return undefined;
  }
}

/** Parses leaf data back into its fields. */
function readLeaf(leaf: Uint8Array):
  | {
      storeId: Uint8Array;
      collection: string;
      id: string;
      sequence: number;
      suite: number;
      generation: number;
      recordHash: Uint8Array;
      governanceHash: Uint8Array;
      salt: Uint8Array;
    }
  | undefined {
  try {
    if (leaf[0] !== 0x50 || leaf[1] !== 0x51 || leaf[2] !== 0x44 || leaf[3] !== 0x4c || leaf[4] !== 1) return undefined;
    let at = 21;
    const cl = (leaf[at] << 8) | leaf[at + 1];
    at += 2;
    const collection = dec.decode(leaf.subarray(at, at + cl));
    at += cl;
    const il = (leaf[at] << 8) | leaf[at + 1];
    at += 2;
    const id = dec.decode(leaf.subarray(at, at + il));
    at += il;
    const sequence = readU64(leaf, at);
    at += 8;
    const suite = leaf[at++];
    const generation = new DataView(leaf.buffer, leaf.byteOffset).getUint32(at);
    at += 4;
    if (at + 2 * HASH_BYTES + SALT_BYTES + BLIND_BYTES !== leaf.length) return undefined;
    return {
      storeId: leaf.slice(5, 21),
      collection,
      id,
      sequence,
      suite,
      generation,
      recordHash: leaf.slice(at, at + HASH_BYTES),
      governanceHash: leaf.slice(at + HASH_BYTES, at + 2 * HASH_BYTES),
      salt: leaf.slice(at + 2 * HASH_BYTES, at + 2 * HASH_BYTES + SALT_BYTES),
    };
  } catch {
    return undefined;
  }
}

export interface VerifiedSealed {
  valid: boolean;
  /** Why verification failed (absent when valid). */
  reason?: string;
  checkpoint?: Checkpoint;
  collection?: string;
  id?: string;
  sequence?: number;
  suite?: number;
  generation?: number;
}

/**
 * Verifies a sealed-record export offline: the ML-DSA-87 checkpoint signature under
 * `signerPublicKey`, the record's leaf (bound to the record bytes, its place and its header), and the
 * inclusion proof against the checkpoint's root. Never throws on bad bytes: returns valid false.
 * @throws TypeError when the arguments are not byte arrays.
 */
export function verifySealed(exported: Uint8Array, signerPublicKey: Uint8Array): VerifiedSealed {
  bytes('exported', exported);
  bytes('signerPublicKey', signerPublicKey);
  const fail = (reason: string): VerifiedSealed => ({ valid: false, reason });
  const e = decodeExport(exported);
  if (e === undefined) return fail('not a well-formed pqdb sealed export');
  const checkpoint = verifyCheckpoint(e.signedCheckpoint, signerPublicKey);
  if (checkpoint === undefined) return fail('the checkpoint signature does not verify under this key');
  const leaf = readLeaf(e.leafData);
  if (leaf === undefined) return fail('the leaf data is malformed');
  const recordHash = sha384(e.record);
  const govHash = sha384(utf8(e.governance));
  let d = 0;
  for (let i = 0; i < HASH_BYTES; i++)
    d |= (recordHash[i] ^ leaf.recordHash[i]) | (govHash[i] ^ leaf.governanceHash[i]);
  for (let i = 0; i < SALT_BYTES; i++) d |= e.salt[i] ^ leaf.salt[i]; // the commit salt is bound by the leaf
  if (d !== 0) return fail('the record or its governance state does not match its leaf');
  let header: RecordHeader;
  try {
    header = readHeader(e.record);
  } catch {
    return fail('the record header is malformed');
  }
  if (header.sequence !== leaf.sequence || header.suite.id !== leaf.suite || header.generation !== leaf.generation)
    return fail('the record header does not match its leaf');
  if (leaf.generation !== checkpoint.generation || leaf.storeId.some((x, i) => x !== checkpoint.storeId[i]))
    return fail('the leaf belongs to another store or generation');
  if (e.leafIndex >= checkpoint.size) return fail('the leaf index lies outside the checkpoint');
  let included = false;
  try {
    included = verifyInclusion(e.leafData, e.leafIndex, checkpoint.size, e.proof, checkpoint.root);
  } catch {
    included = false;
  }
  if (!included) return fail('the inclusion proof does not verify against the checkpoint root');
  return {
    valid: true,
    checkpoint,
    collection: leaf.collection,
    id: leaf.id,
    sequence: leaf.sequence,
    suite: leaf.suite,
    generation: leaf.generation,
  };
}

/**
 * Decrypts a (verified) sealed export: `dataKeyFor(suite, generation, governance)` supplies the data
 * key, e.g. from a store's key ring or a recipient's unwrapped root. Returns the record's plaintext
 * (its typed encoding) and where it came from.
 * @throws PqdbError AUTH_FAILED for a wrong key or altered bytes; CORRUPTION for a malformed export.
 */
export function openSealed(
  exported: Uint8Array,
  dataKeyFor: (suite: Suite, generation: number, governance: string) => DataKey,
): { plaintext: Uint8Array; collection: string; id: string; header: RecordHeader } {
  const e = decodeExport(bytes('exported', exported));
  const leaf = e && readLeaf(e.leafData);
  if (e === undefined || leaf === undefined) throw new PqdbError('CORRUPTION', 'not a well-formed pqdb sealed export');
  const { plaintext, header } = openRecord(
    e.record,
    leaf.collection,
    leaf.id,
    (suite, generation) => dataKeyFor(suite, generation, e.governance),
    e.salt,
  );
  return { plaintext, collection: leaf.collection, id: leaf.id, header };
}
