// pqdb/crypto: the cryptographic primitives, all running in pqdb's WebAssembly kernels.
// Synchronous and identical in Node.js and browsers.

export { sha256, sha384, sha512, type Hash, type HashStream, type HashName } from './kernels/sha2';
export { hmac, hkdf, extract, expand } from './kernels/hmac';
export { gcm, gcmsiv, type AeadFactory, type Cipher, type KeyedAead, type AeadRecord } from './kernels/aead';
export * as merkle from './crypto/merkle';
export { MerkleAppender } from './crypto/merkle';
export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { setWasmFlavor, wasmFlavor, wasmBuilds, simdSupported, type WasmFlavor } from './wasm/loader';
