// AES-256-GCM (NIST SP 800-38D) and AES-256-GCM-SIV (RFC 8452) facade over the WebAssembly kernel.
// A record that fits the kernel buffers is sealed or opened in one call; larger messages stream
// through the kernel in chunks inside one synchronous call. The keyed form keeps its expanded key in
// JavaScript memory (wiped by destroy()) and copies it into the kernel only for the call that uses
// it; the one-shot form keeps no copy of the key at all: each call expands the caller's key inside
// the kernel, and the kernel's copy is wiped before the call returns.

import { bytes, copyBytes } from '../_args';
import { aeadKernel, type AeadKernel } from '../wasm/aead';
import {
  KEY_BYTES,
  MODE_ID,
  NONCE_BYTES,
  TAG_BYTES,
  authFailed,
  checkAad,
  checkNonce,
  checkOpen,
  checkSeal,
  drain,
  expandKey,
  openStream,
  openWith,
  sealStream,
  sealWith,
  target,
  withKey,
  type AeadMode,
  type AeadRecord,
} from './_aead-core';
import { batch, sealInto, type AeadIntoRecord } from './aead-batch';

export { KEY_BYTES, NONCE_BYTES, TAG_BYTES, expandKey, sealWith, openWith } from './_aead-core';
export type { AeadMode, AeadRecord } from './_aead-core';
export type { AeadIntoRecord } from './aead-batch';

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
