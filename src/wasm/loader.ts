// Loads the pqdb WebAssembly kernels. Each kernel family is its own module (src/wasm/<family>.ts
// names it, its generated file embeds it), so an application bundles only the families it reaches.
// Every module has two builds of one source (base64, SHA-256 recorded at build time): a SIMD build,
// chosen when WebAssembly.validate accepts v128 code, and a scalar build for engines without SIMD.
// `setWasmFlavor` or the environment variable PQDB_WASM=scalar|simd forces one for all modules.
// A module is instantiated on its first use, synchronously (each is small enough for synchronous
// compilation on a browser main thread), and imports nothing.
//
// Under a Content-Security-Policy without 'wasm-unsafe-eval' (or 'unsafe-eval') the engine refuses
// to compile WebAssembly; the WASM_UNAVAILABLE error then says which directive the page needs.
//
// Only src/kernels/* (through src/wasm/<family>.ts) import this module; nothing above them sees
// WebAssembly memory.

import { PqdbError } from '../errors';
import { decodeBase64 } from '../_encoding';

export type WasmFlavor = 'simd' | 'scalar';
/** The kernel families, one WebAssembly module each (assembly/entry/<name>.ts). */
export type WasmModuleName = 'sha2' | 'aead' | 'keccak' | 'mlkem' | 'mldsa' | 'x25519';

/** A loaded module instance with its memory views and the region offsets it exports. */
export type Kernel<X = unknown, R extends string = never> = {
  readonly module: WasmModuleName;
  readonly flavor: WasmFlavor;
  readonly x: X & { readonly memory: { readonly buffer: ArrayBuffer } }; // WebAssembly.Memory, named structurally: no DOM lib needed
  readonly mem: Uint8Array;
  readonly dv: DataView;
  readonly IN: number;
  readonly IN_BYTES: number;
  readonly OUT: number;
  readonly OUT_BYTES: number;
} & { readonly [K in R]: number };

/** The base64 of both builds of one module. */
export interface WasmSource {
  readonly simd: string;
  readonly scalar: string;
}

// The smallest module holding a v128 instruction (i32x4.splat): validates only where SIMD exists.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

let forced: WasmFlavor | undefined;
/** Bumped by setWasmFlavor: a module whose instance is from an older generation looks its flavour up again. */
let generation = 0;
/** The getters of the modules loaded so far (setWasmFlavor switches them at once). */
const loaded = new Set<() => Kernel>();

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

/** The flavour every module uses now. */
function activeFlavor(): WasmFlavor {
  const flavor = forced ?? envFlavor() ?? (simdSupported() ? 'simd' : 'scalar');
  if (flavor === 'simd' && !simdSupported()) {
    throw new PqdbError('WASM_UNAVAILABLE', 'the SIMD WebAssembly build was requested but this engine has no SIMD');
  }
  return flavor;
}

/**
 * True when `e` is the engine refusing to compile WebAssembly because of a Content-Security-Policy
 * (Chromium: CompileError "… Content Security Policy …"; Firefox/WebKit: CompileError or EvalError
 * naming 'unsafe-eval' / 'wasm-unsafe-eval').
 */
export function isCspRefusal(e: unknown): boolean {
  if (!(e instanceof Error) || (e.name !== 'CompileError' && e.name !== 'EvalError')) return false;
  return /content[\s-]security[\s-]policy|unsafe-eval|wasm-eval|\bCSP\b/i.test(e.message);
}

function unavailable(name: WasmModuleName, flavor: WasmFlavor, cause: unknown): PqdbError {
  const message = isCspRefusal(cause)
    ? `cannot compile the ${flavor} ${name} WebAssembly kernels: the page's Content-Security-Policy forbids ` +
      `WebAssembly; it must allow script-src 'wasm-unsafe-eval'`
    : `cannot instantiate the ${flavor} ${name} WebAssembly kernels`;
  return new PqdbError('WASM_UNAVAILABLE', message, { cause });
}

function instantiate<X, R extends string>(
  name: WasmModuleName,
  flavor: WasmFlavor,
  b64: string,
  regions: readonly R[],
): Kernel<X, R> {
  let x: X & { memory: WebAssembly.Memory } & Record<string, unknown>;
  try {
    const module = new WebAssembly.Module(decodeBase64(b64) as BufferSource);
    x = new WebAssembly.Instance(module, {}).exports as unknown as typeof x;
  } catch (cause) {
    throw unavailable(name, flavor, cause);
  }
  const g = (global: string): number => {
    const v = x[`MEM_${global}`];
    if (!(v instanceof WebAssembly.Global)) throw unavailable(name, flavor, new Error(`no export MEM_${global}`));
    return v.value as number;
  };
  const k: Record<string, unknown> = {
    module: name,
    flavor,
    x,
    mem: new Uint8Array(x.memory.buffer),
    dv: new DataView(x.memory.buffer),
    IN: g('IN'),
    IN_BYTES: g('IN_BYTES'),
    OUT: g('OUT'),
    OUT_BYTES: g('OUT_BYTES'),
  };
  for (const r of regions) k[r] = g(r);
  return k as Kernel<X, R>;
}

/**
 * Declares one WebAssembly module: returns its getter, which instantiates the active flavour on
 * first use and caches each flavour's instance. `regions` are the MEM_<region> offsets it exports
 * besides IN and OUT (with their _BYTES sizes where the facade needs them).
 */
export function wasmModule<X, R extends string = never>(
  name: WasmModuleName,
  source: WasmSource,
  regions: readonly R[],
): () => Kernel<X, R> {
  const cache: Partial<Record<WasmFlavor, Kernel<X, R>>> = {};
  let current: Kernel<X, R> | undefined;
  let seen = -1;
  const get = (): Kernel<X, R> => {
    if (current !== undefined && seen === generation) return current;
    const flavor = activeFlavor();
    current = cache[flavor] ??= instantiate<X, R>(name, flavor, source[flavor], regions);
    seen = generation;
    loaded.add(get as () => Kernel);
    return current;
  };
  return get;
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
  generation++;
  activeFlavor();
  for (const get of loaded) get();
}

/**
 * The WebAssembly build in use: 'simd' or 'scalar'.
 * @throws PqdbError WASM_UNAVAILABLE when 'simd' is forced on an engine without SIMD.
 * @example wasmFlavor() // 'simd'
 */
export function wasmFlavor(): WasmFlavor {
  return activeFlavor();
}
