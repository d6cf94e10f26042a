// KEM providers: pqdb's WebAssembly kernels (default) and the noble libraries (portable, pure
// JavaScript), each with the ML-KEM-1024 + X25519 hybrid built over its own primitives: 'wasm' uses
// pqdb's ML-KEM-1024, X25519, SHA3-256 and SHAKE256 kernels; 'noble' uses @noble/post-quantum's
// ML-KEM-1024, @noble/curves' X25519 and @noble/hashes' SHA-3, so it runs no WebAssembly at all.
// Both implement the same interface and produce identical bytes.

import { ml_kem1024 as nobleMlKem1024 } from '@noble/post-quantum/ml-kem.js';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { sha3_256 as nobleSha3_256, shake256 as nobleShake256 } from '@noble/hashes/sha3.js';
import { ml_kem1024, type Kem } from '../kernels/mlkem';
import { sha3_256, shake256 } from '../kernels/sha3';
import { x25519 } from '../kernels/x25519';
import { makeHybrid } from './hybrid-kem';

export type KemProviderName = 'wasm' | 'noble';

export interface KemProvider {
  readonly name: KemProviderName;
  readonly ml_kem1024: Kem;
  readonly ml_kem1024_x25519: Kem;
}

// Pure (no side effect): an application that never calls kemProvider('noble') bundles no noble code.
const wasm: KemProvider = /* @__PURE__ */ Object.freeze({
  name: 'wasm',
  ml_kem1024,
  ml_kem1024_x25519: /* @__PURE__ */ makeHybrid({ mlkem: ml_kem1024, x25519, sha3_256, shake256 }),
});

const nobleKem = nobleMlKem1024 as unknown as Kem;
const noble: KemProvider = /* @__PURE__ */ Object.freeze({
  name: 'noble',
  ml_kem1024: nobleKem,
  ml_kem1024_x25519: /* @__PURE__ */ makeHybrid({
    mlkem: nobleKem,
    x25519: nobleX25519,
    sha3_256: nobleSha3_256,
    shake256: nobleShake256,
  }),
});

/**
 * The KEM implementations of a provider: 'wasm' (default, pqdb's kernels) or 'noble'.
 * @example const { ml_kem1024_x25519 } = kemProvider('noble')
 */
export function kemProvider(name: KemProviderName = 'wasm'): KemProvider {
  if (name === 'wasm') return wasm;
  if (name === 'noble') return noble;
  throw new RangeError(`"name" expected 'wasm' or 'noble', got ${JSON.stringify(name)}`);
}

/** ML-KEM-1024 + X25519 hybrid KEM over pqdb's WebAssembly ML-KEM (see hybrid-kem.ts). */
export const ml_kem1024_x25519: Kem = wasm.ml_kem1024_x25519;
export { ml_kem1024 };
