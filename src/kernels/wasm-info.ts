// The WebAssembly builds as the package entries report and choose them (src/index.ts,
// src/crypto.ts): the kernels layer is the only importer of src/wasm (DESIGN §2).

export { setWasmFlavor, wasmFlavor, simdSupported, type WasmFlavor, type WasmModuleName } from '../wasm/loader';
export { wasmBuilds, type WasmBuildInfo } from '../wasm/builds';
