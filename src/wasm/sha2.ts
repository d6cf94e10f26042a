// The SHA-2 WebAssembly module (assembly/entry/sha2.ts): SHA-256/384/512, HMAC, HKDF and the
// RFC 9162 SHA-384 Merkle tree hashing. Imported only by the SHA-2, HMAC and Merkle facades.

import { wasmModule, type Kernel } from './loader';
import { SIMD_BASE64, SCALAR_BASE64 } from './_sha2.generated';

/** Functions exported by assembly/entry/sha2.ts. */
export interface Sha2Exports {
  sha2_digest(alg: number, len: number): void;
  sha2_init(alg: number): void;
  sha2_update(len: number): void;
  sha2_final(): void;
  hmac_digest(alg: number, keyLen: number, msgLen: number): void;
  hmac_init(alg: number, keyLen: number): void;
  hmac_update(len: number): void;
  hmac_final(): void;
  hkdf(alg: number, ikmLen: number, saltLen: number, infoLen: number, outLen: number): void;
  hkdf_expand(alg: number, prkLen: number, infoLen: number, outLen: number): void;
  merkle_leaf_hashes(n: number): void;
  sha2_digest_batch(alg: number, n: number): void;
  merkle_append(n: number, count: number): void;
  merkle_append_hashes(n: number, count: number): void;
  merkle_root(count: number): void;
  merkle_node(): void;
  merkle_level(n: number): void;
}

const REGIONS = ['CTX', 'CTX2', 'CTX_BYTES', 'FRONTIER', 'FRONTIER_BYTES', 'SCRATCH', 'SCRATCH_BYTES'] as const;
export type Sha2Kernel = Kernel<Sha2Exports, (typeof REGIONS)[number]>;

/** The SHA-2 module's instance for the active flavour, instantiated on first use. */
export const sha2Kernel: () => Sha2Kernel = /* @__PURE__ */ wasmModule<Sha2Exports, (typeof REGIONS)[number]>(
  'sha2',
  { simd: SIMD_BASE64, scalar: SCALAR_BASE64 },
  REGIONS,
);
