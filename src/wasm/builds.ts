// The embedded WebAssembly builds as a whole: their recorded sizes and SHA-256 (wasmBuilds, public)
// and, for integrity tests, their bytes and an instance of every module. This file imports every
// module's generated file; wasmBuilds() reads only the recorded info, so a bundler keeps the base64
// of none of them for it. The kernel facades never import this file.

import { decodeBase64, type WasmFlavor, type WasmModuleName, type Kernel } from './loader';
import * as sha2 from './_sha2.generated';
import * as aead from './_aead.generated';
import * as keccak from './_keccak.generated';
import * as mlkem from './_mlkem.generated';
import * as mldsa from './_mldsa.generated';
import { sha2Kernel } from './sha2';
import { aeadKernel } from './aead';
import { keccakKernel } from './keccak';
import { mlkemKernel } from './mlkem';
import { mldsaKernel } from './mldsa';

/** Recorded facts of one build of one module. */
export interface WasmBuildInfo {
  readonly bytes: number;
  readonly sha256: string;
}

const GENERATED = { sha2, aead, keccak, mlkem, mldsa } as const;
/** Every module, in build order. */
export const WASM_MODULES: readonly WasmModuleName[] = ['sha2', 'aead', 'keccak', 'mlkem', 'mldsa'];

/**
 * Size and SHA-256 (hex) of every embedded WebAssembly build, recorded when it was built, keyed
 * `<module>.<flavor>` (e.g. 'sha2.simd').
 * @example wasmBuilds()['aead.scalar'].bytes
 */
export function wasmBuilds(): Record<`${WasmModuleName}.${WasmFlavor}`, WasmBuildInfo> {
  const out: Record<string, WasmBuildInfo> = {};
  for (const name of WASM_MODULES) {
    const g = GENERATED[name];
    out[`${name}.simd`] = { bytes: g.SIMD_INFO.bytes, sha256: g.SIMD_INFO.sha256 };
    out[`${name}.scalar`] = { bytes: g.SCALAR_INFO.bytes, sha256: g.SCALAR_INFO.sha256 };
  }
  return out as Record<`${WasmModuleName}.${WasmFlavor}`, WasmBuildInfo>;
}

/** The embedded bytes of one build of one module (for integrity checks and tests). */
export function wasmBinary(name: WasmModuleName, flavor: WasmFlavor): Uint8Array {
  const g = GENERATED[name];
  return decodeBase64(flavor === 'simd' ? g.SIMD_BASE64 : g.SCALAR_BASE64);
}

/** An instance of every module in the active flavour (instantiating those not yet loaded). */
export function allKernels(): Kernel[] {
  return [sha2Kernel(), aeadKernel(), keccakKernel(), mlkemKernel(), mldsaKernel()] as Kernel[];
}
