// The pqdb ML-KEM-1024 (FIPS 203, with its own Keccak) WebAssembly module: its exported operations and buffer offsets.
// ABI: `<kernel>_<op>(…lengths)`; inputs are placed at IN by the facade, results come back at
// OUT. Every operation zeroes the kernel scratch (and the part of IN it read) before it returns; the
// facade zeroes OUT after copying them out.

import { IN, OUT, wipeIn } from '../common/layout';
import { wipeKeccak } from '../keccak/keccak';
import { mlkemKeyGen, mlkemEncaps, mlkemDecaps, mlkemCheckEk, mlkemCheckDk, wipeMlkem, EK_BYTES, DK_BYTES, CT_BYTES } from '../mlkem/mlkem';

export * from './_common';

// ---- ML-KEM-1024 -------------------------------------------------------------------------------

/** IN = d ‖ z (64 bytes) → OUT = ek (1568) ‖ dk (3168). */
export function mlkem_keygen(): void {
  mlkemKeyGen(IN, IN + 32, OUT, OUT + EK_BYTES);
  wipeMlkemAll(64);
}

/** IN = ek (1568) ‖ m (32) → OUT = c (1568) ‖ K (32); returns 0 (no output) if ek fails §7.2. */
export function mlkem_encaps(): i32 {
  const ok = mlkemCheckEk(IN);
  if (ok) mlkemEncaps(IN, IN + EK_BYTES, OUT, OUT + CT_BYTES);
  wipeMlkemAll(EK_BYTES + 32);
  return ok;
}

/** IN = c (1568) ‖ dk (3168) → OUT = K (32); returns 0 (no output) if dk fails §7.3. */
export function mlkem_decaps(): i32 {
  const ok = mlkemCheckDk(IN + CT_BYTES);
  if (ok) mlkemDecaps(IN + CT_BYTES, IN, OUT);
  wipeMlkemAll(CT_BYTES + DK_BYTES);
  return ok;
}

/** 1 when the ek at IN passes the §7.2 modulus check. */
export function mlkem_check_ek(): i32 {
  const ok = mlkemCheckEk(IN);
  wipeMlkemAll(EK_BYTES);
  return ok;
}

/** 1 when the dk at IN passes the §7.3 hash check. */
export function mlkem_check_dk(): i32 {
  const ok = mlkemCheckDk(IN);
  wipeMlkemAll(DK_BYTES);
  return ok;
}

function wipeMlkemAll(inLen: usize): void {
  wipeMlkem();
  wipeKeccak();
  wipeIn(inLen);
}
