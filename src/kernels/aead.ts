// AES-256-GCM (NIST SP 800-38D) and AES-256-GCM-SIV (RFC 8452) facade over the WebAssembly kernel.
// A record that fits the kernel buffers is sealed or opened in one call; larger messages stream
// through the kernel in chunks inside one synchronous call. The keyed form keeps its expanded key in
// JavaScript memory (wiped by destroy()) and copies it into the kernel only for the call that uses
// it; the one-shot form keeps no copy of the key at all: each call expands the caller's key inside
// the kernel, and the kernel's copy is wiped before the call returns.

import { bytes, copyBytes } from '../_args';
import { PqdbError } from '../errors';
import { aeadKernel, type AeadKernel } from '../wasm/aead';

export const KEY_BYTES = 32;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

export type AeadMode = 'gcm' | 'gcmsiv';
const MODE_ID: Record<AeadMode, number> = { gcm: 0, gcmsiv: 1 };

/** Largest plaintext: SP 800-38D §5.2.1.1 (2^39 − 256 bits) and RFC 8452 §6 (2^36 bytes). */
const MAX_PLAINTEXT: Record<AeadMode, number> = { gcm: 2 ** 36 - 32, gcmsiv: 2 ** 36 };
/** Largest AAD: 2^61 − 1 bytes for GCM, 2^36 for GCM-SIV. */
const MAX_AAD: Record<AeadMode, number> = { gcm: 2 ** 61 - 1, gcmsiv: 2 ** 36 };

const EMPTY = new Uint8Array(0);

/** One record for the batch forms. */
export interface AeadRecord {
  nonce: Uint8Array;
  /** Plaintext when sealing, ciphertext ‖ tag when opening. */
  data: Uint8Array;
  aad?: Uint8Array;
}

function authFailed(): PqdbError {
  return new PqdbError('AUTH_FAILED', 'authentication failed');
}

/** GCM nonces other than 12 bytes (allowed by SP 800-38D, hashed into J0) are capped here. */
const GCM_MAX_NONCE = 4096;

function checkNonce(mode: AeadMode, nonce: unknown, name = 'nonce'): Uint8Array {
  if (mode === 'gcmsiv') return bytes(name, nonce, NONCE_BYTES);
  const n = bytes(name, nonce);
  if (n.length < 1 || n.length > GCM_MAX_NONCE) {
    throw new RangeError(
      `"${name}" expected Uint8Array of length 1..${GCM_MAX_NONCE} (12 recommended), got length=${n.length}`,
    );
  }
  return n;
}

function checkAad(mode: AeadMode, aad: unknown): Uint8Array {
  if (aad === undefined) return EMPTY;
  const a = bytes('aad', aad);
  if (a.length > MAX_AAD[mode]) throw new RangeError(`"aad" longer than ${MAX_AAD[mode]} bytes`);
  return a;
}

/**
 * The array a result is written to: the caller's `output` (exactly `len` bytes; may be the input
 * itself for in-place work) or a new one. Writing into a caller's buffer avoids an allocation per
 * record, which in V8 costs more than sealing a short record once it exceeds 64 bytes.
 */
function target(output: Uint8Array | undefined, len: number): Uint8Array {
  if (output === undefined) return new Uint8Array(len);
  return bytes('output', output, len);
}

/** Expands a 32-byte key into the kernel's internal format (a fresh array the caller must wipe). */
export function expandKey(key: Uint8Array): Uint8Array {
  bytes('key', key, KEY_BYTES);
  const k = aeadKernel();
  k.mem.set(key, k.IN);
  k.x.aes_expand_key();
  const rk = k.mem.slice(k.OUT, k.OUT + k.AES_RK_BYTES);
  k.mem.fill(0, k.OUT, k.OUT + k.AES_RK_BYTES);
  return rk;
}

/** Zeroes the expanded key the kernel holds at AES_RK (after every call that placed one there). */
function wipeRk(k: AeadKernel): void {
  k.mem.fill(0, k.AES_RK, k.AES_RK + k.AES_RK_BYTES);
}

function withRk<T>(k: AeadKernel, rk: Uint8Array, fn: () => T): T {
  k.mem.set(rk, k.AES_RK);
  try {
    return fn();
  } finally {
    wipeRk(k);
  }
}

/**
 * Runs `fn` with `key` expanded straight into the kernel's AES_RK region: the expanded key never
 * exists in JavaScript memory, and the kernel's copy is wiped before this returns (the one-shot form).
 */
function withKey<T>(k: AeadKernel, key: Uint8Array, fn: () => T): T {
  bytes('key', key, KEY_BYTES); // again at each use: a detached buffer must not expand as a zero key
  try {
    k.mem.set(key, k.IN);
    k.x.aes_expand_key(); // wipes IN
    k.mem.copyWithin(k.AES_RK, k.OUT, k.OUT + k.AES_RK_BYTES);
    k.mem.fill(0, k.OUT, k.OUT + k.AES_RK_BYTES);
    return fn();
  } finally {
    wipeRk(k);
  }
}

/** Copies `len` bytes of OUT into `dst` at `at` and zeroes them in kernel memory. */
function drain(k: AeadKernel, dst: Uint8Array, at: number, len: number): void {
  dst.set(k.mem.subarray(k.OUT, k.OUT + len), at);
  k.mem.fill(0, k.OUT, k.OUT + len);
}

/** Chunk size for streaming: a multiple of 16 that fits both IN and OUT. */
function chunkBytes(k: AeadKernel): number {
  return Math.min(k.IN_BYTES, k.OUT_BYTES) & ~15;
}

function absorbAll(k: AeadKernel, data: Uint8Array): void {
  const step = chunkBytes(k);
  for (let off = 0; off < data.length; off += step) {
    const part = data.subarray(off, off + step);
    k.mem.set(part, k.IN);
    k.x.aead_absorb(part.length, 0);
  }
}

function sealStream(
  k: AeadKernel,
  mode: AeadMode,
  nonce: Uint8Array,
  pt: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  // In-place sealing reads the plaintext again after writing ciphertext (SIV), so stream from a copy.
  if (output !== undefined && output.buffer === pt.buffer) pt = copyBytes(pt);
  const out = target(output, pt.length + TAG_BYTES);
  const step = chunkBytes(k);
  try {
    k.mem.set(nonce, k.IN);
    k.x.aead_begin(MODE_ID[mode], nonce.length);
    absorbAll(k, aad);
    if (mode === 'gcmsiv')
      absorbAll(k, pt); // SIV: the tag (and so the counter) comes first
    else {
      for (let off = 0; off < pt.length; off += step) {
        const part = pt.subarray(off, off + step);
        k.mem.set(part, k.IN);
        k.x.aead_ctr(part.length, off / 16);
        k.x.aead_absorb(part.length, 1);
        drain(k, out, off, part.length);
      }
    }
    k.x.aead_tag(aad.length, pt.length);
    drain(k, out, pt.length, TAG_BYTES);
    if (mode === 'gcmsiv') {
      for (let off = 0; off < pt.length; off += step) {
        const part = pt.subarray(off, off + step);
        k.mem.set(part, k.IN);
        k.x.aead_ctr(part.length, off / 16);
        drain(k, out, off, part.length);
      }
    }
    return out;
  } finally {
    k.x.aead_wipe();
    k.mem.fill(0, k.IN, k.IN + Math.min(k.IN_BYTES, Math.max(pt.length, aad.length, nonce.length)));
  }
}

function openStream(
  k: AeadKernel,
  mode: AeadMode,
  nonce: Uint8Array,
  ct: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  if (output !== undefined && output.buffer === ct.buffer) ct = copyBytes(ct);
  const len = ct.length - TAG_BYTES;
  const body = ct.subarray(0, len);
  const tag = ct.subarray(len);
  const out = target(output, len);
  const step = chunkBytes(k);
  let ok = false;
  try {
    k.mem.set(nonce, k.IN);
    k.x.aead_begin(MODE_ID[mode], nonce.length);
    absorbAll(k, aad);
    if (mode === 'gcm') {
      absorbAll(k, body);
      k.x.aead_tag(aad.length, len);
      k.mem.fill(0, k.OUT, k.OUT + TAG_BYTES); // the computed tag stays in the kernel
      k.mem.set(tag, k.IN);
      ok = k.x.aead_check() === 1;
      if (!ok) return out; // thrown below, after the wipe; nothing was decrypted
      for (let off = 0; off < len; off += step) {
        const part = body.subarray(off, off + step);
        k.mem.set(part, k.IN);
        k.x.aead_ctr(part.length, off / 16);
        drain(k, out, off, part.length);
      }
    } else {
      k.mem.set(tag, k.IN);
      k.x.aead_set_tag();
      for (let off = 0; off < len; off += step) {
        const part = body.subarray(off, off + step);
        k.mem.set(part, k.IN);
        k.x.aead_ctr(part.length, off / 16);
        k.x.aead_absorb(part.length, 1);
        drain(k, out, off, part.length);
      }
      k.x.aead_tag(aad.length, len);
      k.mem.fill(0, k.OUT, k.OUT + TAG_BYTES);
      k.mem.set(tag, k.IN);
      ok = k.x.aead_check() === 1;
    }
    return out;
  } finally {
    k.x.aead_wipe();
    k.mem.fill(0, k.IN, k.IN + Math.min(k.IN_BYTES, Math.max(len, aad.length, nonce.length)));
    if (!ok) {
      out.fill(0);
      // eslint-disable-next-line no-unsafe-finally
      throw authFailed();
    }
  }
}

function checkSeal(mode: AeadMode, pt: Uint8Array, output: Uint8Array | undefined): void {
  if (pt.length > MAX_PLAINTEXT[mode]) throw new RangeError(`"plaintext" longer than ${MAX_PLAINTEXT[mode]} bytes`);
  if (output !== undefined) bytes('output', output, pt.length + TAG_BYTES);
}

function checkOpen(mode: AeadMode, ct: Uint8Array, output: Uint8Array | undefined): void {
  if (ct.length < TAG_BYTES) throw authFailed();
  if (ct.length - TAG_BYTES > MAX_PLAINTEXT[mode]) throw authFailed();
  if (output !== undefined) bytes('output', output, ct.length - TAG_BYTES);
}

/** Seals one record with the expanded key already in AES_RK (checked by checkSeal). */
function sealLoaded(
  k: AeadKernel,
  mode: AeadMode,
  nonce: Uint8Array,
  pt: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  const inLen = nonce.length + aad.length + pt.length;
  if (inLen > k.IN_BYTES || pt.length + TAG_BYTES > k.OUT_BYTES) return sealStream(k, mode, nonce, pt, aad, output);
  k.mem.set(nonce, k.IN);
  k.mem.set(aad, k.IN + nonce.length);
  k.mem.set(pt, k.IN + nonce.length + aad.length);
  k.x.aead_seal(MODE_ID[mode], nonce.length, aad.length, pt.length);
  const out = target(output, pt.length + TAG_BYTES);
  drain(k, out, 0, out.length);
  return out;
}

/** Opens one record with the expanded key already in AES_RK (checked by checkOpen). */
function openLoaded(
  k: AeadKernel,
  mode: AeadMode,
  nonce: Uint8Array,
  ct: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  const len = ct.length - TAG_BYTES;
  const inLen = nonce.length + aad.length + ct.length;
  if (inLen > k.IN_BYTES || len > k.OUT_BYTES) return openStream(k, mode, nonce, ct, aad, output);
  k.mem.set(nonce, k.IN);
  k.mem.set(aad, k.IN + nonce.length);
  k.mem.set(ct, k.IN + nonce.length + aad.length);
  const ok = k.x.aead_open(MODE_ID[mode], nonce.length, aad.length, len);
  if (ok !== 1) throw authFailed(); // the kernel zeroed OUT and wiped the rest
  const out = target(output, len);
  drain(k, out, 0, len);
  return out;
}

/** Seals one record under the expanded key `rk`: ciphertext ‖ 16-byte tag. */
export function sealWith(
  mode: AeadMode,
  rk: Uint8Array,
  nonce: Uint8Array,
  pt: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  checkSeal(mode, pt, output);
  const k = aeadKernel();
  k.mem.set(rk, k.AES_RK);
  try {
    return sealLoaded(k, mode, nonce, pt, aad, output);
  } finally {
    wipeRk(k);
  }
}

/**
 * Opens one record (ciphertext ‖ tag) under the expanded key `rk`.
 * @throws PqdbError AUTH_FAILED when the tag does not verify (or the input is shorter than a tag).
 */
export function openWith(
  mode: AeadMode,
  rk: Uint8Array,
  nonce: Uint8Array,
  ct: Uint8Array,
  aad: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  checkOpen(mode, ct, output);
  const k = aeadKernel();
  k.mem.set(rk, k.AES_RK);
  try {
    return openLoaded(k, mode, nonce, ct, aad, output);
  } finally {
    wipeRk(k);
  }
}

/** A record as the batched kernel calls take it (checked). */
type Packed = { nonce: Uint8Array; data: Uint8Array; aad: Uint8Array };

/**
 * The end j of the group records[i, j) one batched call carries: 12-byte nonces (a record with
 * another goes on its own: j = i), the input and the outputs (plaintexts when `open`) within the
 * kernel's buffers.
 */
function groupEnd(k: AeadKernel, records: readonly Packed[], i: number, open: boolean): number {
  let j = i;
  let inUsed = 0;
  let outUsed = 0;
  while (j < records.length) {
    const r = records[j];
    const outLen = open ? r.data.length - TAG_BYTES : r.data.length + TAG_BYTES;
    const inLen = 8 + NONCE_BYTES + r.aad.length + r.data.length;
    if (r.nonce.length !== NONCE_BYTES) break;
    if (8 * (j - i + 1) + inUsed + inLen > k.IN_BYTES || outUsed + outLen > k.OUT_BYTES) break;
    inUsed += inLen - 8;
    outUsed += outLen;
    j++;
  }
  return j;
}

/** IN = (u32 aadLen, u32 dataLen) × n ‖ (nonce ‖ aad ‖ data) × n for records[i, j), n = j − i. */
function packGroup(k: AeadKernel, records: readonly Packed[], i: number, j: number): void {
  const n = j - i;
  let p = k.IN + 8 * n;
  for (let t = 0; t < n; t++) {
    const r = records[i + t];
    k.dv.setUint32(k.IN + 8 * t, r.aad.length, true);
    k.dv.setUint32(k.IN + 8 * t + 4, r.data.length, true);
    k.mem.set(r.nonce, p);
    k.mem.set(r.aad, p + NONCE_BYTES);
    k.mem.set(r.data, p + NONCE_BYTES + r.aad.length);
    p += NONCE_BYTES + r.aad.length + r.data.length;
  }
}

/**
 * Seals or opens many records in as few kernel calls as fit: IN = u32 (aadLen, dataLen) per record,
 * then nonce ‖ aad ‖ data of each. Records too large for a batch go through the one-record path.
 */
function batch(mode: AeadMode, rk: Uint8Array, records: readonly AeadRecord[], open: boolean): Uint8Array[] {
  if (!Array.isArray(records)) throw new TypeError('"records" expected an array of { nonce, data, aad? }');
  const checked = records.map((r, i) => {
    if (typeof r !== 'object' || r === null) throw new TypeError(`"records[${i}]" expected { nonce, data, aad? }`);
    const nonce = checkNonce(mode, r.nonce, `records[${i}].nonce`);
    const data = bytes(`records[${i}].data`, r.data);
    const aad = checkAad(mode, r.aad);
    if (open && data.length < TAG_BYTES) throw authFailed();
    return { nonce, data, aad };
  });
  const k = aeadKernel();
  const results: Uint8Array[] = new Array(checked.length);
  // All outputs of the call share one allocation (one per record would cost more than the sealing).
  const outLens = checked.map((r) => (open ? r.data.length - TAG_BYTES : r.data.length + TAG_BYTES));
  const all = new Uint8Array(outLens.reduce((a, b) => a + b, 0));
  const offsets: number[] = [];
  outLens.reduce((at, len) => (offsets.push(at), at + len), 0);
  return withRk(k, rk, () => {
    try {
      batchGroups();
    } catch (e) {
      all.fill(0); // no plaintext of a failed batch outlives the call
      throw e;
    }
    return results;
  });

  function batchGroups(): void {
    for (let i = 0; i < checked.length;) {
      const j = groupEnd(k, checked, i, open);
      if (j === i) {
        const r = checked[i];
        const dst = all.subarray(offsets[i], offsets[i] + outLens[i]);
        results[i] = open
          ? openWith(mode, rk, r.nonce, r.data, r.aad, dst)
          : sealWith(mode, rk, r.nonce, r.data, r.aad, dst);
        k.mem.set(rk, k.AES_RK); // the one-record path cleared it
        i++;
        continue;
      }
      const n = j - i;
      packGroup(k, checked, i, j);
      if (open) {
        const bad = k.x.aead_open_batch(MODE_ID[mode], n);
        if (bad !== 0) throw new PqdbError('AUTH_FAILED', `authentication failed for records[${i + bad - 1}]`);
      } else {
        k.x.aead_seal_batch(MODE_ID[mode], n);
      }
      const groupBytes = offsets[j - 1] + outLens[j - 1] - offsets[i];
      all.set(k.mem.subarray(k.OUT, k.OUT + groupBytes), offsets[i]);
      k.mem.fill(0, k.OUT, k.OUT + groupBytes);
      for (let t = i; t < j; t++) results[t] = all.subarray(offsets[t], offsets[t] + outLens[t]);
      i = j;
    }
  }
}

/** One record for encryptInto: its ciphertext ‖ tag goes into `out` (exactly data.length + 16 bytes). */
export interface AeadIntoRecord extends AeadRecord {
  out: Uint8Array;
}

/**
 * Seals `records` under the expanded key `rk`, each into its own `out`, in as few kernel calls as
 * fit (aead_seal_batch): the key goes into the kernel once for all of them. A record the batch
 * cannot carry (a nonce other than 12 bytes, or too large) is sealed on its own.
 */
function sealInto(mode: AeadMode, rk: Uint8Array, records: readonly AeadIntoRecord[]): void {
  if (!Array.isArray(records)) throw new TypeError('"records" expected an array of { nonce, data, aad?, out }');
  const checked = records.map((r, i) => {
    if (typeof r !== 'object' || r === null) throw new TypeError(`"records[${i}]" expected { nonce, data, aad?, out }`);
    const data = bytes(`records[${i}].data`, r.data);
    checkSeal(mode, data, r.out);
    return { nonce: checkNonce(mode, r.nonce, `records[${i}].nonce`), data, aad: checkAad(mode, r.aad), out: r.out };
  });
  const k = aeadKernel();
  for (let i = 0; i < checked.length;) {
    const j = groupEnd(k, checked, i, false);
    if (j === i) {
      const r = checked[i];
      sealWith(mode, rk, r.nonce, r.data, r.aad, r.out);
      i++;
      continue;
    }
    packGroup(k, checked, i, j);
    withRk(k, rk, () => k.x.aead_seal_batch(MODE_ID[mode], j - i));
    let q = k.OUT;
    for (let t = i; t < j; t++) {
      const len = checked[t].data.length + TAG_BYTES;
      checked[t].out.set(k.mem.subarray(q, q + len));
      q += len;
    }
    k.mem.fill(0, k.OUT, q);
    i = j;
  }
}

/** The interface of `gcm(key, nonce, aad)` and `gcmsiv(key, nonce, aad)`. */
export interface Cipher {
  /** Plaintext → ciphertext ‖ 16-byte tag (into `output` when given: exactly that length). */
  encrypt(plaintext: Uint8Array, output?: Uint8Array): Uint8Array;
  /**
   * Ciphertext ‖ tag → plaintext (into `output` when given: exactly that length).
   * @throws PqdbError AUTH_FAILED when the tag does not verify; `output` then holds no plaintext.
   */
  decrypt(ciphertext: Uint8Array, output?: Uint8Array): Uint8Array;
}

/** A key expanded once for many records. Call destroy() to wipe it. */
export interface KeyedAead {
  readonly mode: AeadMode;
  /** Seals one record: ciphertext ‖ tag, into `output` (exactly that length) when given. */
  encrypt(nonce: Uint8Array, plaintext: Uint8Array, aad?: Uint8Array, output?: Uint8Array): Uint8Array;
  /** @throws PqdbError AUTH_FAILED when the tag does not verify (`output` then holds no plaintext). */
  decrypt(nonce: Uint8Array, ciphertext: Uint8Array, aad?: Uint8Array, output?: Uint8Array): Uint8Array;
  /** Seals many records in batched kernel calls (data = plaintext); the results share one buffer. */
  encryptBatch(records: readonly AeadRecord[]): Uint8Array[];
  /**
   * Seals many records each into its own `out` (exactly data.length + 16 bytes), the key placed in
   * the kernel once per batched call: a commit seals a page's records into their slots this way.
   */
  encryptInto(records: readonly AeadIntoRecord[]): void;
  /**
   * Opens many records (data = ciphertext ‖ tag) in batched kernel calls.
   * @throws PqdbError AUTH_FAILED naming the first record that fails; no plaintext is returned then.
   */
  decryptBatch(records: readonly AeadRecord[]): Uint8Array[];
  /** Zeroes the expanded key; the object is unusable afterwards. */
  destroy(): void;
}

export function keyed(mode: AeadMode, key: Uint8Array): KeyedAead {
  // The expanded key's format belongs to the WebAssembly build that made it (the SIMD and scalar
  // bitslicings differ), so it is re-expanded from the kept key if the build changes.
  let raw: Uint8Array | undefined = copyBytes(bytes('key', key, KEY_BYTES));
  let rk = expandKey(raw);
  let rkFlavor = aeadKernel().flavor;
  const live = (): Uint8Array => {
    if (raw === undefined) throw new TypeError(`${mode} key was destroyed`);
    if (aeadKernel().flavor !== rkFlavor) {
      rk.fill(0);
      rk = expandKey(raw);
      rkFlavor = aeadKernel().flavor;
    }
    return rk;
  };
  return {
    mode,
    encrypt: (nonce, plaintext, aad, output) =>
      sealWith(mode, live(), checkNonce(mode, nonce), bytes('plaintext', plaintext), checkAad(mode, aad), output),
    decrypt: (nonce, ciphertext, aad, output) =>
      openWith(mode, live(), checkNonce(mode, nonce), bytes('ciphertext', ciphertext), checkAad(mode, aad), output),
    encryptBatch: (records) => batch(mode, live(), records, false),
    encryptInto: (records) => sealInto(mode, live(), records),
    decryptBatch: (records) => batch(mode, live(), records, true),
    destroy: () => {
      raw?.fill(0);
      rk.fill(0);
      raw = undefined;
    },
  };
}

/**
 * The one-shot form. It keeps no copy of the key: every call reads `key` (so the caller must not
 * change or wipe it before its last call, as with @noble/ciphers), expands it inside the kernel and
 * wipes the expansion before returning. Nonce and AAD are copied (public values).
 */
export function oneShot(mode: AeadMode, key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array): Cipher {
  bytes('key', key, KEY_BYTES);
  const n = copyBytes(checkNonce(mode, nonce));
  const a = copyBytes(checkAad(mode, aad));
  return {
    encrypt: (plaintext, output) => sealOneShot(mode, key, n, bytes('plaintext', plaintext), a, output),
    decrypt: (ciphertext, output) => openOneShot(mode, key, n, bytes('ciphertext', ciphertext), a, output),
  };
}

/**
 * The one-shot seal and open for the record layer (src/crypto/record.ts), whose nonce and AAD are
 * its own fresh arrays, built to the mode's rules: neither is checked or copied again (oneShot
 * copies them because a caller may change its arrays before using the cipher).
 * @internal
 */
export function sealOnce(
  mode: AeadMode,
  key: Uint8Array,
  nonce: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  // The key is checked where it goes into the kernel (loadOneShot, withKey).
  return sealOneShot(mode, key, nonce, bytes('plaintext', plaintext), aad, output);
}

/** sealOnce's open. @internal @throws PqdbError AUTH_FAILED */
export function openOnce(
  mode: AeadMode,
  key: Uint8Array,
  nonce: Uint8Array,
  aad: Uint8Array,
  ciphertext: Uint8Array,
  output?: Uint8Array,
): Uint8Array {
  return openOneShot(mode, key, nonce, bytes('ciphertext', ciphertext), aad, output);
}

/**
 * A record that fits the kernel buffers goes in with its key in one call (aead_seal_key: the key
 * is expanded, used and wiped inside it); a larger one streams under withKey.
 */
function sealOneShot(
  mode: AeadMode,
  key: Uint8Array,
  nonce: Uint8Array,
  pt: Uint8Array,
  aad: Uint8Array,
  output: Uint8Array | undefined,
): Uint8Array {
  checkSeal(mode, pt, output);
  const k = aeadKernel();
  const at = KEY_BYTES + nonce.length + aad.length;
  if (at + pt.length > k.IN_BYTES || pt.length + TAG_BYTES > k.OUT_BYTES)
    return withKey(k, key, () => sealStream(k, mode, nonce, pt, aad, output));
  const out = target(output, pt.length + TAG_BYTES);
  loadOneShot(k, key, nonce, aad, pt);
  k.x.aead_seal_key(MODE_ID[mode], nonce.length, aad.length, pt.length);
  drain(k, out, 0, out.length);
  return out;
}

/** IN = key ‖ nonce ‖ aad ‖ data: a one-shot call's input (the kernel wipes it). */
function loadOneShot(k: AeadKernel, key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, data: Uint8Array): void {
  bytes('key', key, KEY_BYTES); // again at each use: a detached buffer must not act as a zero key
  k.mem.set(key, k.IN);
  k.mem.set(nonce, k.IN + KEY_BYTES);
  k.mem.set(aad, k.IN + KEY_BYTES + nonce.length);
  k.mem.set(data, k.IN + KEY_BYTES + nonce.length + aad.length);
}

/** The one-shot open (see sealOneShot). @throws PqdbError AUTH_FAILED */
function openOneShot(
  mode: AeadMode,
  key: Uint8Array,
  nonce: Uint8Array,
  ct: Uint8Array,
  aad: Uint8Array,
  output: Uint8Array | undefined,
): Uint8Array {
  checkOpen(mode, ct, output);
  const k = aeadKernel();
  const len = ct.length - TAG_BYTES;
  const at = KEY_BYTES + nonce.length + aad.length;
  if (at + ct.length > k.IN_BYTES || len > k.OUT_BYTES)
    return withKey(k, key, () => openStream(k, mode, nonce, ct, aad, output));
  loadOneShot(k, key, nonce, aad, ct);
  if (k.x.aead_open_key(MODE_ID[mode], nonce.length, aad.length, len) !== 1) throw authFailed(); // all wiped
  const out = target(output, len);
  drain(k, out, 0, len);
  return out;
}

/** An AEAD constructor in the shape of @noble/ciphers, plus the keyed form. */
export interface AeadFactory {
  /** The one-shot form: keeps no copy of `key` but reads it at each call (keep it unchanged until then). */
  (key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array): Cipher;
  /** Expands `key` once for many records (a copy, kept until destroy()). */
  withKey(key: Uint8Array): KeyedAead;
  readonly keyBytes: number;
  readonly nonceBytes: number;
  readonly tagBytes: number;
}

function factory(mode: AeadMode): AeadFactory {
  return Object.freeze(
    Object.assign((key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array) => oneShot(mode, key, nonce, aad), {
      withKey: (key: Uint8Array) => keyed(mode, key),
      keyBytes: KEY_BYTES,
      nonceBytes: NONCE_BYTES,
      tagBytes: TAG_BYTES,
    }),
  );
}

/**
 * AES-256-GCM (NIST SP 800-38D): 32-byte key, 12-byte nonce, 16-byte tag. Never reuse a nonce
 * under one key.
 * @throws RangeError for a key, nonce or length outside the limits; PqdbError AUTH_FAILED on decrypt.
 * @example gcm(key, nonce, aad).encrypt(plaintext) // ciphertext ‖ tag
 */
export const gcm: AeadFactory = /* @__PURE__ */ factory('gcm');

/**
 * AES-256-GCM-SIV (RFC 8452): nonce-misuse-resistant; 32-byte key, 12-byte nonce, 16-byte tag.
 * @throws RangeError for a key, nonce or length outside the limits; PqdbError AUTH_FAILED on decrypt.
 * @example const k = gcmsiv.withKey(key); const ct = k.encrypt(nonce, record, aad)
 */
export const gcmsiv: AeadFactory = /* @__PURE__ */ factory('gcmsiv');
