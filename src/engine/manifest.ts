// The store manifest (DESIGN §6): the one persisted schema of a store's structure, with its binary
// framing and MAC. The engine keeps the installed manifest in this form and edits copies of it
// (drafts, src/engine/commit.ts); the verifier and the command line read the same type.
//
// Framing (docs/format.md):
//   "PQDM" ‖ version(1) ‖ be32(|json|) ‖ json (UTF-8) ‖ HMAC-SHA384(K_meta_g, everything before)[0, 32)
//   K_meta_g = HKDF-SHA384(R_g, salt_g, "pqdb manifest mac v1", 32), g = json.macGeneration
// The JSON is readable (it carries the key envelopes needed to unlock) but authenticated. Security
// caveat: `decodeManifest` parses before the MAC is checked (the MAC key comes from the key ring the
// JSON carries), so nothing it returns may be trusted until `verifyManifest` passed.

import { PqdbError } from '../errors';
import { hmac } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import type { GenerationRecord } from './keys';
import type { RegistryRecord } from './registry';
import type { Schema } from './codec';

export const MANIFEST_VERSION = 1;
const MANIFEST_MAGIC = [0x50, 0x51, 0x44, 0x4d]; // PQDM
/** Magic, version and the JSON length. */
const MANIFEST_HEAD_BYTES = 9;
/** The MAC is HMAC-SHA384 cut to 32 bytes. */
const MAC_BYTES = 32;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

/** The phases of a live migration, in order (DESIGN §8). */
export type MigrationPhase = 'copying' | 'indexing' | 'verifying' | 'activating' | 'done';

/** A migration's accounting: copied + superseded + deleted + withheld + failed + inserted = total. */
export interface MigrationCounts {
  /** Re-encrypted into the new generation by the migration. */
  copied: number;
  /** Updated by a write before the migration reached them. */
  superseded: number;
  /** Deleted before the migration reached them. */
  deleted: number;
  /** Refused by the authority check (left in their old generation). */
  withheld: number;
  /** Could not be read (left in their old generation; listed in `failures`). */
  failed: number;
  /** New ids written to the migrated collections during the migration. */
  inserted: number;
  /** Records at the start plus those inserted during. */
  total: number;
}

/**
 * A record a migration could not read, by its place in the log (its id is not written down: the
 * manifest names no record id) and the PqdbError code (or "ERROR") it failed with.
 */
export interface MigrationFailure {
  generation: number;
  leaf: number;
  code: string;
}

/** A migration as the manifest keeps it (under way in `migration`, finished in `migrations`). */
export interface MigrationRecord {
  id: string;
  collections: string[];
  to: number;
  generation: number;
  fromSuites: number[];
  phase: MigrationPhase;
  /** The last source record (generation, leaf index) the copy reached. */
  cursor: [number, number] | null;
  counts: MigrationCounts;
  startedAt: string;
  finishedAt?: string;
  workMs: number;
  phaseMs: Partial<Record<MigrationPhase, number>>;
  /** The first failures (at most MAX_FAILURES_KEPT; `counts.failed` counts all). */
  failures: MigrationFailure[];
  chunkRecords: number;
}

/** A log page: the leaf hashes [from, to) of its generation's log, written by a checkpoint. */
export interface LogPageRef {
  pageId: number;
  from: number;
  to: number;
}

/** A collection's sealed lexical index as of a checkpoint, and the last commit page it includes. */
export interface IndexRef {
  pageId: number;
  afterPage: number;
  fields?: string[];
}

export interface CollectionMeta {
  schema: Schema;
  suite: number;
}

/** A key generation as persisted: salt and envelopes in base64 (the root never leaves memory). */
export interface KeyringEntry {
  generation: number;
  suite: number;
  salt: string;
  envelopes: string[];
}

export interface Manifest {
  v: 1;
  storeId: string;
  macGeneration: number;
  nextPageId: number;
  nextSequence: number;
  keyring: KeyringEntry[];
  registry: RegistryRecord[];
  collections: Record<string, CollectionMeta>;
  /** The suite new collections write with unless they name one. */
  defaultSuite: number;
  /** The pages holding the signed checkpoints, oldest first (a page each: the manifest stays small). */
  checkpointPages?: number[];
  /** Per generation, the pages holding its log's leaf hashes as of the last checkpoint. */
  logs?: Record<string, LogPageRef[]>;
  /** Per collection, the sealed lexical index as of the last checkpoint. */
  indexes?: Record<string, IndexRef>;
  /** Recipient public keys (base64): new key generations are wrapped for each. */
  recipients?: string[];
  /** The migration under way, if any. */
  migration?: MigrationRecord;
  /** Finished migrations with their accounting, oldest first. */
  migrations?: MigrationRecord[];
  /** Retired key generations: roots destroyed, commit pages deleted; their logs and checkpoints stay. */
  retired?: number[];
}

export const b64 = (b: Uint8Array): string => btoa(String.fromCharCode(...b));
export const unb64 = (s: string): Uint8Array => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
export const fromHex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

/** The key ring's persisted form as the manifest writes it. */
export function keyringEntries(records: readonly GenerationRecord[]): KeyringEntry[] {
  return records.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: b64(r.salt),
    envelopes: r.envelopes.map(b64),
  }));
}

/** The manifest's key ring as the key ring takes it. */
export function generationRecords(m: Pick<Manifest, 'keyring'>): GenerationRecord[] {
  return m.keyring.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: unb64(r.salt),
    envelopes: r.envelopes.map(unb64),
  }));
}

/** Bytes of a new store's random id. */
const STORE_ID_BYTES = 16;

/** The manifest of a new store: a random store id, key generation `g` and nothing written yet. */
export function newManifest(
  g: number,
  keyring: readonly GenerationRecord[],
  registry: RegistryRecord[],
  suite: number,
  recipients: readonly Uint8Array[],
): Manifest {
  const storeId = new Uint8Array(STORE_ID_BYTES);
  globalThis.crypto.getRandomValues(storeId);
  return {
    v: 1,
    storeId: hex(storeId),
    macGeneration: g,
    nextPageId: 1,
    nextSequence: 1,
    keyring: keyringEntries(keyring),
    registry,
    collections: {},
    defaultSuite: suite,
    recipients: recipients.map((r) => b64(r)),
  };
}

/** A deep copy to edit (drafts): the manifest is plain JSON data. */
export function cloneManifest(m: Manifest): Manifest {
  return JSON.parse(JSON.stringify(m)) as Manifest;
}

/** Frames the manifest and appends its MAC under `macKey`. */
export function encodeManifest(m: Manifest, macKey: Uint8Array): Uint8Array {
  const body = enc.encode(JSON.stringify(m));
  const out = new Uint8Array(MANIFEST_HEAD_BYTES + body.length + MAC_BYTES);
  out.set(MANIFEST_MAGIC);
  out[4] = MANIFEST_VERSION;
  new DataView(out.buffer).setUint32(5, body.length);
  out.set(body, MANIFEST_HEAD_BYTES);
  const unsigned = out.subarray(0, MANIFEST_HEAD_BYTES + body.length);
  out.set(hmac(sha384, macKey, unsigned).subarray(0, MAC_BYTES), unsigned.length);
  return out;
}

/**
 * The manifest's JSON, read before its MAC can be checked (the MAC key comes from the key ring in
 * it): untrusted until verifyManifest passes.
 * @throws PqdbError CORRUPTION (not a manifest, bad length or JSON), FORMAT_VERSION.
 */
export function readManifestJson(bytes: Uint8Array): unknown {
  if (bytes.length < MANIFEST_HEAD_BYTES + MAC_BYTES || MANIFEST_MAGIC.some((m, i) => bytes[i] !== m))
    throw new PqdbError('CORRUPTION', 'not a pqdb manifest');
  if (bytes[4] !== MANIFEST_VERSION)
    throw new PqdbError('FORMAT_VERSION', `manifest version ${bytes[4]} is not supported`);
  const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(5);
  if (MANIFEST_HEAD_BYTES + len + MAC_BYTES !== bytes.length)
    throw new PqdbError('CORRUPTION', 'manifest length does not match');
  try {
    return JSON.parse(dec.decode(bytes.subarray(MANIFEST_HEAD_BYTES, MANIFEST_HEAD_BYTES + len)));
  } catch (cause) {
    throw new PqdbError('CORRUPTION', 'manifest JSON does not parse', { cause });
  }
}

/**
 * The manifest, parsed and checked for its format version (still unauthenticated: see
 * readManifestJson).
 * @throws PqdbError CORRUPTION, FORMAT_VERSION.
 */
export function decodeManifest(bytes: Uint8Array): Manifest {
  const json = readManifestJson(bytes) as Manifest;
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new PqdbError('CORRUPTION', 'the manifest is not a JSON object');
  if (json.v !== 1) throw new PqdbError('FORMAT_VERSION', `store manifest format ${String(json.v)} is not supported`);
  return json;
}

/** Checks the manifest MAC (constant-time compare). @throws PqdbError AUTH_FAILED */
export function verifyManifest(bytes: Uint8Array, macKey: Uint8Array): void {
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  const mac = hmac(sha384, macKey, body);
  let d = 0;
  for (let i = 0; i < MAC_BYTES; i++) d |= mac[i] ^ bytes[body.length + i];
  if (d !== 0) throw new PqdbError('AUTH_FAILED', 'the manifest does not authenticate');
}
