// The ML-DSA-87 WebAssembly module (assembly/entry/mldsa.ts, FIPS 204, with its own Keccak).
// Imported only by the ML-DSA facade.

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_mldsa.generated';

/** Functions exported by assembly/entry/mldsa.ts. */
export interface MldsaExports {
  mldsa_keygen(): void;
  mldsa_sign(): number;
  mldsa_verify(): number;
}

export type MldsaKernel = Kernel<MldsaExports>;

/** The ML-DSA module's instance for the active flavour, instantiated on first use. */
export const mldsaKernel: () => MldsaKernel = /* @__PURE__ */ wasmModule<MldsaExports>(
  'mldsa',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  [],
);
