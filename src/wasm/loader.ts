// Loads the pqdb WebAssembly kernels. Two builds of one source are embedded (base64, with their
// SHA-256 recorded at build time): a SIMD build, chosen when WebAssembly.validate accepts v128
// code, and a scalar build for engines without SIMD. `setWasmFlavor` or the environment variable
// PQDB_WASM=scalar|simd forces one. Instantiation is synchronous (the modules are small enough for
// synchronous compilation on a browser main thread) and imports nothing.
//
// Only src/kernels/* import this module; nothing above them sees WebAssembly memory.

import { PqdbError } from '../errors';
import { SIMD_WASM, SCALAR_WASM, type EmbeddedWasm } from './_binaries.generated';

export type WasmFlavor = 'simd' | 'scalar';

/** Functions and offsets exported by assembly/entry/index.ts. */
export interface KernelExports {
  memory: WebAssembly.Memory;
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
  aes_expand_key(): void;
  aead_seal(mode: number, nonceLen: number, aadLen: number, ptLen: number): void;
  aead_open(mode: number, nonceLen: number, aadLen: number, ctLen: number): number;
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
  keccak_hash(rate: number, ds: number, len: number, outLen: number): void;
  keccak_init(rate: number, ds: number): void;
  keccak_absorb(len: number): void;
  keccak_squeeze(len: number): void;
  mlkem_keygen(): void;
  mlkem_encaps(): number;
  mlkem_decaps(): number;
  mlkem_check_ek(): number;
  mlkem_check_dk(): number;
  mldsa_keygen(): void;
  mldsa_sign(): number;
  mldsa_verify(): number;
}

/** A loaded instance with its memory views and region offsets. */
export interface Kernel {
  readonly flavor: WasmFlavor;
  readonly x: KernelExports;
  readonly mem: Uint8Array;
  readonly dv: DataView;
  readonly IN: number;
  readonly IN_BYTES: number;
  readonly OUT: number;
  readonly OUT_BYTES: number;
  readonly CTX: number;
  readonly CTX2: number;
  readonly CTX_BYTES: number;
  readonly FRONTIER: number;
  readonly FRONTIER_BYTES: number;
  readonly SCRATCH: number;
  readonly SCRATCH_BYTES: number;
  readonly AES_RK: number;
  readonly AES_RK_BYTES: number;
  readonly KCTX: number;
  readonly KCTX_BYTES: number;
}

// The smallest module holding a v128 instruction (i32x4.splat): validates only where SIMD exists.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

let current: Kernel | undefined;
let forced: WasmFlavor | undefined;
const cache: Partial<Record<WasmFlavor, Kernel>> = {};

/** True when this engine validates WebAssembly SIMD. */
export function simdSupported(): boolean {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

function envFlavor(): WasmFlavor | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const v = env?.PQDB_WASM;
  if (v === undefined || v === '') return undefined;
  if (v === 'simd' || v === 'scalar') return v;
  throw new RangeError(`"PQDB_WASM" expected 'simd' or 'scalar', got ${JSON.stringify(v)}`);
}

function decode(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function instantiate(flavor: WasmFlavor): Kernel {
  const embedded: EmbeddedWasm = flavor === 'simd' ? SIMD_WASM : SCALAR_WASM;
  let x: KernelExports & Record<string, unknown>;
  try {
    const module = new WebAssembly.Module(decode(embedded.base64) as BufferSource);
    x = new WebAssembly.Instance(module, {}).exports as unknown as KernelExports & Record<string, unknown>;
  } catch (cause) {
    throw new PqdbError('WASM_UNAVAILABLE', `cannot instantiate the ${flavor} WebAssembly kernels`, { cause });
  }
  const g = (name: string) => (x[name] as WebAssembly.Global).value as number;
  return {
    flavor,
    x,
    mem: new Uint8Array(x.memory.buffer),
    dv: new DataView(x.memory.buffer),
    IN: g('MEM_IN'),
    IN_BYTES: g('MEM_IN_BYTES'),
    OUT: g('MEM_OUT'),
    OUT_BYTES: g('MEM_OUT_BYTES'),
    CTX: g('MEM_CTX'),
    CTX2: g('MEM_CTX2'),
    CTX_BYTES: g('MEM_CTX_BYTES'),
    FRONTIER: g('MEM_FRONTIER'),
    FRONTIER_BYTES: g('MEM_FRONTIER_BYTES'),
    SCRATCH: g('MEM_SCRATCH'),
    SCRATCH_BYTES: g('MEM_SCRATCH_BYTES'),
    AES_RK: g('MEM_AES_RK'),
    AES_RK_BYTES: g('MEM_AES_RK_BYTES'),
    KCTX: g('MEM_KCTX'),
    KCTX_BYTES: g('MEM_KCTX_BYTES'),
  };
}

function defaultFlavor(): WasmFlavor {
  return forced ?? envFlavor() ?? (simdSupported() ? 'simd' : 'scalar');
}

/** The active kernel instance, loading it on first use. */
export function kernel(): Kernel {
  if (current !== undefined) return current;
  const flavor = defaultFlavor();
  if (flavor === 'simd' && !simdSupported()) {
    throw new PqdbError('WASM_UNAVAILABLE', 'the SIMD WebAssembly build was requested but this engine has no SIMD');
  }
  current = cache[flavor] ??= instantiate(flavor);
  return current;
}

/**
 * Forces the WebAssembly build used from now on ('simd' or 'scalar'); `undefined` restores the
 * automatic choice. Takes effect immediately for every kernel.
 * @throws PqdbError WASM_UNAVAILABLE when 'simd' is asked for on an engine without SIMD.
 * @example setWasmFlavor('scalar')
 */
export function setWasmFlavor(flavor: WasmFlavor | undefined): void {
  if (flavor !== undefined && flavor !== 'simd' && flavor !== 'scalar') {
    throw new RangeError(`"flavor" expected 'simd' or 'scalar', got ${JSON.stringify(flavor)}`);
  }
  forced = flavor;
  current = undefined;
  kernel();
}

/** The WebAssembly build in use: 'simd' or 'scalar'. */
export function wasmFlavor(): WasmFlavor {
  return kernel().flavor;
}

/** Size and SHA-256 (hex) of each embedded WebAssembly build, recorded when it was built. */
export function wasmBuilds(): Record<WasmFlavor, { bytes: number; sha256: string }> {
  return {
    simd: { bytes: SIMD_WASM.bytes, sha256: SIMD_WASM.sha256 },
    scalar: { bytes: SCALAR_WASM.bytes, sha256: SCALAR_WASM.sha256 },
  };
}

/** The embedded bytes of one build (for integrity checks and tests). */
export function wasmBinary(flavor: WasmFlavor): Uint8Array {
  return decode((flavor === 'simd' ? SIMD_WASM : SCALAR_WASM).base64);
}
