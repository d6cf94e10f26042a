// The embedded WebAssembly builds as a whole: their recorded sizes and SHA-256 (wasmBuilds, public)
// and, for integrity tests, their bytes and an instance of every module. This file imports every
// module's generated file; wasmBuilds() reads only the recorded info, so a bundler keeps the base64
// of none of them for it (wasmBinary and allKernels, which do, are not public). The kernel facades never import this file.

import { decodeBase64 } from '../_encoding';
import { type WasmFlavor, type WasmModuleName, type Kernel } from './loader';
import {
  SIMD_INFO as SHA2_SIMD,
  SCALAR_INFO as SHA2_SCALAR,
  SIMD_BASE64 as SHA2_SIMD_B64,
  SCALAR_BASE64 as SHA2_SCALAR_B64,
} from './_sha2.generated';
import {
  SIMD_INFO as AEAD_SIMD,
  SCALAR_INFO as AEAD_SCALAR,
  SIMD_BASE64 as AEAD_SIMD_B64,
  SCALAR_BASE64 as AEAD_SCALAR_B64,
} from './_aead.generated';
import {
  SIMD_INFO as KECCAK_SIMD,
  SCALAR_INFO as KECCAK_SCALAR,
  SIMD_BASE64 as KECCAK_SIMD_B64,
  SCALAR_BASE64 as KECCAK_SCALAR_B64,
} from './_keccak.generated';
import {
  SIMD_INFO as MLKEM_SIMD,
  SCALAR_INFO as MLKEM_SCALAR,
  SIMD_BASE64 as MLKEM_SIMD_B64,
  SCALAR_BASE64 as MLKEM_SCALAR_B64,
} from './_mlkem.generated';
import {
  SIMD_INFO as MLDSA_SIMD,
  SCALAR_INFO as MLDSA_SCALAR,
  SIMD_BASE64 as MLDSA_SIMD_B64,
  SCALAR_BASE64 as MLDSA_SCALAR_B64,
} from './_mldsa.generated';
import {
  SIMD_INFO as X25519_SIMD,
  SCALAR_INFO as X25519_SCALAR,
  SIMD_BASE64 as X25519_SIMD_B64,
  SCALAR_BASE64 as X25519_SCALAR_B64,
} from './_x25519.generated';
import { sha2Kernel } from './sha2';
import { aeadKernel } from './aead';
import { keccakKernel } from './keccak';
import { mlkemKernel } from './mlkem';
import { mldsaKernel } from './mldsa';
import { x25519Kernel } from './x25519';

/** Recorded facts of one build of one module. */
export interface WasmBuildInfo {
  readonly bytes: number;
  readonly sha256: string;
}

/** Every module, in build order. */
export const WASM_MODULES: readonly WasmModuleName[] = ['sha2', 'aead', 'keccak', 'mlkem', 'mldsa', 'x25519'];

/**
 * Size and SHA-256 (hex) of every embedded WebAssembly build, recorded when it was built, keyed
 * `<module>.<flavor>` (e.g. 'sha2.simd'). A module without SIMD code (keccak, x25519) embeds one build,
 * reported under both flavours.
 * @example wasmBuilds()['aead.scalar'].bytes
 */
export function wasmBuilds(): Record<`${WasmModuleName}.${WasmFlavor}`, WasmBuildInfo> {
  // Named imports of the info objects only, so that a bundler drops every base64 string here.
  const info = ({ bytes, sha256 }: WasmBuildInfo): WasmBuildInfo => ({ bytes, sha256 });
  return {
    'sha2.simd': info(SHA2_SIMD),
    'sha2.scalar': info(SHA2_SCALAR),
    'aead.simd': info(AEAD_SIMD),
    'aead.scalar': info(AEAD_SCALAR),
    'keccak.simd': info(KECCAK_SIMD),
    'keccak.scalar': info(KECCAK_SCALAR),
    'mlkem.simd': info(MLKEM_SIMD),
    'mlkem.scalar': info(MLKEM_SCALAR),
    'mldsa.simd': info(MLDSA_SIMD),
    'mldsa.scalar': info(MLDSA_SCALAR),
    'x25519.simd': info(X25519_SIMD),
    'x25519.scalar': info(X25519_SCALAR),
  };
}

// No namespace imports of the generated files: a bundler would keep every string of a namespace object.
const BASE64: Record<WasmModuleName, Record<WasmFlavor, string>> = {
  sha2: { simd: SHA2_SIMD_B64, scalar: SHA2_SCALAR_B64 },
  aead: { simd: AEAD_SIMD_B64, scalar: AEAD_SCALAR_B64 },
  keccak: { simd: KECCAK_SIMD_B64, scalar: KECCAK_SCALAR_B64 },
  mlkem: { simd: MLKEM_SIMD_B64, scalar: MLKEM_SCALAR_B64 },
  mldsa: { simd: MLDSA_SIMD_B64, scalar: MLDSA_SCALAR_B64 },
  x25519: { simd: X25519_SIMD_B64, scalar: X25519_SCALAR_B64 },
};

/** The embedded bytes of one build of one module (for integrity checks and tests). */
export function wasmBinary(name: WasmModuleName, flavor: WasmFlavor): Uint8Array {
  return decodeBase64(BASE64[name][flavor]);
}

/** An instance of every module in the active flavour (instantiating those not yet loaded). */
export function allKernels(): Kernel[] {
  return [sha2Kernel(), aeadKernel(), keccakKernel(), mlkemKernel(), mldsaKernel(), x25519Kernel()] as Kernel[];
}
