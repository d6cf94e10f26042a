// The pqdb ML-DSA-87 (FIPS 204, with its own Keccak) WebAssembly module: its exported operations.
// ABI (fixed lengths, no arguments): inputs at IN, results at OUT. Each operation zeroes the ML-DSA
// scratch, the Keccak kernel's scratch and the IN bytes it read before it returns; the facade reads
// and zeroes OUT. μ is the 64-byte message representative H(tr ‖ M′, 64) computed by the caller.

import { IN, OUT, wipeIn } from '../common/layout';
import { wipeKeccak } from '../keccak/keccak';
import { mldsaKeyGen, mldsaSign, mldsaVerify, wipeMldsa, PK_BYTES, SK_BYTES, SIG_BYTES, MU_BYTES, SEED_BYTES, RND_BYTES } from '../mldsa/mldsa';

export * from './_common';

/** IN = ξ (32 bytes) → OUT = pk (2592) ‖ sk (4896). ML-DSA.KeyGen_internal (Algorithm 6). */
export function mldsa_keygen(): void {
  mldsaKeyGen(IN, OUT, OUT + PK_BYTES);
  wipeMldsaAll(SEED_BYTES);
}

/**
 * IN = sk (4896) ‖ μ (64) ‖ rnd (32) → OUT = signature (4627). ML-DSA.Sign_internal (Algorithm 7)
 * with μ given; rnd = 32 zero bytes gives the deterministic variant. Returns 1 (0 only if the
 * attempt counter ran out, which does not happen).
 */
export function mldsa_sign(): i32 {
  const ok = mldsaSign(IN, IN + SK_BYTES, IN + SK_BYTES + MU_BYTES, OUT);
  wipeMldsaAll(SK_BYTES + MU_BYTES + RND_BYTES);
  return ok;
}

/** IN = pk (2592) ‖ μ (64) ‖ signature (4627) → 1 valid / 0 invalid. ML-DSA.Verify_internal (Algorithm 8). */
export function mldsa_verify(): i32 {
  const ok = mldsaVerify(IN, IN + PK_BYTES, IN + PK_BYTES + MU_BYTES);
  wipeMldsaAll(PK_BYTES + MU_BYTES + SIG_BYTES);
  return ok;
}

function wipeMldsaAll(inLen: usize): void {
  wipeMldsa();
  wipeKeccak();
  wipeIn(inLen);
}
