// The AES-256-GCM / AES-256-GCM-SIV kernel calls under the public facade (aead.ts): argument
// checks, the expanded key placed in and wiped from the kernel, one record sealed or opened in one
// call or streamed in chunks. Everything here runs inside one synchronous call; nothing is kept.

import { bytes, copyBytes } from '../_args';
import { PqdbError } from '../errors';
import { aeadKernel, type AeadKernel } from '../wasm/aead';

export const KEY_BYTES = 32;
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

export type AeadMode = 'gcm' | 'gcmsiv';
export const MODE_ID: Record<AeadMode, number> = { gcm: 0, gcmsiv: 1 };

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

export function authFailed(): PqdbError {
  return new PqdbError('AUTH_FAILED', 'authentication failed');
}

/** GCM nonces other than 12 bytes (allowed by SP 800-38D, hashed into J0) are capped here. */
const GCM_MAX_NONCE = 4096;

export function checkNonce(mode: AeadMode, nonce: unknown, name = 'nonce'): Uint8Array {
  if (mode === 'gcmsiv') return bytes(name, nonce, NONCE_BYTES);
  const n = bytes(name, nonce);
  if (n.length < 1 || n.length > GCM_MAX_NONCE) {
    throw new RangeError(
      `"${name}" expected Uint8Array of length 1..${GCM_MAX_NONCE} (12 recommended), got length=${n.length}`,
    );
  }
  return n;
}

export function checkAad(mode: AeadMode, aad: unknown): Uint8Array {
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
export function target(output: Uint8Array | undefined, len: number): Uint8Array {
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
export function wipeRk(k: AeadKernel): void {
  k.mem.fill(0, k.AES_RK, k.AES_RK + k.AES_RK_BYTES);
}

export function withRk<T>(k: AeadKernel, rk: Uint8Array, fn: () => T): T {
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
export function withKey<T>(k: AeadKernel, key: Uint8Array, fn: () => T): T {
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
export function drain(k: AeadKernel, dst: Uint8Array, at: number, len: number): void {
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

export function sealStream(
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

export function openStream(
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

export function checkSeal(mode: AeadMode, pt: Uint8Array, output: Uint8Array | undefined): void {
  if (pt.length > MAX_PLAINTEXT[mode]) throw new RangeError(`"plaintext" longer than ${MAX_PLAINTEXT[mode]} bytes`);
  if (output !== undefined) bytes('output', output, pt.length + TAG_BYTES);
}

export function checkOpen(mode: AeadMode, ct: Uint8Array, output: Uint8Array | undefined): void {
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
