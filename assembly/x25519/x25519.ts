// X25519 (RFC 7748 §5): the Montgomery ladder on Curve25519 over the field arithmetic of field.ts.
//
// Decoding follows §5: the scalar is clamped (bits 0–2 and 255 cleared, bit 254 set) and bit 255
// of the u-coordinate is masked; a u-coordinate in [p, 2^255) is accepted and used reduced. The
// result is the canonical encoding of x_2 / z_2 (0 when z_2 = 0, as z^(p−2) gives). Rejecting an
// all-zero result (a low-order input point) is the caller's decision: `x25519` reports it.
//
// Constant time: the ladder runs 255 steps whatever the scalar; the scalar bit of a step picks
// nothing by address or branch, only the masks of the conditional swaps (feCswap). The bit is read
// from memory at an address that depends on the step number alone.
//
// Memory: X25519_SCRATCH holds the ladder state, the clamped scalar copy and the temporaries; the
// exported operations zero it (wipeX25519) before they return.

import {
  FE_BYTES,
  PROD_BYTES,
  feAdd,
  feCopy,
  feCswap,
  feFromBytes,
  feInvert,
  feMul,
  feMulSmall,
  feOne,
  feSquare,
  feSub,
  feToBytes,
  feZero,
} from './field';

/** (A − 2) / 4 for Curve25519's A = 486662 (RFC 7748 §5). */
const A24: i64 = 121665;

// Scratch layout: 18 field elements, the product accumulator, a padded 40-byte buffer for
// decoding/encoding, and the clamped scalar.
const N_FE: usize = 18;
const PAD_BYTES: usize = 40;
export const X25519_SCRATCH_BYTES: usize = N_FE * FE_BYTES + PROD_BYTES + PAD_BYTES + 32;
export const X25519_SCRATCH: usize = memory.data(<i32>X25519_SCRATCH_BYTES, 64);

// @ts-ignore: decorator
@inline
function fe(i: usize): usize {
  return X25519_SCRATCH + i * FE_BYTES;
}

const X1 = fe(0);
const X2 = fe(1);
const Z2 = fe(2);
const X3 = fe(3);
const Z3 = fe(4);
const A = fe(5);
const AA = fe(6);
const B = fe(7);
const BB = fe(8);
const E = fe(9);
const C = fe(10);
const D = fe(11);
const DA = fe(12);
const CB = fe(13);
const INV_T = fe(14); // 4 elements for feInvert: fe(14) … fe(17)
const TMP = fe(N_FE); // feMul's and feSquare's product accumulator
const PAD = TMP + PROD_BYTES;
const K = PAD + PAD_BYTES; // the clamped scalar

/** Zeroes the X25519 scratch. */
export function wipeX25519(): void {
  memory.fill(X25519_SCRATCH, 0, X25519_SCRATCH_BYTES);
}

/**
 * out = X25519(k, u) (RFC 7748 §5), 32 bytes each. k and u are read into the scratch before out
 * is written, so out may overlap them. Leaves secrets in the scratch: the caller wipes it
 * (wipeX25519).
 * Returns 1 when the result is not all zero, 0 when it is, computed without a branch.
 */
export function x25519(out: usize, k: usize, u: usize): i32 {
  // Clamp a copy of the scalar (§5 decodeScalar25519).
  memory.copy(K, k, 32);
  store<u8>(K, load<u8>(K) & 248);
  store<u8>(K + 31, (load<u8>(K + 31) & 127) | 64);

  feFromBytes(X1, u, PAD);
  feOne(X2);
  feZero(Z2);
  feCopy(X3, X1);
  feOne(Z3);

  let swap: i64 = 0;
  for (let t: i32 = 254; t >= 0; t--) {
    const bit = <i64>((load<u8>(K + (<usize>t >> 3)) >> (<u8>(t & 7))) & 1);
    swap ^= bit;
    feCswap(X2, X3, swap);
    feCswap(Z2, Z3, swap);
    swap = bit;

    feAdd(A, X2, Z2);
    feSquare(AA, A, TMP);
    feSub(B, X2, Z2);
    feSquare(BB, B, TMP);
    feSub(E, AA, BB);
    feAdd(C, X3, Z3);
    feSub(D, X3, Z3);
    feMul(DA, D, A, TMP);
    feMul(CB, C, B, TMP);
    feAdd(X3, DA, CB);
    feSquare(X3, X3, TMP);
    feSub(Z3, DA, CB);
    feSquare(Z3, Z3, TMP);
    feMul(Z3, X1, Z3, TMP);
    feMul(X2, AA, BB, TMP);
    feMulSmall(Z2, E, A24);
    feAdd(Z2, AA, Z2);
    feMul(Z2, E, Z2, TMP);
  }
  feCswap(X2, X3, swap);
  feCswap(Z2, Z3, swap);

  feInvert(Z2, Z2, INV_T, TMP);
  feMul(X2, X2, Z2, TMP);
  feToBytes(out, X2, PAD);

  // 1 unless every output byte is 0: acc ∈ [0, 255], (acc − 1) >> 31 is −1 only for acc = 0.
  let acc: i32 = 0;
  for (let i: usize = 0; i < 32; i++) acc |= <i32>load<u8>(out + i);
  return 1 + ((acc - 1) >> 31);
}
