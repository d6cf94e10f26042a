// The ML-KEM-1024 WebAssembly module (assembly/entry/mlkem.ts, FIPS 203, with its own Keccak).
// Imported only by the ML-KEM facade.

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_mlkem.generated';

/** Functions exported by assembly/entry/mlkem.ts. */
export interface MlkemExports {
  mlkem_keygen(): void;
  mlkem_encaps(): number;
  mlkem_decaps(): number;
  mlkem_check_ek(): number;
  mlkem_check_dk(): number;
}

export type MlkemKernel = Kernel<MlkemExports>;

/** The ML-KEM module's instance for the active flavour, instantiated on first use. */
export const mlkemKernel: () => MlkemKernel = /* @__PURE__ */ wasmModule<MlkemExports>(
  'mlkem',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  [],
);
