// The slice of pqdb/crypto the shared cases exercise, and the oracle shape they compare against.
// Node passes node:crypto and @noble/hashes oracles; the browser page passes @noble/hashes.

import type * as Crypto from '../../src/crypto';

export type Api = Pick<
  typeof Crypto,
  'sha256' | 'sha384' | 'sha512' | 'hmac' | 'hkdf' | 'extract' | 'expand' | 'merkle' | 'MerkleAppender' | 'x25519'
>;
export type HashName = 'sha256' | 'sha384' | 'sha512';

export interface Oracle {
  name: string;
  hash(name: HashName, msg: Uint8Array): Uint8Array;
  hmac(name: HashName, key: Uint8Array, msg: Uint8Array): Uint8Array;
  hkdf(name: HashName, ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Uint8Array;
}
