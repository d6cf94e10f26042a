// The pqdb X25519 (RFC 7748) WebAssembly module: its exported operations and buffer offsets.
// ABI: `x25519_<op>()`; the scalar (and the u-coordinate) are placed at IN by the facade, the result
// comes back at OUT. Every operation zeroes the kernel scratch (ladder state, clamped scalar copy)
// and the part of IN it read before it returns; the facade zeroes OUT after copying it out.

import { IN, OUT, wipeIn } from '../common/layout';
import { x25519, wipeX25519, X25519_SCRATCH, X25519_SCRATCH_BYTES } from '../x25519/x25519';

export * from './_common';
export const MEM_SCRATCH: usize = X25519_SCRATCH;
export const MEM_SCRATCH_BYTES: usize = X25519_SCRATCH_BYTES;

// ---- X25519 ------------------------------------------------------------------------------------

/** IN = scalar (32) ‖ u (32) → OUT = X25519(scalar, u); returns 0 when the result is all zero. */
export function x25519_scalarmult(): i32 {
  const nonzero = x25519(OUT, IN, IN + 32);
  wipeX25519();
  wipeIn(64);
  return nonzero;
}

/** IN = scalar (32) → OUT = X25519(scalar, 9), the public key of a secret scalar. */
export function x25519_base(): void {
  memory.fill(IN + 32, 0, 32);
  store<u8>(IN + 32, 9);
  x25519(OUT, IN, IN + 32);
  wipeX25519();
  wipeIn(64);
}
