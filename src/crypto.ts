// pqdb/crypto: the cryptographic primitives, all running in pqdb's WebAssembly kernels.
// Synchronous and identical in Node.js and browsers.

export { sha256, sha384, sha512, type Hash, type HashStream, type HashName } from './kernels/sha2';
export { hmac, hkdf, extract, expand } from './kernels/hmac';
export { gcm, gcmsiv, type AeadFactory, type Cipher, type KeyedAead, type AeadRecord } from './kernels/aead';
export { sha3_256, sha3_512, shake128, shake256, type Sha3Hash, type Shake, type KeccakStream } from './kernels/sha3';
export { ml_kem1024, type Kem } from './kernels/mlkem';
/** X25519 (RFC 7748) in constant-time WebAssembly, in the shape of @noble/curves' `x25519`. */
export { x25519, X25519_LENGTHS, type X25519 } from './kernels/x25519';
export { ml_kem1024_x25519, kemProvider, type KemProvider, type KemProviderName } from './crypto/kem';
export { HYBRID_LABEL } from './crypto/hybrid-kem';
export { ml_dsa87, PRE_HASHES, type SignOpts } from './kernels/mldsa';
export * as merkle from './crypto/merkle';
export { verifySealed, openSealed, verifyCheckpoint, type VerifiedSealed, type Checkpoint } from './crypto/proofs';
export { MerkleAppender } from './crypto/merkle';
export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { setWasmFlavor, wasmFlavor, simdSupported, type WasmFlavor, type WasmModuleName } from './kernels/wasm-info';
export { wasmBuilds, type WasmBuildInfo } from './kernels/wasm-info';
