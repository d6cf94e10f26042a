// The AEAD WebAssembly module (assembly/entry/aead.ts): bitsliced and vperm AES-256, GHASH, POLYVAL,
// AES-256-GCM and AES-256-GCM-SIV. Imported only by the AEAD facade.

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_aead.generated';

/** Functions exported by assembly/entry/aead.ts. */
export interface AeadExports {
  aes_expand_key(): void;
  aead_seal(mode: number, nonceLen: number, aadLen: number, ptLen: number): void;
  aead_open(mode: number, nonceLen: number, aadLen: number, ctLen: number): number;
  aead_seal_key(mode: number, nonceLen: number, aadLen: number, ptLen: number): void;
  aead_open_key(mode: number, nonceLen: number, aadLen: number, ctLen: number): number;
  aead_seal_batch(mode: number, n: number): void;
  aead_open_batch(mode: number, n: number): number;
  aead_begin(mode: number, nonceLen: number): void;
  aead_absorb(len: number, fromOut: number): void;
  aead_tag(aadLen: number, msgLen: number): void;
  aead_set_tag(): void;
  aead_ctr(len: number, blockOffset: number): void;
  aead_check(): number;
  aead_wipe(): void;
  aes_ecb(n: number): void;
  polyval_digest(n: number): void;
  ghash_digest(n: number): void;
}

const REGIONS = ['AES_RK', 'AES_RK_BYTES'] as const;
export type AeadKernel = Kernel<AeadExports, (typeof REGIONS)[number]>;

/** The AEAD module's instance for the active flavour, instantiated on first use. */
export const aeadKernel: () => AeadKernel = /* @__PURE__ */ wasmModule<AeadExports, (typeof REGIONS)[number]>(
  'aead',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  REGIONS,
);
