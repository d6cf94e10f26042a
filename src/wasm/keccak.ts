// The Keccak WebAssembly module (assembly/entry/keccak.ts): SHA3-256/512 and SHAKE128/256.
// Imported only by the SHA-3 facade (ML-KEM and ML-DSA carry their own Keccak).

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_keccak.generated';

/** Functions exported by assembly/entry/keccak.ts. */
export interface KeccakExports {
  keccak_hash(rate: number, ds: number, len: number, outLen: number): void;
  keccak_init(rate: number, ds: number): void;
  keccak_absorb(len: number): void;
  keccak_squeeze(len: number): void;
}

const REGIONS = ['KCTX', 'KCTX_BYTES'] as const;
export type KeccakKernel = Kernel<KeccakExports, (typeof REGIONS)[number]>;

/** The Keccak module's instance for the active flavour, instantiated on first use. */
export const keccakKernel: () => KeccakKernel = /* @__PURE__ */ wasmModule<KeccakExports, (typeof REGIONS)[number]>(
  'keccak',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  REGIONS,
);
