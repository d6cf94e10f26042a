// The cryptographic algorithms pqdb runs (DESIGN §3), as a static catalogue for posture reports
// (src/engine/posture.ts writes them into a CycloneDX 1.6 CBOM): what each primitive is, its
// parameter set, object identifier, security levels and what it is built on. docs/posture.md says
// what pqdb uses each for.
//
// Object identifiers: NIST CSOR (AES 2.16.840.1.101.3.4.1, hash algorithms .4.2, ML-DSA .4.3 sigAlgs
// as in RFC 9881, ML-KEM .4.4 kems), RFC 8410 (X25519), RFC 8018 (HMAC with SHA-2), RFC 8619 (HKDF).
// AES-GCM-SIV (RFC 8452) and pqdb's hybrid KEM have none.
// Security levels: classical bits, and the NIST category (1–5) of the reference problem a primitive
// meets: AES-256 key search (category 5) for the symmetric primitives keyed with 256 bits; collision
// search for hash functions (SHA-256, SHA3-256, SHAKE128: category 2; SHA-384, SHA3-512, SHAKE256:
// category 4, the highest a collision reference defines); the FIPS 203 and FIPS 204 claims (5) for
// ML-KEM-1024 and ML-DSA-87; 0 for X25519. The hybrid reports X25519's classical level (what still
// holds should ML-KEM-1024 fall, as X-Wing states its own) and ML-KEM-1024's category.

import { HYBRID_LABEL } from './hybrid-kem';
import type { Suite } from './suites';

export type AlgorithmName =
  | 'AES-256-GCM-SIV'
  | 'AES-256-GCM'
  | 'HKDF-SHA256'
  | 'HKDF-SHA384'
  | 'HMAC-SHA256'
  | 'HMAC-SHA384'
  | 'SHA-256'
  | 'SHA-384'
  | 'SHA3-256'
  | 'SHA3-512'
  | 'SHAKE128'
  | 'SHAKE256'
  | 'ML-KEM-1024'
  | 'ML-DSA-87'
  | 'X25519'
  | 'ML-KEM-1024+X25519';

/** CycloneDX 1.6 `cryptoFunctions` values pqdb's algorithms perform. */
export type CryptoFunction =
  'keygen' | 'encrypt' | 'decrypt' | 'digest' | 'tag' | 'keyderive' | 'sign' | 'verify' | 'encapsulate' | 'decapsulate';

/** CycloneDX 1.6 `primitive` values of pqdb's algorithms. */
export type Primitive = 'mac' | 'signature' | 'hash' | 'xof' | 'kdf' | 'key-agree' | 'kem' | 'ae' | 'combiner';

export interface AlgorithmInfo {
  readonly name: AlgorithmName;
  readonly primitive: Primitive;
  readonly parameterSetIdentifier?: string;
  /** Block cipher mode (CycloneDX has no GCM-SIV: "other") or elliptic curve, where one applies. */
  readonly mode?: 'gcm' | 'other';
  readonly curve?: string;
  readonly functions: readonly CryptoFunction[];
  readonly classicalSecurityLevel: number;
  readonly nistQuantumSecurityLevel: number;
  readonly oid?: string;
  /** The algorithms it is built on. */
  readonly uses: readonly AlgorithmName[];
  /** What runs it: pqdb's WebAssembly kernels (or the selectable @noble provider). */
  readonly implementation: string;
}

const WASM = 'pqdb-wasm';
const AE: readonly CryptoFunction[] = ['encrypt', 'decrypt', 'tag'];
const KEM: readonly CryptoFunction[] = ['keygen', 'encapsulate', 'decapsulate'];

type Row = Omit<AlgorithmInfo, 'name' | 'uses' | 'implementation'> &
  Partial<Pick<AlgorithmInfo, 'uses' | 'implementation'>>;

const keyed = (primitive: 'kdf' | 'mac', bits: string, oid: string, uses: AlgorithmName): Row => ({
  primitive,
  parameterSetIdentifier: bits,
  functions: primitive === 'kdf' ? ['keyderive'] : ['tag'],
  classicalSecurityLevel: 256,
  nistQuantumSecurityLevel: 5,
  oid,
  uses: [uses],
});

const digest = (primitive: 'hash' | 'xof', bits: string, classical: number, category: number, oid: string): Row => ({
  primitive,
  parameterSetIdentifier: bits,
  functions: ['digest'],
  classicalSecurityLevel: classical,
  nistQuantumSecurityLevel: category,
  oid,
});

const ROWS: Record<AlgorithmName, Row> = {
  'AES-256-GCM-SIV': {
    primitive: 'ae',
    parameterSetIdentifier: '256',
    mode: 'other',
    functions: AE,
    classicalSecurityLevel: 256,
    nistQuantumSecurityLevel: 5,
  },
  'AES-256-GCM': {
    primitive: 'ae',
    parameterSetIdentifier: '256',
    mode: 'gcm',
    functions: AE,
    classicalSecurityLevel: 256,
    nistQuantumSecurityLevel: 5,
    oid: '2.16.840.1.101.3.4.1.46',
    uses: ['HKDF-SHA384'],
  },
  'HKDF-SHA256': keyed('kdf', '256', '1.2.840.113549.1.9.16.3.28', 'HMAC-SHA256'),
  'HKDF-SHA384': keyed('kdf', '384', '1.2.840.113549.1.9.16.3.29', 'HMAC-SHA384'),
  'HMAC-SHA256': keyed('mac', '256', '1.2.840.113549.2.9', 'SHA-256'),
  'HMAC-SHA384': keyed('mac', '384', '1.2.840.113549.2.10', 'SHA-384'),
  'SHA-256': digest('hash', '256', 128, 2, '2.16.840.1.101.3.4.2.1'),
  'SHA-384': digest('hash', '384', 192, 4, '2.16.840.1.101.3.4.2.2'),
  'SHA3-256': digest('hash', '256', 128, 2, '2.16.840.1.101.3.4.2.8'),
  'SHA3-512': digest('hash', '512', 256, 4, '2.16.840.1.101.3.4.2.10'),
  SHAKE128: digest('xof', '128', 128, 2, '2.16.840.1.101.3.4.2.11'),
  SHAKE256: digest('xof', '256', 256, 4, '2.16.840.1.101.3.4.2.12'),
  'ML-KEM-1024': {
    primitive: 'kem',
    parameterSetIdentifier: '1024',
    functions: KEM,
    oid: '2.16.840.1.101.3.4.4.3',
    classicalSecurityLevel: 256,
    nistQuantumSecurityLevel: 5,
    uses: ['SHA3-256', 'SHA3-512', 'SHAKE128', 'SHAKE256'],
  },
  'ML-DSA-87': {
    primitive: 'signature',
    parameterSetIdentifier: '87',
    functions: ['keygen', 'sign', 'verify'],
    classicalSecurityLevel: 256,
    nistQuantumSecurityLevel: 5,
    oid: '2.16.840.1.101.3.4.3.19',
    uses: ['SHAKE128', 'SHAKE256'],
  },
  X25519: {
    primitive: 'key-agree',
    curve: 'curve25519',
    functions: ['keygen', 'keyderive'],
    classicalSecurityLevel: 128,
    nistQuantumSecurityLevel: 0,
    oid: '1.3.101.110',
  },
  'ML-KEM-1024+X25519': {
    primitive: 'combiner',
    parameterSetIdentifier: HYBRID_LABEL,
    functions: KEM,
    classicalSecurityLevel: 128,
    nistQuantumSecurityLevel: 5,
    uses: ['ML-KEM-1024', 'X25519', 'SHA3-256', 'SHAKE256'],
  },
};

/** Every algorithm pqdb runs, by name, in a fixed order. */
export const ALGORITHMS: Readonly<Record<AlgorithmName, AlgorithmInfo>> = /* @__PURE__ */ Object.freeze(
  Object.fromEntries(
    Object.entries(ROWS).map(([name, r]) => [
      name,
      Object.freeze({ name, uses: [], implementation: WASM, ...r } as AlgorithmInfo),
    ]),
  ) as Record<AlgorithmName, AlgorithmInfo>,
);

/**
 * What a suite's records, data keys, checkpoints and Merkle logs use: its AEAD first, then its KDF
 * (and HKDF-SHA384 for a key commitment), its signature and its Merkle hash.
 * @example suiteAlgorithms(suite('gcmsiv-hkdf384')); // ['AES-256-GCM-SIV', 'HKDF-SHA384', 'ML-DSA-87', 'SHA-384']
 */
export function suiteAlgorithms(s: Suite): AlgorithmName[] {
  const aead: AlgorithmName = s.aead === 'gcm' ? 'AES-256-GCM' : 'AES-256-GCM-SIV';
  const kdf: AlgorithmName = s.kdf.hashName === 'sha256' ? 'HKDF-SHA256' : 'HKDF-SHA384';
  return [
    ...new Set<AlgorithmName>([
      aead,
      kdf,
      ...(s.commitment ? ['HKDF-SHA384' as const] : []),
      s.signature,
      s.merkleHash,
    ]),
  ];
}
