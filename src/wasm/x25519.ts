// The X25519 WebAssembly module (assembly/entry/x25519.ts): RFC 7748 scalar multiplication on
// Curve25519. Imported only by the X25519 facade.

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_x25519.generated';

/** Functions exported by assembly/entry/x25519.ts. */
export interface X25519Exports {
  /** IN = scalar ‖ u → OUT = X25519(scalar, u); 0 when the result is all zero, else 1. */
  x25519_scalarmult(): number;
  /** IN = scalar → OUT = X25519(scalar, 9). */
  x25519_base(): void;
}

const REGIONS = ['SCRATCH', 'SCRATCH_BYTES'] as const;
export type X25519Kernel = Kernel<X25519Exports, (typeof REGIONS)[number]>;

/** The X25519 module's instance for the active flavour, instantiated on first use. */
export const x25519Kernel: () => X25519Kernel = /* @__PURE__ */ wasmModule<X25519Exports, (typeof REGIONS)[number]>(
  'x25519',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  REGIONS,
);
