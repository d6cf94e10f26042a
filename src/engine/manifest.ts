// The store manifest (DESIGN §6, §11): the one persisted schema of a store's structure, with its
// binary framing. The engine keeps the installed manifest in this form and edits copies of it
// (drafts, src/engine/commit.ts); the verifier and the command line read the same type.
//
// Framing, format 2 (docs/format.md):
//   "PQDM" ‖ 2 ‖ be32(|header|) ‖ header ‖ nonce(12) ‖ AES-256-GCM-SIV(K_manifest, nonce, aad = every byte before the nonce).encrypt(body)
//   header = JSON { v: 2, storeId, commit, envelopes: [[generation, [envelope (base64)…]]…] }
//   body   = JSON of every other field (collections, schemas, registry, counters, page lists,
//            recipients, migrations, and each generation's suite, salt and binding)
//   K_manifest = HKDF-SHA384(S, "", "pqdb manifest key v2", 32), S the store secret (keys.ts,
//            generation 0), storeId = hex(HKDF-SHA384(S, "", "pqdb store id v1", 16))
// Only what unlocking needs is readable: the store id, the commit counter and the key envelopes
// (which name their recipients by key id). The body's tag authenticates the header too, under a key
// only a holder of a recipient secret key can derive. The header is untrusted until the body opens:
// openManifest checks its shape before unwrapping anything and validates every field of the body
// (types, ranges, known suites and states) before anything uses it.

import { PqdbError } from '../errors';
import { gcmsiv } from '../kernels/aead';
import { suites } from '../crypto/suites';
import { KeyRing, openStoreSecret, withStoreKey, type GenerationRecord } from './keys';
import type { RegistryRecord } from './registry';
import { compileSchema, type Schema } from './codec';

export const MANIFEST_VERSION = 2;
const MANIFEST_MAGIC = [0x50, 0x51, 0x44, 0x4d]; // PQDM
/** Magic, version and the header's length. */
const MANIFEST_HEAD_BYTES = 9;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Labels of the keys derived from the store secret. */
export const MANIFEST_KEY_LABEL = 'pqdb manifest key v2';
export const STORE_ID_LABEL = 'pqdb store id v1';
/** Bounds on what a manifest may hold (a manifest past them is not one pqdb wrote). */
const MAX_GENERATION = 2 ** 32 - 1;
const MAX_PAGE_ID = 0xffff_ffff;
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

/** What an inventoried managed copy is (DESIGN §9, docs/authority.md). */
export type CopyKind = 'backup' | 'generation' | 'restore';
/** `retained` (held), `retired` (retirement recorded), `restored-from` (a restore was made from it). */
export type CopyState = 'retained' | 'retired' | 'restored-from';
export const COPY_STATES: readonly CopyState[] = ['retained', 'retired', 'restored-from'];
export const COPY_KINDS: readonly CopyKind[] = ['backup', 'generation', 'restore'];

/**
 * A managed copy as the store's inventory keeps it: a backup written by `store.backup`, a migration's
 * old key generation kept in the store after activation, or (in a restored store) the copy it was
 * restored from. No key or record id is written here.
 */
export interface CopyRecord {
  /** 32 hex digits, random. */
  id: string;
  kind: CopyKind;
  /** When it was made (ISO 8601). */
  time: string;
  /** Where it is: a directory, an IndexedDB database name, a page store kind, or "this store". */
  destination: string;
  /** The location it was written to by name (a directory, a database), which retiring deletes. */
  location?: string;
  /** The key generations whose records it holds. */
  generations: number[];
  /** The suites its records are sealed with. */
  suites: number[];
  /** Live records it holds. */
  records: number;
  /** The commit counter of the store state it holds. */
  commit: number;
  /** SHA-384 (hex) of the signed checkpoint it holds, when it holds one. */
  checkpoint?: string;
  state: CopyState;
  /** When it was retired (state retired). */
  retiredAt?: string;
  /** Restores made from it: when, and the id of the store restored into. */
  restores?: { time: string; storeId: string }[];
  /** For kind `restore`: the id of the store the copy came from. */
  sourceStoreId?: string;
}

/** A log page: the leaf hashes [from, to) of its generation's log, written by a checkpoint. */
export interface LogPageRef {
  pageId: number;
  from: number;
  to: number;
}

/**
 * The persisted key directory: a full snapshot and the runs of changes written after it, each a list
 * of sealed directory pages, covering every commit page up to `afterPage`; `dropped` lists commit
 * pages up to `afterPage` deleted since (a retired generation's).
 */
export interface DirectoryRef {
  afterPage: number;
  /** `bytes`: the snapshot's plaintext length (its pages are then read as ranges). */
  snapshots: { kind: 'base' | 'run'; pages: number[]; rows: number; bytes?: number }[];
  dropped?: number[];
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

/** A key generation as persisted: salt, envelopes and binding in base64 (the root never leaves memory). */
export interface KeyringEntry {
  generation: number;
  suite: number;
  salt: string;
  envelopes: string[];
  bind?: string;
}

export interface Manifest {
  v: 2;
  /** 32 hex digits, derived from the store secret. */
  storeId: string;
  /** Commits made so far: a freshness counter an application can keep elsewhere (minCommit). */
  commit: number;
  nextPageId: number;
  nextSequence: number;
  keyring: KeyringEntry[];
  registry: RegistryRecord[];
  collections: Record<string, CollectionMeta>;
  /** The suite new collections write with unless they name one. */
  defaultSuite: number;
  /** The pages holding the signed checkpoints, oldest first (a page each: the manifest stays small). */
  checkpointPages?: number[];
  /**
   * SHA-384 (base64) of the newest signed checkpoint: checkpoint pages chain to it by their
   * `previous` hashes, so this one hash authenticates every checkpoint page the manifest names.
   */
  lastCheckpoint?: string;
  /**
   * Per generation, the size and root (base64) of its Merkle log after the last commit: the live
   * commit pages are those whose operations give exactly this log (DESIGN §11).
   */
  heads?: Record<string, { size: number; root: string }>;
  /** Per generation, the pages holding its log's leaf hashes as of the last checkpoint. */
  logs?: Record<string, LogPageRef[]>;
  /** Per collection, the sealed lexical index as of the last checkpoint. */
  indexes?: Record<string, IndexRef>;
  /** The key directory as persisted at the last checkpoint (src/engine/directory-pages.ts). */
  directory?: DirectoryRef;
  /** Recipient public keys (base64): new key generations are wrapped for each. */
  recipients?: string[];
  /** The migration under way, if any. */
  migration?: MigrationRecord;
  /** Finished migrations with their accounting, oldest first. */
  migrations?: MigrationRecord[];
  /** Retired key generations: roots destroyed, commit pages deleted; their logs and checkpoints stay. */
  retired?: number[];
  /**
   * The pinned authority public keys, the threshold of the first policy and the domain the store
   * pins (both optional), and the current signed policy, base64 (docs/authority.md).
   */
  authority?: { keys: string[]; policy?: string; threshold?: number; domain?: string };
  /** The managed copies inventory, oldest first. */
  copies?: CopyRecord[];
  /** Pages commits deleted while a backup held a pin, still in the page store (pins.ts): not part of it. */
  heldPages?: number[];
  /** Set in a managed copy's manifest only: which copy of which store this is (it opens read-only). */
  copy?: { id: string; of: string; time: string };
}

export const b64 = (b: Uint8Array): string => btoa(String.fromCharCode(...b));
export const unb64 = (s: string): Uint8Array => {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch (cause) {
    throw new PqdbError('CORRUPTION', 'bad base64', { cause });
  }
};
export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
export const fromHex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

/** The key ring's persisted form as the manifest writes it. */
export function keyringEntries(records: readonly GenerationRecord[]): KeyringEntry[] {
  return records.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: b64(r.salt),
    envelopes: r.envelopes.map(b64),
    ...(r.bind !== undefined ? { bind: b64(r.bind) } : {}),
  }));
}

/** The manifest's key ring as the key ring takes it. */
export function generationRecords(m: Pick<Manifest, 'keyring'>): GenerationRecord[] {
  return m.keyring.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: unb64(r.salt),
    envelopes: r.envelopes.map(unb64),
    ...(r.bind !== undefined ? { bind: unb64(r.bind) } : {}),
  }));
}

/** The manifest of a new store: its id (derived from its store secret) and nothing written yet. */
export function newManifest(
  storeId: string,
  keyring: readonly GenerationRecord[],
  registry: RegistryRecord[],
  suite: number,
  recipients: readonly Uint8Array[],
): Manifest {
  return {
    v: 2,
    storeId,
    commit: 0,
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

/** The manifest's readable header: what unlocking needs. */
export interface ManifestHeader {
  v: 2;
  storeId: string;
  commit: number;
  /** Per generation (0 = the store secret), its key envelopes. */
  envelopes: [number, string[]][];
}

/** A manifest as read, before its body is opened. */
export interface SealedManifest {
  readonly header: ManifestHeader;
  /** The store secret's envelopes. */
  readonly storeEnvelopes: Uint8Array[];
  /** Opens and validates the body under K_manifest. @throws PqdbError AUTH_FAILED, CORRUPTION */
  open(manifestKey: Uint8Array): Manifest;
}

/** Seals the manifest under `manifestKey` (K_manifest) with a fresh nonce. */
export function encodeManifest(m: Manifest, manifestKey: Uint8Array): Uint8Array {
  const { v, storeId, commit, keyring, ...rest } = m;
  const header: ManifestHeader = { v, storeId, commit, envelopes: keyring.map((k) => [k.generation, k.envelopes]) };
  const body = { ...rest, keyring: keyring.map(({ envelopes: _, ...k }) => k) };
  const head = enc.encode(JSON.stringify(header));
  const plain = enc.encode(JSON.stringify(body));
  const at = MANIFEST_HEAD_BYTES + head.length;
  const out = new Uint8Array(at + NONCE_BYTES + plain.length + TAG_BYTES);
  out.set(MANIFEST_MAGIC);
  out[4] = MANIFEST_VERSION;
  new DataView(out.buffer).setUint32(5, head.length);
  out.set(head, MANIFEST_HEAD_BYTES);
  const nonce = out.subarray(at, at + NONCE_BYTES);
  globalThis.crypto.getRandomValues(nonce);
  const aead = gcmsiv.withKey(manifestKey);
  try {
    aead.encrypt(nonce, plain, out.subarray(0, at), out.subarray(at + NONCE_BYTES));
  } finally {
    aead.destroy();
    plain.fill(0);
  }
  return out;
}

/**
 * Reads a manifest's framing and header (untrusted until `open` succeeds).
 * @throws PqdbError CORRUPTION (not a manifest, bad framing or header), FORMAT_VERSION (another
 * format, such as a store of an earlier pre-release).
 */
export function readManifest(bytes: Uint8Array): SealedManifest {
  if (
    !(bytes instanceof Uint8Array) ||
    bytes.length < MANIFEST_HEAD_BYTES ||
    MANIFEST_MAGIC.some((m, i) => bytes[i] !== m)
  )
    throw new PqdbError('CORRUPTION', 'not a pqdb manifest');
  if (bytes[4] !== MANIFEST_VERSION)
    throw new PqdbError(
      'FORMAT_VERSION',
      bytes[4] === 1
        ? 'this store was written by an earlier pre-release of pqdb (manifest format 1), which it cannot open: recreate the store'
        : `manifest format ${bytes[4]} is not supported`,
    );
  const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(5);
  const at = MANIFEST_HEAD_BYTES + len;
  if (at + NONCE_BYTES + TAG_BYTES > bytes.length) throw new PqdbError('CORRUPTION', 'the manifest is truncated');
  const header = checkHeader(parseJson(bytes.subarray(MANIFEST_HEAD_BYTES, at), 'header'));
  const store = header.envelopes.find(([g]) => g === 0);
  if (store === undefined) throw new PqdbError('CORRUPTION', 'the manifest has no store secret');
  return {
    header,
    storeEnvelopes: store[1].map((e) => base64(e, 'an envelope')),
    open(manifestKey: Uint8Array): Manifest {
      const aead = gcmsiv.withKey(manifestKey);
      let plain: Uint8Array;
      try {
        plain = aead.decrypt(
          bytes.subarray(at, at + NONCE_BYTES),
          bytes.subarray(at + NONCE_BYTES),
          bytes.subarray(0, at),
        );
      } catch (cause) {
        throw new PqdbError('AUTH_FAILED', 'the manifest does not authenticate', { cause });
      } finally {
        aead.destroy();
      }
      const body = parseJson(plain, 'body');
      plain.fill(0);
      return checkManifest(header, body);
    },
  };
}

/**
 * Opens a manifest with a recipient secret key: unwraps the store secret, checks that the store id
 * is derived from it (and equals `storeId` when the caller pins one), opens and validates the body,
 * and unlocks every key generation (each must be bound to the store secret).
 * @throws PqdbError AUTH_FAILED (wrong key, altered manifest, a generation not bound to the store,
 * another store than the pinned one), CORRUPTION, FORMAT_VERSION.
 */
export function unlockManifest(
  raw: Uint8Array,
  secretKey: Uint8Array,
  options: { keyCacheSize?: number; storeId?: string } = {},
): { manifest: Manifest; keys: KeyRing } {
  const sealed = readManifest(raw);
  if (options.storeId !== undefined && options.storeId.toLowerCase() !== sealed.header.storeId)
    throw new PqdbError('AUTH_FAILED', `this is not the store ${options.storeId} (its id is ${sealed.header.storeId})`);
  const secret = openStoreSecret(sealed.storeEnvelopes, secretKey);
  let keys: KeyRing | undefined;
  try {
    if (withStoreKey(secret, STORE_ID_LABEL, hex, 16) !== sealed.header.storeId)
      throw new PqdbError('AUTH_FAILED', 'the manifest does not authenticate');
    const manifest = withStoreKey(secret, MANIFEST_KEY_LABEL, (k) => sealed.open(k));
    keys = new KeyRing(generationRecords(manifest), options.keyCacheSize);
    keys.unlock(secretKey, secret);
    return { manifest, keys };
  } catch (e) {
    if (keys !== undefined) keys.close();
    else secret.fill(0);
    throw e;
  }
}

// ---- validation: every field read from the medium is checked before use ---------------------------

function corrupt(what: string): never {
  throw new PqdbError('CORRUPTION', `the manifest ${what}`);
}

function parseJson(bytes: Uint8Array, part: string): unknown {
  try {
    return JSON.parse(dec.decode(bytes));
  } catch (cause) {
    throw new PqdbError('CORRUPTION', `the manifest ${part} does not parse`, { cause });
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const int = (x: unknown, min: number, max: number, what: string): number =>
  Number.isSafeInteger(x) && (x as number) >= min && (x as number) <= max
    ? (x as number)
    : corrupt(`has a bad ${what}`);
const str = (x: unknown, what: string): string => (typeof x === 'string' ? x : corrupt(`has a bad ${what}`));
const list = (x: unknown, what: string): unknown[] => (Array.isArray(x) ? x : corrupt(`has a bad ${what}`));
const base64 = (x: unknown, what: string): Uint8Array => {
  const s = str(x, what);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) corrupt(`has a bad ${what}`);
  return unb64(s);
};
const suiteId = (x: unknown, what: string): number => {
  const id = int(x, 0, 255, what);
  if (!suites().some((s) => s.id === id)) corrupt(`names an unknown suite (${what})`);
  return id;
};

function checkHeader(h: unknown): ManifestHeader {
  if (!isObject(h)) corrupt('header is not an object');
  if (h.v !== MANIFEST_VERSION) corrupt('header has a bad version');
  if (!/^[0-9a-f]{32}$/.test(str(h.storeId, 'store id'))) corrupt('has a bad store id');
  int(h.commit, 0, Number.MAX_SAFE_INTEGER, 'commit counter');
  const seen = new Set<number>();
  for (const e of list(h.envelopes, 'envelope list')) {
    const [g, envs] = list(e, 'envelope list');
    const generation = int(g, 0, MAX_GENERATION, 'generation');
    if (seen.has(generation)) corrupt('lists a generation twice');
    seen.add(generation);
    if (list(envs, 'envelope list').length === 0) corrupt(`has no envelope for generation ${generation}`);
    for (const x of envs as unknown[]) base64(x, 'envelope');
  }
  return h as unknown as ManifestHeader;
}

/** The body checked field by field and joined with its header into a Manifest. */
function checkManifest(h: ManifestHeader, b: unknown): Manifest {
  if (!isObject(b)) corrupt('body is not an object');
  const nextPageId = int(b.nextPageId, 1, MAX_PAGE_ID + 1, 'page counter');
  const pageId = (x: unknown) => {
    const id = int(x, 1, MAX_PAGE_ID, 'page id');
    return id < nextPageId ? id : corrupt('names a page beyond its page counter');
  };
  int(b.nextSequence, 1, Number.MAX_SAFE_INTEGER, 'sequence counter');
  const envelopes = new Map(h.envelopes);
  const keyring: KeyringEntry[] = list(b.keyring, 'key ring').map((k) => {
    if (!isObject(k)) corrupt('has a bad key ring entry');
    const generation = int(k.generation, 0, MAX_GENERATION, 'generation');
    const envs = envelopes.get(generation) ?? corrupt(`has no envelopes for generation ${generation}`);
    envelopes.delete(generation);
    suiteId(k.suite, 'key generation suite');
    const salt = base64(k.salt, 'salt');
    if (generation > 0 && (salt.length !== 32 || k.bind === undefined || base64(k.bind, 'binding').length !== 32))
      corrupt(`has a bad salt or binding for generation ${generation}`);
    return { ...(k as unknown as KeyringEntry), envelopes: envs };
  });
  if (envelopes.size > 0) corrupt('has envelopes for a generation it does not list');
  if (!keyring.some((k) => k.generation > 0)) corrupt('has no key generation');
  const registry = list(b.registry, 'registry');
  for (const r of registry) {
    if (!isObject(r)) corrupt('has a bad registry entry');
    suiteId(r.suite, 'registry suite');
    if (!['active', 'decrypt-only', 'quarantined', 'retired'].includes(str(r.state, 'registry state')))
      corrupt('has an unknown registry state');
    str(r.since, 'registry date');
  }
  if (!isObject(b.collections)) corrupt('has a bad collection list');
  for (const c of Object.values(b.collections)) {
    if (!isObject(c) || !isObject(c.schema)) corrupt('has a bad collection');
    suiteId(c.suite, 'collection suite');
    try {
      compileSchema(c.schema as Schema);
    } catch {
      corrupt('has a bad collection schema');
    }
  }
  suiteId(b.defaultSuite, 'default suite');
  if (b.checkpointPages !== undefined) list(b.checkpointPages, 'checkpoint list').forEach(pageId);
  if (b.lastCheckpoint !== undefined && base64(b.lastCheckpoint, 'checkpoint hash').length !== 48)
    corrupt('has a bad checkpoint hash');
  if (b.logs !== undefined) {
    if (!isObject(b.logs)) corrupt('has a bad log list');
    for (const [g, refs] of Object.entries(b.logs)) {
      int(Number(g), 1, MAX_GENERATION, 'log generation');
      for (const ref of list(refs, 'log list')) {
        if (!isObject(ref)) corrupt('has a bad log page entry');
        pageId(ref.pageId);
        const from = int(ref.from, 0, Number.MAX_SAFE_INTEGER, 'log range');
        if (int(ref.to, from + 1, Number.MAX_SAFE_INTEGER, 'log range') <= from) corrupt('has a bad log range');
      }
    }
  }
  if (b.heads !== undefined) {
    if (!isObject(b.heads)) corrupt('has a bad log head list');
    for (const [g, head] of Object.entries(b.heads)) {
      int(Number(g), 1, MAX_GENERATION, 'log generation');
      if (!isObject(head)) corrupt('has a bad log head');
      int(head.size, 1, Number.MAX_SAFE_INTEGER, 'log size');
      if (base64(head.root, 'log root').length !== 48) corrupt('has a bad log root');
    }
  }
  if (b.indexes !== undefined) {
    if (!isObject(b.indexes)) corrupt('has a bad index list');
    for (const ref of Object.values(b.indexes)) {
      if (!isObject(ref)) corrupt('has a bad index entry');
      pageId(ref.pageId);
      int(ref.afterPage, 0, MAX_PAGE_ID, 'index coverage');
      if (ref.fields !== undefined) list(ref.fields, 'index fields').forEach((f) => str(f, 'index field'));
    }
  }
  if (b.directory !== undefined) {
    const d = b.directory;
    if (!isObject(d)) corrupt('has a bad directory entry');
    int(d.afterPage, 0, nextPageId - 1, 'directory coverage');
    const snapshots = list(d.snapshots, 'directory snapshots');
    if (snapshots.length === 0) corrupt('has a directory without a snapshot');
    snapshots.forEach((x, i) => {
      if (!isObject(x) || x.kind !== (i === 0 ? 'base' : 'run')) corrupt('has a bad directory snapshot');
      if (list(x.pages, 'directory pages').length === 0) corrupt('has a directory snapshot without pages');
      (x.pages as unknown[]).forEach(pageId);
      int(x.rows, 0, Number.MAX_SAFE_INTEGER, 'directory rows');
      if (x.bytes !== undefined) int(x.bytes, 1, Number.MAX_SAFE_INTEGER, 'directory bytes');
    });
    if (d.dropped !== undefined) list(d.dropped, 'directory drops').forEach(pageId);
  }
  if (b.recipients !== undefined) list(b.recipients, 'recipient list').forEach((x) => base64(x, 'recipient'));
  if (b.retired !== undefined) list(b.retired, 'retired list').forEach((g) => int(g, 1, MAX_GENERATION, 'generation'));
  if (b.authority !== undefined) {
    if (!isObject(b.authority)) corrupt('has a bad authority entry');
    const keys = list(b.authority.keys, 'authority key list');
    if (keys.length === 0 || keys.length > 16) corrupt('has a bad authority key list');
    keys.forEach((k) => base64(k, 'authority key'));
    if (b.authority.policy !== undefined) base64(b.authority.policy, 'authority policy');
    if (b.authority.threshold !== undefined) int(b.authority.threshold, 1, keys.length, 'authority threshold');
    if (b.authority.domain !== undefined && str(b.authority.domain, 'authority domain') === '')
      corrupt('has a bad authority domain');
  }
  if (b.copies !== undefined) list(b.copies, 'copy list').forEach(checkCopy);
  if (b.heldPages !== undefined) list(b.heldPages, 'held page list').forEach(pageId);
  if (b.copy !== undefined) {
    if (!isObject(b.copy) || !/^[0-9a-f]{32}$/.test(str(b.copy.id, 'copy marker')) || b.copy.of !== h.storeId)
      corrupt('has a bad copy marker');
    str(b.copy.time, 'copy marker');
  }
  for (const m of [...(b.migration !== undefined ? [b.migration] : []), ...list(b.migrations ?? [], 'migration list')])
    checkMigration(m);
  return {
    ...(b as unknown as Omit<Manifest, 'v' | 'storeId' | 'commit'>),
    v: h.v,
    storeId: h.storeId,
    commit: h.commit,
    keyring,
  };
}

function checkCopy(c: unknown): void {
  if (!isObject(c)) corrupt('has a bad copy entry');
  if (!/^[0-9a-f]{32}$/.test(str(c.id, 'copy id'))) corrupt('has a bad copy id');
  if (!(COPY_KINDS as string[]).includes(str(c.kind, 'copy kind'))) corrupt('has an unknown copy kind');
  if (!(COPY_STATES as string[]).includes(str(c.state, 'copy state'))) corrupt('has an unknown copy state');
  str(c.time, 'copy date');
  str(c.destination, 'copy destination');
  if (c.location !== undefined) str(c.location, 'copy location');
  list(c.generations, 'copy generations').forEach((g) => int(g, 1, MAX_GENERATION, 'copy generation'));
  list(c.suites, 'copy suites').forEach((x) => suiteId(x, 'copy suite'));
  int(c.records, 0, Number.MAX_SAFE_INTEGER, 'copy record count');
  int(c.commit, 0, Number.MAX_SAFE_INTEGER, 'copy commit');
  if (c.checkpoint !== undefined && !/^[0-9a-f]{96}$/.test(str(c.checkpoint, 'copy checkpoint')))
    corrupt('has a bad copy checkpoint');
  if (c.retiredAt !== undefined) str(c.retiredAt, 'copy retirement date');
  if (c.sourceStoreId !== undefined && !/^[0-9a-f]{32}$/.test(str(c.sourceStoreId, 'copy source')))
    corrupt('has a bad copy source');
  for (const r of list(c.restores ?? [], 'copy restores')) {
    if (!isObject(r)) corrupt('has a bad copy restore');
    str(r.time, 'copy restore date');
    if (!/^[0-9a-f]{32}$/.test(str(r.storeId, 'copy restore store'))) corrupt('has a bad copy restore store');
  }
}

function checkMigration(m: unknown): void {
  if (!isObject(m)) corrupt('has a bad migration');
  str(m.id, 'migration id');
  list(m.collections, 'migration collections').forEach((c) => str(c, 'migration collection'));
  suiteId(m.to, 'migration target');
  int(m.generation, 1, MAX_GENERATION, 'migration generation');
  list(m.fromSuites, 'migration suites').forEach((x) => suiteId(x, 'migration suite'));
  if (!['copying', 'indexing', 'verifying', 'activating', 'done'].includes(str(m.phase, 'migration phase')))
    corrupt('has an unknown migration phase');
  if (m.cursor !== null) {
    const [g, leaf] = list(m.cursor, 'migration cursor');
    int(g, 1, MAX_GENERATION, 'migration cursor');
    int(leaf, 0, Number.MAX_SAFE_INTEGER, 'migration cursor');
  }
  if (!isObject(m.counts)) corrupt('has bad migration counts');
  for (const k of ['copied', 'superseded', 'deleted', 'withheld', 'failed', 'inserted', 'total'])
    int(m.counts[k], 0, Number.MAX_SAFE_INTEGER, 'migration count');
  str(m.startedAt, 'migration date');
  if (typeof m.workMs !== 'number' || !isObject(m.phaseMs)) corrupt('has bad migration times');
  for (const f of list(m.failures, 'migration failures')) {
    if (!isObject(f)) corrupt('has a bad migration failure');
    int(f.generation, 1, MAX_GENERATION, 'migration failure');
    int(f.leaf, 0, Number.MAX_SAFE_INTEGER, 'migration failure');
    str(f.code, 'migration failure');
  }
  int(m.chunkRecords, 1, 100_000, 'migration chunk size');
}
