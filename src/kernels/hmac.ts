// HMAC (FIPS 198-1) and HKDF (RFC 5869) over SHA-256/384/512, facade over the WebAssembly kernel.
// Short inputs run in one kernel call; longer ones stream through the same kernel. Keys are wiped
// from kernel memory by the kernel itself; the outputs are fresh arrays.

import { bytes, integer } from '../_args';
import { sha2Kernel } from '../wasm/sha2';
import { type Hash, hashAlg, chunked, takeOut } from './sha2';

const EMPTY: Uint8Array = new Uint8Array(0);

/**
 * HMAC(key, msg) with `hash` ∈ {sha256, sha384, sha512}. Keys longer than the block are hashed
 * first (RFC 2104 §2).
 * @throws TypeError for a hash not from pqdb/crypto or non-Uint8Array inputs.
 * @example hmac(sha384, key, msg) // 48-byte tag
 */
export function hmac(hash: Hash, key: Uint8Array, msg: Uint8Array): Uint8Array {
  const alg = hashAlg(hash);
  bytes('key', key);
  bytes('msg', msg);
  const k = sha2Kernel();
  if (key.length + msg.length <= k.IN_BYTES) {
    k.mem.set(key, k.IN);
    k.mem.set(msg, k.IN + key.length);
    k.x.hmac_digest(alg, key.length, msg.length);
    return takeOut(hash.outputLen);
  }
  // Long input: keyed contexts in CTX/CTX2 across several synchronous kernel calls.
  const kk = key.length <= k.IN_BYTES ? key : hash(key);
  k.mem.set(kk, k.IN);
  k.x.hmac_init(alg, kk.length);
  chunked(msg, (len) => k.x.hmac_update(len));
  k.x.hmac_final();
  k.mem.fill(0, k.CTX, k.CTX + k.CTX_BYTES);
  k.mem.fill(0, k.CTX2, k.CTX2 + k.CTX_BYTES);
  return takeOut(hash.outputLen);
}

/**
 * HKDF-Extract (RFC 5869 §2.2): PRK = HMAC(salt, ikm); an absent salt is HashLen zero bytes.
 * @example const prk = extract(sha384, ikm, salt)
 */
export function extract(hash: Hash, ikm: Uint8Array, salt?: Uint8Array): Uint8Array {
  hashAlg(hash);
  return hmac(hash, salt === undefined ? EMPTY : bytes('salt', salt), bytes('ikm', ikm));
}

function checkLength(hash: Hash, length: number): number {
  return integer('length', length, 0, 255 * hash.outputLen);
}

/**
 * HKDF-Expand (RFC 5869 §2.3): `length` ≤ 255·HashLen bytes of output keying material.
 * @throws RangeError when `length` exceeds 255·HashLen.
 * @example expand(sha384, prk, info, 32)
 */
export function expand(hash: Hash, prk: Uint8Array, info: Uint8Array | undefined, length: number): Uint8Array {
  const alg = hashAlg(hash);
  bytes('prk', prk);
  const inf = info === undefined ? EMPTY : bytes('info', info);
  checkLength(hash, length);
  const k = sha2Kernel();
  if (prk.length + inf.length <= k.IN_BYTES) {
    k.mem.set(prk, k.IN);
    k.mem.set(inf, k.IN + prk.length);
    k.x.hkdf_expand(alg, prk.length, inf.length, length);
    return takeOut(length);
  }
  // Oversized info: the RFC's loop over the streaming HMAC.
  const out = new Uint8Array(length);
  let t: Uint8Array = EMPTY;
  for (let i = 1, done = 0; done < length; i++) {
    const block = new Uint8Array(t.length + inf.length + 1);
    block.set(t);
    block.set(inf, t.length);
    block[block.length - 1] = i;
    t = hmac(hash, prk, block);
    out.set(t.subarray(0, Math.min(t.length, length - done)), done);
    done += t.length;
  }
  return out;
}

/**
 * HKDF (RFC 5869): Expand(Extract(salt, ikm), info, length), in one kernel call for inputs that
 * fit the kernel buffer.
 * @throws RangeError when `length` exceeds 255·HashLen; TypeError for bad argument types.
 * @example hkdf(sha384, rootSecret, salt, info, 32)
 */
export function hkdf(
  hash: Hash,
  ikm: Uint8Array,
  salt: Uint8Array | undefined,
  info: Uint8Array | undefined,
  length: number,
): Uint8Array {
  const alg = hashAlg(hash);
  bytes('ikm', ikm);
  const s = salt === undefined ? EMPTY : bytes('salt', salt);
  const inf = info === undefined ? EMPTY : bytes('info', info);
  checkLength(hash, length);
  const k = sha2Kernel();
  if (ikm.length + s.length + inf.length <= k.IN_BYTES) {
    k.mem.set(ikm, k.IN);
    k.mem.set(s, k.IN + ikm.length);
    k.mem.set(inf, k.IN + ikm.length + s.length);
    k.x.hkdf(alg, ikm.length, s.length, inf.length, length);
    return takeOut(length);
  }
  const prk = extract(hash, ikm, s);
  try {
    return expand(hash, prk, inf, length);
  } finally {
    prk.fill(0);
  }
}
