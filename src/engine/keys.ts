// The key ring of a store (DESIGN §4): one root secret per key generation, stored only inside key
// envelopes (one per recipient), unwrapped in memory when the store is unlocked; data keys derived on
// demand from (root, suite, generation, governance), cached in a bounded LRU of keyed AEADs, and
// wiped on eviction and on close. No data key is ever persisted; there is no per-record key inventory.
//
// Generation 0 is the store secret S: a root like the others (wrapped for every recipient) that
// seals the manifest, names the store (its id is derived from S) and binds every other generation
// to the store — bind_g = HMAC-SHA384(K_bind, "pqdb generation v1" ‖ be32(g) ‖ suite ‖ salt_g ‖
// check_g)[0, 32) with check_g = HKDF-SHA384(R_g, salt_g, "pqdb root check v1", 32) — so a root
// someone wrapped to a recipient's public key (anyone can: an envelope is not sender-authenticated)
// is refused on unlock. S is never retired and writes no record.

import { bytes, integer } from '../_args';
import { hex } from '../_encoding';
import { hkdf, hmac } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import { PqdbError } from '../errors';
import { gcm, gcmsiv, type KeyedAead } from '../kernels/aead';
import { randomBytes } from '../kernels/mlkem';
import { ml_kem1024_x25519 } from '../crypto/kem';
import { wrapRoot, unwrapRoot, readEnvelope, recipientId, type PublicKeyPair } from '../crypto/envelope';
import { deriveDataKey, canonicalGovernanceText, type Governance } from '../crypto/record';
import { suite as suiteOf, type Suite, type SuiteName } from '../crypto/suites';
import { x25519 } from '../kernels/x25519';

/** What the manifest keeps of a generation: never the root. Generation 0 is the store secret. */
export interface GenerationRecord {
  generation: number;
  suite: number;
  salt: Uint8Array;
  envelopes: Uint8Array[];
  /** The generation's binding to the store secret (32 bytes; generations ≥ 1). */
  bind?: Uint8Array;
}

/** The store secret's generation number. */
export const STORE_GENERATION = 0;
const BIND_BYTES = 32;
const enc = new TextEncoder();

/** A key derived from the store secret S for `label` (no salt: S is uniformly random). */
export function storeKey(secret: Uint8Array, label: string, length = 32): Uint8Array {
  return hkdf(sha384, secret, new Uint8Array(0), enc.encode(label), length);
}

/** `use(key)` for the key storeKey(secret, label, length), wiped once `use` returns or throws. */
export function withStoreKey<T>(secret: Uint8Array, label: string, use: (key: Uint8Array) => T, length = 32): T {
  const key = storeKey(secret, label, length);
  try {
    return use(key);
  } finally {
    key.fill(0);
  }
}

/**
 * The blind of the leaves of a commit page with commit salt `salt`: HMAC-SHA384 under a key from
 * the store secret, cut to 32 bytes (src/crypto/proofs.ts BLIND_BYTES). Published leaf hashes are
 * then no dictionary oracle for ids or governance states.
 * @throws PqdbError AUTH_FAILED when the store secret is locked.
 */
export function leafBlind(keys: KeyRing, salt: Uint8Array): Uint8Array {
  return hmac(sha384, keys.storeKey('pqdb leaf blind key v1'), salt).slice(0, 32);
}

/** bind_g for a generation record and its root (see the file header). */
function bindOf(secret: Uint8Array, r: GenerationRecord, root: Uint8Array): Uint8Array {
  const check = hkdf(sha384, root, r.salt, enc.encode('pqdb root check v1'), 32);
  const label = enc.encode('pqdb generation v1');
  const msg = new Uint8Array(label.length + 5 + r.salt.length + check.length);
  msg.set(label);
  new DataView(msg.buffer).setUint32(label.length, r.generation);
  msg[label.length + 4] = r.suite;
  msg.set(r.salt, label.length + 5);
  msg.set(check, label.length + 5 + r.salt.length);
  const key = storeKey(secret, 'pqdb generation bind key v1');
  const mac = hmac(sha384, key, msg).slice(0, BIND_BYTES);
  key.fill(0);
  check.fill(0);
  return mac;
}

export const DEFAULT_KEY_CACHE = 1024;

/** The public keys a recipient secret key may have (as a hybrid 32-byte seed and as an X25519 scalar). */
export function publicKeysOf(secretKey: Uint8Array): PublicKeyPair {
  bytes('secretKey', secretKey, 32);
  // A 32-byte secret may be either kind: try both ids (the hybrid id needs an ML-KEM key generation).
  return [ml_kem1024_x25519.getPublicKey(secretKey), x25519.getPublicKey(secretKey)];
}

/**
 * Refuses a recipient secret key given where a public key belongs (it would sit in the manifest
 * every recipient reads, its owner locked out): a 32-byte key whose public key, taking it for a
 * hybrid seed or an X25519 scalar, has a recipient id in `ids` (a recipient of the store or of the
 * same call). Any other secret key is refused by wrapRoot's X25519 shape check 31 times out of 32.
 * @throws PqdbError INVALID_KEY
 */
function refuseSecretKey(name: string, key: Uint8Array, ids: ReadonlySet<string>): void {
  if (bytes(name, key).length === 32 && publicKeysOf(key).some((pk) => ids.has(hex(recipientId(pk)))))
    throw new PqdbError('INVALID_KEY', `"${name}" is a recipient's secret key, not a public key`);
}

/**
 * Unwraps a generation's root (0: the store secret) with `secretKey`; with `idOnly`, finds the
 * recipient without unwrapping.
 * @throws PqdbError AUTH_FAILED when no envelope is for this key or it does not open.
 */
function unwrapFor(
  r: Pick<GenerationRecord, 'generation' | 'envelopes'>,
  secretKey: Uint8Array,
  idOnly = false,
  publicKeys: PublicKeyPair = publicKeysOf(secretKey),
): { root: Uint8Array; publicKey: Uint8Array } {
  const ids = publicKeys.map((pk) => hex(recipientId(pk)));
  const env = r.envelopes.find((e) => ids.includes(hex(readEnvelope(e).recipientId)));
  if (env === undefined)
    throw new PqdbError(
      'AUTH_FAILED',
      r.generation === STORE_GENERATION
        ? "the secret key opens none of the store's key envelopes"
        : `the secret key does not open key generation ${r.generation}`,
    );
  const publicKey = publicKeys[ids.indexOf(hex(readEnvelope(env).recipientId))];
  return { root: idOnly ? new Uint8Array(0) : unwrapRoot(env, secretKey, publicKeys), publicKey };
}

/**
 * The store secret S, unwrapped from its envelopes with `secretKey` (the caller wipes it, or hands
 * it to KeyRing.unlock).
 * @throws PqdbError AUTH_FAILED, CORRUPTION, FORMAT_VERSION.
 */
export function openStoreSecret(
  envelopes: Uint8Array[],
  secretKey: Uint8Array,
  publicKeys: PublicKeyPair = publicKeysOf(secretKey),
): Uint8Array {
  return unwrapFor({ generation: STORE_GENERATION, envelopes }, secretKey, false, publicKeys).root;
}

export class KeyRing {
  readonly #generations = new Map<number, GenerationRecord>();
  readonly #roots = new Map<number, Uint8Array>();
  readonly #cache = new Map<string, { key: Uint8Array; aead: KeyedAead }>();
  readonly #derived = new Map<string, Uint8Array>();
  readonly #cacheSize: number;
  /**
   * The arguments and result of the last aeadFor call: a run of reads or writes under one
   * governance asks for the same key each time, and this skips building the cache key and the LRU
   * refresh for it. Cleared whenever a cached entry is dropped.
   */
  #last?: {
    suite: SuiteName | number;
    generation: number;
    governance: Governance | string | undefined;
    result: { suite: Suite; key: Uint8Array; aead: KeyedAead };
  };
  #closed = false;
  #unlockedBy?: Uint8Array;

  constructor(records: readonly GenerationRecord[] = [], cacheSize = DEFAULT_KEY_CACHE) {
    this.#cacheSize = integer('cacheSize', cacheSize, 1, 1 << 20);
    for (const r of records)
      this.#generations.set(r.generation, { ...r, salt: r.salt.slice(), envelopes: r.envelopes.map((e) => e.slice()) });
  }

  private live(): void {
    if (this.#closed) throw new PqdbError('NOT_OPEN', 'the key ring is closed');
  }

  /** The persisted form of every generation (envelopes and salts; roots never leave memory). */
  records(): GenerationRecord[] {
    return [...this.#generations.values()].map((r) => ({
      ...r,
      salt: r.salt.slice(),
      envelopes: r.envelopes.map((e) => e.slice()),
      ...(r.bind !== undefined ? { bind: r.bind.slice() } : {}),
    }));
  }

  /** The key generations that seal records (the store secret, generation 0, is not one). */
  generations(): number[] {
    return [...this.#generations.keys()].filter((g) => g !== STORE_GENERATION).sort((a, b) => a - b);
  }

  /**
   * A key derived from the store secret for `label`, cached until close.
   * @throws PqdbError AUTH_FAILED when the ring is not unlocked.
   */
  storeKey(label: string, length = 32): Uint8Array {
    this.live();
    const cacheKey = `#store/${label}/${length}`;
    const hit = this.#derived.get(cacheKey);
    if (hit !== undefined) return hit;
    const secret = this.#roots.get(STORE_GENERATION);
    if (secret === undefined) throw new PqdbError('AUTH_FAILED', 'the store secret is not unlocked');
    const key = storeKey(secret, label, length);
    this.#derived.set(cacheKey, key);
    return key;
  }

  /**
   * A draft of the ring's persisted form, to edit inside a commit (src/engine/commit.ts): it takes
   * effect through install() once the commit is durable; a dropped draft wipes the roots it made.
   */
  draft(): KeyringDraft {
    this.live();
    return new KeyringDraft(this.records(), (g) => this.#roots.get(g));
  }

  /**
   * Makes a draft the ring's state: its generations (with the roots it created); a generation the
   * draft no longer has is forgotten, its root and keys wiped.
   */
  install(draft: KeyringDraft): void {
    this.live();
    const keep = new Map(draft.records.map((r) => [r.generation, r]));
    for (const [g, root] of draft.takeRoots()) this.#roots.set(g, root);
    for (const g of [...this.#generations.keys(), ...this.#roots.keys()]) if (!keep.has(g)) this.#forget(g);
    this.#generations.clear();
    for (const [g, r] of keep) this.#generations.set(g, r);
  }

  /** Opens a new generation: a fresh random root and salt, wrapped for every recipient. */
  createGeneration(suiteName: SuiteName | number, recipients: readonly Uint8Array[]): number {
    const d = this.draft();
    const g = d.createGeneration(suiteName, recipients);
    this.install(d);
    return g;
  }

  /** Wipes and forgets one generation's root, data keys and per-generation keys. */
  #forget(generation: number): void {
    this.#roots.get(generation)?.fill(0);
    this.#roots.delete(generation);
    this.#generations.delete(generation);
    this.#last = undefined;
    for (const [k, e] of this.#cache) {
      if (!k.startsWith(`${generation}/`)) continue;
      e.aead.destroy();
      e.key.fill(0);
      this.#cache.delete(k);
    }
    for (const [k, v] of this.#derived) {
      if (!k.endsWith(`/${generation}`)) continue;
      v.fill(0);
      this.#derived.delete(k);
    }
  }

  /**
   * Unwraps the store secret and every generation's root with `secretKey`, and checks that each
   * generation is bound to the store secret. Returns the number of record generations opened.
   * @throws PqdbError AUTH_FAILED when the key does not open the store secret or some generation,
   * or a generation is not bound to the store (a root wrapped by someone else).
   */
  unlock(
    secretKey: Uint8Array,
    storeSecret?: Uint8Array,
    publicKeys: PublicKeyPair = publicKeysOf(secretKey), // once: an ML-KEM and an X25519 key derivation
  ): number {
    this.live();
    const unwrap = (r: GenerationRecord): Uint8Array => {
      const { root, publicKey } = unwrapFor(r, secretKey, false, publicKeys);
      this.#unlockedBy = publicKey;
      return root;
    };
    const store = this.#generations.get(STORE_GENERATION);
    if (store === undefined) throw new PqdbError('AUTH_FAILED', 'the key ring has no store secret');
    if (storeSecret !== undefined) {
      this.#unlockedBy = unwrapFor(store, secretKey, true, publicKeys).publicKey;
      this.#roots.get(STORE_GENERATION)?.fill(0);
      this.#roots.set(STORE_GENERATION, storeSecret); // already unwrapped by the caller (openStoreSecret)
    } else if (!this.#roots.has(STORE_GENERATION)) this.#roots.set(STORE_GENERATION, unwrap(store));
    else unwrap(store).fill(0); // roots made here (a new store): the caller must still be a recipient
    const secret = this.#roots.get(STORE_GENERATION)!;
    let opened = 0;
    for (const r of this.#generations.values()) {
      if (r.generation === STORE_GENERATION) continue;
      if (!this.#roots.has(r.generation)) {
        const root = unwrap(r);
        const bind = bindOf(secret, r, root);
        let d = r.bind === undefined || r.bind.length !== BIND_BYTES ? 1 : 0;
        for (let i = 0; i < BIND_BYTES && d === 0; i++) d |= bind[i] ^ r.bind![i];
        if (d !== 0) {
          root.fill(0);
          throw new PqdbError('AUTH_FAILED', `key generation ${r.generation} is not bound to this store`);
        }
        this.#roots.set(r.generation, root);
      }
      opened++;
    }
    return opened;
  }

  /**
   * The recipients new generations can be wrapped for when the store lists none: the unlocking
   * recipient, if every generation has it as its only envelope (otherwise undefined, since wrapping
   * for it alone would lock the others out).
   */
  soleRecipient(): Uint8Array | undefined {
    const pk = this.#unlockedBy;
    if (pk === undefined) return undefined;
    const id = hex(recipientId(pk));
    const sole = [...this.#generations.values()].every(
      (r) => r.envelopes.length === 1 && hex(readEnvelope(r.envelopes[0]).recipientId) === id,
    );
    return sole ? pk.slice() : undefined;
  }

  /** Wraps every unlocked root for one more recipient (no record is re-encrypted). */
  addRecipient(publicKey: Uint8Array): void {
    const d = this.draft();
    d.addRecipient(publicKey);
    this.install(d);
  }

  /**
   * Drops a recipient's envelopes (future generations will not include it).
   * @throws RangeError when it would leave a generation without any recipient.
   */
  removeRecipient(publicKey: Uint8Array): void {
    const d = this.draft();
    d.removeRecipient(publicKey);
    this.install(d);
  }

  /**
   * The keyed AEAD for (suite, generation, governance), from the LRU cache or derived now.
   * @throws PqdbError AUTH_FAILED when the generation is locked or unknown.
   */
  aeadFor(
    suiteName: SuiteName | number,
    generation: number,
    governance?: Governance | string,
  ): { suite: Suite; key: Uint8Array; aead: KeyedAead } {
    this.live();
    const last = this.#last;
    if (
      last !== undefined &&
      last.suite === suiteName &&
      last.generation === generation &&
      last.governance === governance
    )
      return last.result;
    const s = suiteOf(suiteName);
    // `governance` may be given already in canonical text form (the store keeps it that way).
    const canonical = typeof governance === 'string' ? governance : canonicalGovernanceText(governance);
    const cacheKey = `${generation}/${s.id}/${canonical}`;
    const hit = this.#cache.get(cacheKey);
    if (hit !== undefined) {
      this.#cache.delete(cacheKey); // refresh its place in the LRU order
      this.#cache.set(cacheKey, hit);
      const result = { suite: s, ...hit };
      this.#remember(suiteName, generation, governance, result);
      return result;
    }
    const r = this.#generations.get(generation);
    const root = this.#roots.get(generation);
    if (r === undefined || root === undefined)
      throw new PqdbError('AUTH_FAILED', `key generation ${generation} is not unlocked`);
    const key = deriveDataKey(root, r.salt, s.id, generation, canonical);
    const entry = { key, aead: (s.aead === 'gcm' ? gcm : gcmsiv).withKey(key) };
    this.#cache.set(cacheKey, entry);
    if (this.#cache.size > this.#cacheSize) {
      const [oldest, e] = this.#cache.entries().next().value as [string, { key: Uint8Array; aead: KeyedAead }];
      e.aead.destroy();
      e.key.fill(0);
      this.#cache.delete(oldest);
    }
    const result = { suite: s, ...entry };
    this.#remember(suiteName, generation, governance, result);
    return result;
  }

  /** Keeps the last aeadFor result; not for a governance object, which its caller may change later. */
  #remember(
    suite: SuiteName | number,
    generation: number,
    governance: Governance | string | undefined,
    result: { suite: Suite; key: Uint8Array; aead: KeyedAead },
  ): void {
    this.#last = typeof governance === 'object' ? undefined : { suite, generation, governance, result };
  }

  /**
   * A per-generation key derived from (root, salt) by `derive` (page and manifest keys), cached
   * until close.
   * @throws PqdbError AUTH_FAILED when the generation is locked or unknown.
   */
  generationKey(
    generation: number,
    purpose: string,
    derive: (root: Uint8Array, salt: Uint8Array) => Uint8Array,
  ): Uint8Array {
    this.live();
    const cacheKey = `#${purpose}/${generation}`;
    const hit = this.#derived.get(cacheKey);
    if (hit !== undefined) return hit;
    const r = this.#generations.get(generation);
    const root = this.#roots.get(generation);
    if (r === undefined || root === undefined)
      throw new PqdbError('AUTH_FAILED', `key generation ${generation} is not unlocked`);
    const key = derive(root, r.salt);
    this.#derived.set(cacheKey, key);
    return key;
  }

  /** The newest generation (the one new records are written under). */
  current(): number {
    const g = this.generations();
    if (g.length === 0) throw new PqdbError('INTERNAL', 'the key ring has no generation');
    return g[g.length - 1];
  }

  /** Number of cached data keys (for tests and posture). */
  get cachedKeys(): number {
    return this.#cache.size;
  }

  /** Wipes every root and data key; the ring refuses further use. */
  close(): void {
    this.#last = undefined;
    for (const e of this.#cache.values()) {
      e.aead.destroy();
      e.key.fill(0);
    }
    this.#cache.clear();
    for (const k of this.#derived.values()) k.fill(0);
    this.#derived.clear();
    for (const r of this.#roots.values()) r.fill(0);
    this.#roots.clear();
    this.#closed = true;
  }
}

/**
 * The key ring's persisted form being edited inside a commit: generations to add (with fresh roots,
 * held here until installed), envelopes to add or drop, generations to leave out. Nothing changes in
 * the ring until KeyRing.install(draft); discard() wipes the roots it created.
 */
export class KeyringDraft {
  #records: GenerationRecord[];
  readonly #rootOf: (generation: number) => Uint8Array | undefined;
  readonly #newRoots = new Map<number, Uint8Array>();

  /** @internal Made by KeyRing.draft(). */
  constructor(records: GenerationRecord[], rootOf: (generation: number) => Uint8Array | undefined) {
    this.#records = records;
    this.#rootOf = (g) => this.#newRoots.get(g) ?? rootOf(g);
  }

  /** The generations as the commit will persist them. */
  get records(): readonly GenerationRecord[] {
    return this.#records;
  }

  /**
   * Adds a new generation: a fresh random root and salt, wrapped for every recipient and bound to
   * the store secret (made first, for the same recipients, in a ring that has none yet).
   * @throws PqdbError AUTH_FAILED when the store secret is locked.
   */
  createGeneration(suiteName: SuiteName | number, recipients: readonly Uint8Array[]): number {
    const s = suiteOf(suiteName);
    if (!Array.isArray(recipients) || recipients.length === 0)
      throw new RangeError('"recipients" expected at least one public key');
    const ids = this.#recipientIds();
    recipients.forEach((pk, i) => ids.add(hex(recipientId(bytes(`recipients[${i}]`, pk)))));
    recipients.forEach((pk, i) => refuseSecretKey(`recipients[${i}]`, pk, ids));
    const wrapAll = (root: Uint8Array, generation: number) =>
      recipients.map((pk, i) => wrapRoot(root, bytes(`recipients[${i}]`, pk), s.id, generation));
    if (!this.#records.some((r) => r.generation === STORE_GENERATION)) {
      const secret = randomBytes(32);
      this.#newRoots.set(STORE_GENERATION, secret);
      const envelopes = wrapAll(secret, STORE_GENERATION);
      this.#records = [{ generation: STORE_GENERATION, suite: s.id, salt: new Uint8Array(0), envelopes }];
    }
    const secret = this.#rootOf(STORE_GENERATION);
    if (secret === undefined) throw new PqdbError('AUTH_FAILED', 'the store secret is locked');
    const generation = this.#records.reduce((m, r) => Math.max(m, r.generation), 0) + 1;
    const root = randomBytes(32);
    this.#newRoots.set(generation, root);
    const record: GenerationRecord = {
      generation,
      suite: s.id,
      salt: randomBytes(32),
      envelopes: wrapAll(root, generation),
    };
    record.bind = bindOf(secret, record, root);
    this.#records = [...this.#records, record];
    return generation;
  }

  /**
   * Wraps every root for one more recipient.
   * @throws PqdbError AUTH_FAILED when a generation is locked.
   */
  addRecipient(publicKey: Uint8Array): void {
    const id = hex(recipientId(bytes('publicKey', publicKey)));
    refuseSecretKey('publicKey', publicKey, this.#recipientIds());
    this.#records = this.#records.map((r) => {
      if (r.envelopes.some((e) => hex(readEnvelope(e).recipientId) === id)) return r;
      const root = this.#rootOf(r.generation);
      if (root === undefined)
        throw new PqdbError(
          'AUTH_FAILED',
          `generation ${r.generation} is locked: unlock the store before adding a recipient`,
        );
      return { ...r, envelopes: [...r.envelopes, wrapRoot(root, publicKey, r.suite, r.generation)] };
    });
  }

  /**
   * Drops a recipient's envelopes.
   * @throws RangeError when it would leave a generation without any recipient.
   */
  removeRecipient(publicKey: Uint8Array): void {
    const id = hex(recipientId(bytes('publicKey', publicKey)));
    this.#records = this.#records.map((r) => {
      const keep = r.envelopes.filter((e) => hex(readEnvelope(e).recipientId) !== id);
      if (keep.length === 0)
        throw new RangeError(`removing this recipient would leave generation ${r.generation} unreadable`);
      return { ...r, envelopes: keep };
    });
  }

  /** The recipient ids of the store secret's envelopes (every recipient has one). */
  #recipientIds(): Set<string> {
    const store = this.#records.find((r) => r.generation === STORE_GENERATION);
    return new Set((store?.envelopes ?? []).map((e) => hex(readEnvelope(e).recipientId)));
  }

  /** Leaves generations out (retirement): installing the draft destroys their roots. */
  drop(generations: ReadonlySet<number>): void {
    this.#records = this.#records.filter((r) => r.generation === STORE_GENERATION || !generations.has(r.generation));
  }

  /** @internal The roots this draft created, handed over to the ring. */
  takeRoots(): Map<number, Uint8Array> {
    const roots = new Map(this.#newRoots);
    this.#newRoots.clear();
    return roots;
  }

  /** Wipes the roots this draft created (its commit did not happen). */
  discard(): void {
    for (const r of this.#newRoots.values()) r.fill(0);
    this.#newRoots.clear();
  }
}
