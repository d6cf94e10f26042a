// pqdb: the embedded engine's universal entry. The store itself builds on the primitives exported
// from pqdb/crypto; this entry re-exports what every user of the engine needs.

export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { setWasmFlavor, wasmFlavor, wasmBuilds, simdSupported, type WasmFlavor } from './wasm/loader';

/** The pqdb release this build belongs to. */
export const VERSION = '0.1.0';
