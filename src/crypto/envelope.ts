// Key envelopes (DESIGN §4): a key generation's 32-byte root secret, wrapped for one recipient,
// like an age stanza. The layout is frozen in docs/format.md and its golden vectors.
//
//   envelope = version(1) ‖ type(1) ‖ suite(1) ‖ 0(1) ‖ be32(generation) ‖ recipient id(16) ‖
//              KEM ciphertext ‖ wrapped root (32 + 16-byte tag)
//   type 1 (hybrid):    KEM = ML-KEM-1024 + X25519 (1,600-byte ciphertext, pqdb's hybrid KEM)
//   type 2 (classical): KEM = X25519 alone (32-byte ephemeral public key), for side-by-side comparison
//   recipient id = SHA-384(recipient public key)[0, 16)
//   wrap key = HKDF-SHA384(ikm = KEM shared secret, salt = recipient id,
//                          info = "pqdb envelope v1" ‖ first 8 envelope bytes, 32)
//   wrapped root = AES-256-GCM-SIV(wrap key, nonce 0^12, aad = first 24 envelope bytes).encrypt(root)
// The wrap key is used once (a fresh KEM secret per envelope), so the fixed nonce is safe.

import { bytes, copyBytes, integer } from '../_args';
import { PqdbError } from '../errors';
import { hkdf } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import { gcmsiv } from '../kernels/aead';
import { randomBytes } from '../kernels/mlkem';
import { ml_kem1024_x25519 } from './kem';
import { suite as suiteOf, type SuiteName } from './suites';
import { x25519 } from '../kernels/x25519';

export const ENVELOPE_VERSION = 1;
export const ENVELOPE_HYBRID = 1;
export const ENVELOPE_CLASSICAL = 2;
const PREFIX_BYTES = 24;
const WRAPPED_BYTES = 48;
const LABEL = new TextEncoder().encode('pqdb envelope v1');
const H = ml_kem1024_x25519.lengths;

export type EnvelopeType = 'hybrid' | 'classical';

/** Recipient key pairs: hybrid (1,600-byte public key, 32-byte seed) or classical X25519 (32 / 32). */
export function generateRecipient(
  type: EnvelopeType = 'hybrid',
  seed?: Uint8Array,
): { type: EnvelopeType; publicKey: Uint8Array; secretKey: Uint8Array } {
  if (type === 'hybrid') return { type, ...ml_kem1024_x25519.keygen(seed) };
  if (type !== 'classical')
    throw new RangeError(`"type" expected 'hybrid' or 'classical', got ${JSON.stringify(type)}`);
  const secretKey = seed === undefined ? randomBytes(32) : copyBytes(bytes('seed', seed, 32));
  return { type, publicKey: x25519.getPublicKey(secretKey), secretKey };
}

/** The 16-byte id an envelope names its recipient by. */
export function recipientId(publicKey: Uint8Array): Uint8Array {
  return sha384(bytes('publicKey', publicKey)).slice(0, 16);
}

const P = 2n ** 255n - 19n;
/** The order of Curve25519's prime-order subgroup (RFC 7748 §4.1). */
const Q = 2n ** 252n + 27742317777372353535851937790883648493n;

/**
 * Whether 32 bytes can be an X25519 public key: the canonical u-coordinate (below p, so the top bit
 * clear) of a point of Curve25519's prime-order subgroup other than the identity, as X25519(k, 9) is
 * for every scalar k (a clamped scalar is a multiple of the cofactor). Tested by [Q]·u = ∞ with the
 * RFC 7748 §5 ladder (a point of the twist never passes: the twist's order is prime to Q). A random
 * string passes with probability about 1/32, so a recipient secret key (32 random bytes, either
 * kind) given for an X25519 public key is refused 31 times out of 32. Not constant time: for public
 * keys (and a secret key given by mistake, which is refused).
 */
export function isX25519PublicKey(pk: Uint8Array): boolean {
  if (bytes('publicKey', pk).length !== 32) return false;
  let u = 0n;
  for (let i = 31; i >= 0; i--) u = (u << 8n) | BigInt(pk[i]);
  if (u === 0n || u >= P) return false;
  const m = (x: bigint) => ((x % P) + P) % P;
  let [x2, z2, x3, z3] = [1n, 0n, u, 1n];
  for (let t = 252n; t >= 0n; t--) {
    if (((Q >> t) & 1n) === 1n) [x2, z2, x3, z3] = [x3, z3, x2, z2];
    const [a, b, c, d] = [x2 + z2, x2 - z2, x3 + z3, x3 - z3];
    const [aa, bb, da, cb] = [m(a * a), m(b * b), m(d * a), m(c * b)];
    const e = aa - bb;
    [x3, z3] = [m((da + cb) ** 2n), m(u * m((da - cb) ** 2n))];
    [x2, z2] = [m(aa * bb), m(e * (aa + 121665n * e))];
    if (((Q >> t) & 1n) === 1n) [x2, z2, x3, z3] = [x3, z3, x2, z2];
  }
  return z2 === 0n;
}

function typeOfPublicKey(pk: Uint8Array): number {
  if (pk.length === H.publicKey) return ENVELOPE_HYBRID;
  if (pk.length === 32) {
    if (!isX25519PublicKey(pk))
      throw new PqdbError(
        'INVALID_KEY',
        'an X25519 recipient public key is a point of the prime-order subgroup, and this is none (a recipient secret key given for its public key?)',
      );
    return ENVELOPE_CLASSICAL;
  }
  throw new RangeError(
    `"publicKey" expected a hybrid (${H.publicKey} bytes) or X25519 (32 bytes) public key, got length=${pk.length}`,
  );
}

function wrapKey(ss: Uint8Array, rid: Uint8Array, prefix: Uint8Array): Uint8Array {
  const info = new Uint8Array(LABEL.length + 8);
  info.set(LABEL);
  info.set(prefix.subarray(0, 8), LABEL.length);
  return hkdf(sha384, ss, rid, info, 32);
}

function prefixOf(type: number, suiteId: number, generation: number, rid: Uint8Array): Uint8Array {
  const p = new Uint8Array(PREFIX_BYTES);
  p[0] = ENVELOPE_VERSION;
  p[1] = type;
  p[2] = suiteId;
  new DataView(p.buffer).setUint32(4, generation);
  p.set(rid, 8);
  return p;
}

/**
 * Wraps `root` (32 bytes) of key generation `generation` for the recipient `publicKey` (hybrid or
 * classical, told apart by length). `rnd` (64 bytes hybrid, 32 classical) makes it deterministic.
 */
export function wrapRoot(
  root: Uint8Array,
  publicKey: Uint8Array,
  suiteName: SuiteName | number,
  generation: number,
  rnd?: Uint8Array,
): Uint8Array {
  bytes('root', root, 32);
  bytes('publicKey', publicKey);
  const s = suiteOf(suiteName);
  integer('generation', generation, 0, 2 ** 32 - 1);
  const type = typeOfPublicKey(publicKey);
  const rid = recipientId(publicKey);
  const prefix = prefixOf(type, s.id, generation, rid);
  let kemCt: Uint8Array;
  let ss: Uint8Array;
  if (type === ENVELOPE_HYBRID) {
    const r = ml_kem1024_x25519.encapsulate(publicKey, rnd);
    kemCt = r.cipherText;
    ss = r.sharedSecret;
  } else {
    const eph = rnd === undefined ? randomBytes(32) : copyBytes(bytes('rnd', rnd, 32));
    kemCt = x25519.getPublicKey(eph);
    try {
      ss = x25519.getSharedSecret(eph, publicKey); // rejects an all-zero share (a low-order point)
    } catch (cause) {
      throw new PqdbError('INVALID_KEY', 'X25519 recipient public key is a low-order point', { cause });
    } finally {
      eph.fill(0);
    }
  }
  let k: Uint8Array | undefined;
  let wrapped: Uint8Array;
  try {
    k = wrapKey(ss, rid, prefix);
    wrapped = gcmsiv(k, new Uint8Array(12), prefix).encrypt(root);
  } finally {
    ss.fill(0);
    k?.fill(0);
  }
  const out = new Uint8Array(PREFIX_BYTES + kemCt.length + WRAPPED_BYTES);
  out.set(prefix);
  out.set(kemCt, PREFIX_BYTES);
  out.set(wrapped, PREFIX_BYTES + kemCt.length);
  return out;
}

/** What an envelope says about itself, without unwrapping. */
export function readEnvelope(envelope: Uint8Array): {
  type: EnvelopeType;
  suite: number;
  generation: number;
  recipientId: Uint8Array;
} {
  bytes('envelope', envelope);
  if (envelope.length < PREFIX_BYTES || envelope[0] !== ENVELOPE_VERSION) {
    throw new PqdbError('FORMAT_VERSION', 'not a pqdb key envelope of a supported version');
  }
  const type = envelope[1];
  const kemBytes = type === ENVELOPE_HYBRID ? H.cipherText : type === ENVELOPE_CLASSICAL ? 32 : -1;
  if (kemBytes < 0) throw new PqdbError('FORMAT_VERSION', `unknown key envelope type ${type}`);
  if (envelope.length !== PREFIX_BYTES + kemBytes + WRAPPED_BYTES)
    throw new PqdbError('CORRUPTION', 'key envelope has the wrong length');
  return {
    type: type === ENVELOPE_HYBRID ? 'hybrid' : 'classical',
    suite: envelope[2],
    generation: new DataView(envelope.buffer, envelope.byteOffset).getUint32(4),
    recipientId: envelope.slice(8, 24),
  };
}

/** A recipient secret key's public keys, taken as a hybrid seed and as an X25519 scalar. */
export type PublicKeyPair = readonly [hybrid: Uint8Array, x25519: Uint8Array];

/**
 * Unwraps the root secret with the recipient's secret key. `publicKeys`, when the caller has them
 * already: the key's public keys taken as a hybrid seed and as an X25519 scalar (publicKeysOf's
 * pair, in that order), so that neither key derivation runs again.
 * @throws PqdbError AUTH_FAILED for a wrong key or an altered envelope; FORMAT_VERSION/CORRUPTION
 * for unreadable envelopes.
 */
export function unwrapRoot(envelope: Uint8Array, secretKey: Uint8Array, publicKeys?: PublicKeyPair): Uint8Array {
  const info = readEnvelope(envelope);
  bytes('secretKey', secretKey, 32);
  const prefix = envelope.subarray(0, PREFIX_BYTES);
  const kemCt = envelope.subarray(PREFIX_BYTES, envelope.length - WRAPPED_BYTES);
  let ss: Uint8Array | undefined;
  let pk: Uint8Array;
  try {
    if (info.type === 'hybrid') {
      ss = ml_kem1024_x25519.decapsulate(kemCt, secretKey);
      pk = publicKeys?.[0] ?? ml_kem1024_x25519.getPublicKey(secretKey);
    } else {
      ss = x25519.getSharedSecret(secretKey, kemCt);
      pk = publicKeys?.[1] ?? x25519.getPublicKey(secretKey);
    }
  } catch (cause) {
    ss?.fill(0);
    throw new PqdbError('AUTH_FAILED', 'authentication failed', { cause });
  }
  let k: Uint8Array | undefined;
  try {
    k = wrapKey(ss, recipientId(pk), prefix);
    return gcmsiv(k, new Uint8Array(12), prefix).decrypt(envelope.subarray(envelope.length - WRAPPED_BYTES));
  } finally {
    ss.fill(0);
    k?.fill(0);
  }
}
