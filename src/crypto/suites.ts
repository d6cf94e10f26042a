// The crypto suites of pqdb (DESIGN §5): a suite fixes the record AEAD, the key-derivation hash,
// whether records carry a key commitment, the signature and the Merkle hash. Its small integer id is
// written into every sealed record, checkpoint and envelope, so old data always names how to read it.
// The registry's states (active, decrypt-only, quarantined, retired) live in the engine; this file
// is the static catalogue.

import { sha256, sha384, type Hash } from '../kernels/sha2';

export type SuiteName = 'gcmsiv-hkdf256' | 'gcmsiv-hkdf384' | 'cnsa2-gcm-hkdf384-commit';
export type AeadName = 'gcmsiv' | 'gcm';

export interface Suite {
  /** Written into records, checkpoints and envelopes. Never reused for another meaning. */
  readonly id: number;
  readonly name: SuiteName;
  readonly aead: AeadName;
  /** HKDF hash for data keys (and per-record subkeys). */
  readonly kdf: Hash;
  /** GCM suites derive a per-record subkey and store a 32-byte key commitment. */
  readonly commitment: boolean;
  readonly signature: 'ML-DSA-87';
  readonly merkleHash: 'SHA-384';
  /** What the suite is for, for posture reports. */
  readonly description: string;
}

const SUITES: readonly Suite[] = Object.freeze([
  Object.freeze({
    id: 1,
    name: 'gcmsiv-hkdf256',
    aead: 'gcmsiv',
    kdf: sha256,
    commitment: false,
    signature: 'ML-DSA-87',
    merkleHash: 'SHA-384',
    description: 'legacy: AES-256-GCM-SIV records, HKDF-SHA256 data keys',
  } as const),
  Object.freeze({
    id: 2,
    name: 'gcmsiv-hkdf384',
    aead: 'gcmsiv',
    kdf: sha384,
    commitment: false,
    signature: 'ML-DSA-87',
    merkleHash: 'SHA-384',
    description: 'default: AES-256-GCM-SIV records, HKDF-SHA384 data keys',
  } as const),
  Object.freeze({
    id: 3,
    name: 'cnsa2-gcm-hkdf384-commit',
    aead: 'gcm',
    kdf: sha384,
    commitment: true,
    signature: 'ML-DSA-87',
    merkleHash: 'SHA-384',
    description: 'CNSA 2.0: AES-256-GCM with a per-record subkey and a 32-byte key commitment, HKDF-SHA384',
  } as const),
]);

export const DEFAULT_SUITE: SuiteName = 'gcmsiv-hkdf384';

/** SUITES by id (sparse). */
const BY_ID: readonly (Suite | undefined)[] = SUITES.reduce<(Suite | undefined)[]>((a, x) => ((a[x.id] = x), a), []);

/** Every registered suite, by id. */
export function suites(): readonly Suite[] {
  return SUITES;
}

/**
 * The suite with this name or id.
 * @throws RangeError for an unknown suite.
 */
export function suite(nameOrId: SuiteName | number): Suite {
  // By id first, without a search: every record sealed or opened asks for its suite by id.
  const s =
    (typeof nameOrId === 'number' ? BY_ID[nameOrId] : undefined) ??
    SUITES.find((x) => x.name === nameOrId || x.id === nameOrId);
  if (s === undefined) {
    throw new RangeError(
      `unknown suite ${JSON.stringify(nameOrId)}; known: ${SUITES.map((x) => `${x.id} ${x.name}`).join(', ')}`,
    );
  }
  return s;
}
