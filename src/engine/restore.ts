// Restore from a managed copy (DESIGN §9, docs/authority.md): a restore brings back data, never
// authority. restoreStore verifies the copy on its own (every page, signature, chain and proof,
// against the trusted signer key), checks that it is a copy of the live store whose checkpoint is
// in the live chain and that it was not retired (when the live store is given), and then makes a
// *new* store of its records:
//
//   - only what the trusted signer signed is taken from the copy (src/engine/signed-cover.ts): a
//     record version whose leaf no checkpoint by the trusted key covers — written after the last
//     one, by a fork or by the store's own writes — comes from the live store when one is given,
//     and is refused (counted, with its reason) when not;
//   - each record is re-sealed under the new store's fresh key generation (new roots, a new store
//     id): no (key, nonce) pair of the copy is used again;
//   - the current policy decides (the live store's, or one given that is at least as new, never
//     the copy's own when a newer one exists): records whose scope may not be `restore`d stay out
//     and are counted as withheld;
//   - what the copy's manifest says and nothing signs is checked against what is known from outside
//     it: the pinned authority keys (the live store's, else the copy's) must be `authorityPublicKey`
//     when given, and the copy's collection schemas must be the live store's;
//   - records deleted from the live store since the copy stay out (counted as deleted);
//   - the new store's recipients are the live store's (a recipient removed since gets nothing),
//     its registry states are the live store's (a suite quarantined since stays quarantined, and no
//     record is sealed with it), and its policy and pinned authority keys are the current ones;
//   - both inventories record the restore: the live store's entry of the copy becomes
//     `restored-from`, the new store's first entry names the copy and the store it came from.

import { PqdbError } from '../errors';
import { suite as suiteOf } from '../crypto/suites';
import { checkpointHash } from '../crypto/proofs';
import { verifyPolicy } from '../crypto/policy';
import { equalBytes } from '../_bytes';
import type { PageStore } from '../storage/page-store';
import { decodeValue, sameSchema, storedSchema } from './codec';
import { type CopyRecord, type Manifest } from './manifest';
import { b64, hex, unb64 } from '../_encoding';
import { authorityKeysOf, checkPinnedKeys, currentPolicy, policyGoverns } from './authority';
import { restoreGate } from './gates';
import { rewrite, type RewriteContext } from './rewrite';
import type { Location } from './directory';
import { destinationOf, heldRecords, randomId, type CopyDestination } from './copies';
import { verifyStore, type VerifyReport } from './verify';
import { SignedCover, type UnsignedReason } from './signed-cover';
import { publicKeysOf } from './keys';

import { Store, engineOf } from './store';
import type { CommitPipeline } from './commit';
import type { RecordIO } from './records';
import { openEngine } from './open-engine';
import type { Engine } from './engine';
import type { Checkpoints } from './checkpoints';
import type { KeyDirectory } from './directory';
import type { Locations, StoreOptions } from './store-options';
import type { Registry, RegistryRecord } from './registry';
import { pauseIfSpent, yieldToEventLoop } from '../_yield';

export type { UnsignedReason } from './signed-cover';

/** What a restore uses of a live store the user names (`options.live`): not its engine. */
export interface LiveSource {
  live(): void;
  readonly readOnly: boolean;
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'run'>;
  readonly checkpoints: Pick<Checkpoints, 'signerPublicKey' | 'list'>;
  readonly directory: Pick<KeyDirectory, 'get'>;
  readonly records: Pick<RecordIO, 'open' | 'gated'>;
}

/**
 * The narrow context a restore takes of a live store the user gives (LiveSource).
 * @throws TypeError for anything that is not an open pqdb store
 */
function liveSourceOf(store: unknown): LiveSource {
  if (!(store instanceof Store)) throw new TypeError('"live" expected a pqdb store (from openStore)');
  const e = engineOf(store);
  const { readOnly, pipeline, checkpoints, directory, records } = e;
  return { live: () => e.live(), readOnly, pipeline, checkpoints, directory, records };
}

export interface RestoreOptions extends Omit<
  StoreOptions,
  'create' | 'readOnly' | 'minCommit' | 'storeId' | 'recipients' | 'authorityPublicKey'
> {
  /**
   * The authority keys the store pins, from outside the copy (its manifest is sealed under the
   * store secret, which a removed recipient still holds, so the keys it names are no evidence):
   * the live store's (with `live`) or the copy's must be exactly these, else AUTH_FAILED.
   */
  authorityPublicKey?: Uint8Array | readonly Uint8Array[];
  /** Where the new store goes: a directory (Node) or IndexedDB database name (browsers). */
  location?: string;
  /** Or the empty PageStore it goes into. */
  storage?: PageStore;
  /**
   * The live store the copy was made of, when there is one: its policy, deletions, recipients and
   * registry states apply, and both inventories record the restore.
   */
  live?: Store;
  /** A signed policy at least as new as the one in force (the current one, when no live store is given). */
  policy?: Uint8Array;
  /** Recipients of the new store (default: the live store's, else the copy's). */
  recipients?: readonly Uint8Array[];
  /**
   * The trusted ML-DSA-87 public key the copy's checkpoints are signed with (default: the live
   * store's signer key, else `signerPublicKey`).
   */
  trustedSigner?: Uint8Array;
  /** Records restored so far, as the work proceeds. */
  onProgress?: (p: {
    restored: number;
    fromLive: number;
    withheld: number;
    deleted: number;
    unsigned: number;
    total: number;
  }) => void;
}

/** What restoreStore did; `store` is the new store, open (close it when done). */
export interface RestoreResult {
  store: Store;
  /** Records re-sealed into the new store from the copy (versions a trusted checkpoint covers). */
  restored: number;
  /**
   * Records whose version in the copy no trusted checkpoint covers, re-sealed from the live store's
   * version instead (with `live` only).
   */
  fromLive: number;
  /** Records whose version in the copy no trusted checkpoint covers and that no live store gave: not restored. */
  unsigned: number;
  /** Those records and why (the first 1000). */
  refused: { collection: string; id: string; reason: UnsignedReason }[];
  /** Records the current policy does not allow restoring. */
  withheld: number;
  /** Records deleted from the live store since the copy was made. */
  deleted: number;
  /** The copy's id (its managed-copy marker), the store it is a copy of, and its commit. */
  copyId?: string;
  sourceStoreId: string;
  copyCommit: number;
  /** The copy's verification. */
  verify: Pick<VerifyReport, 'ok' | 'complete' | 'counts' | 'ms'>;
  tookMs: number;
}

const BATCH = 1000;
/** Refused records listed in the result at most (all are counted). */
const REFUSED_LISTED = 1000;

/**
 * Verifies a managed copy and makes a new store of it under new keys and current authority.
 * Only record versions a checkpoint by the trusted signer covers are taken from the copy; the others
 * come from the live store, or are refused (counted in `unsigned`, listed in `refused`).
 * @throws PqdbError CORRUPTION (the copy does not verify, its checkpoint is not in the live chain,
 * its key directory names a covered leaf that is not the version it points at, or a collection
 * its manifest does not declare or declares with a schema other than the live store's), AUTH_FAILED (a
 * copy of another store, or pinned authority keys other than `authorityPublicKey`),
 * AUTHORITY_DENIED (the copy was retired), CONFLICT
 * (the target holds a store), ROLLBACK (a given policy older than the one in force or the copy's),
 * NOT_FOUND;
 * TypeError for bad options (no trusted signer key, no target).
 */
export async function restoreStoreWith(
  locations: Locations | undefined,
  copy: string | PageStore | Uint8Array,
  options: RestoreOptions,
): Promise<RestoreResult> {
  const started = performance.now();
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const live = options.live !== undefined ? liveSourceOf(options.live) : undefined;
  live?.live();
  const trusted = options.trustedSigner ?? live?.checkpoints.signerPublicKey ?? options.signerPublicKey;
  if (!(trusted instanceof Uint8Array))
    throw new TypeError('restoreStore needs "trustedSigner": the ML-DSA-87 public key the copy is signed with');
  if (options.location === undefined && options.storage === undefined)
    throw new TypeError('restoreStore needs "location" or "storage": where the new store goes');

  const from = await destinationOf(copy, locations, 'read');
  let source: Engine | undefined;
  let target: Engine | undefined;
  try {
    if ((await from.pages.readManifest()) === undefined)
      throw new PqdbError('NOT_FOUND', `no managed copy at ${from.label}`);
    // Every page, signature, chain and proof; record versions are not decrypted here: each record
    // restored is opened (and so authenticated) below, and superseded versions are not restored.
    const report = await verifyStore(from.pages, {
      unlock: options.unlock,
      signerPublicKey: trusted,
      decryptRecords: false,
    });
    if (!report.ok) {
      const p = report.problems[0];
      throw new PqdbError('CORRUPTION', `the copy at ${from.label} does not verify: ${p.where}: ${p.message}`);
    }
    if (report.counts.checkpoints === 0 || report.counts.signaturesVerified === 0)
      throw new PqdbError('CORRUPTION', `the copy at ${from.label} holds no checkpoint signed by the trusted key`);
    source = await openEngine(from.pages, { unlock: options.unlock, readOnly: true });
    const src = source;
    const sm = src.pipeline.manifest;
    const lm = live?.pipeline.manifest;
    const inventoried = lm !== undefined ? checkAgainstLive(sm, lm, src, live!) : undefined;
    // What the trusted signer signed: the one thing of the copy a restore takes as it is.
    const cover = await SignedCover.of(
      { checkpoints: src.checkpoints, logs: src.logs, storeId: src.storeId, keys: src.keys },
      trusted,
    );

    // Current authority: the live store's policy, or a newer one given; never an older one, nor one
    // older than the copy's own. The pinned keys are the live store's, or the copy's when they are
    // the ones given (a fork may have stripped or widened them: nothing signed names them).
    checkPinnedKeys(lm ?? sm, authorityKeysOf(options.authorityPublicKey));
    const authority = currentAuthority(lm ?? sm, options.policy);
    const registry = (lm ?? sm).registry;
    const active = registry.find((r) => r.state === 'active')?.suite ?? sm.defaultSuite;
    // Without the live store nothing signed names the recipients (the copy's manifest is sealed under
    // a secret a removed recipient holds, and may list it): the caller's own key, unless given.
    const recipients =
      options.recipients ?? (lm !== undefined ? (lm.recipients ?? []).map(unb64) : callersKey(sm, options.unlock));

    let pages: PageStore;
    if (options.storage !== undefined) pages = options.storage;
    else pages = (await destinationOf(options.location as string, locations, 'create')).pages;
    if ((await pages.readManifest()) !== undefined) {
      if (options.storage === undefined) await pages.close();
      throw new PqdbError('CONFLICT', 'the restore target already holds a store');
    }
    const {
      live: _l,
      policy: _p,
      trustedSigner: _t,
      onProgress,
      location: _o,
      storage: _s,
      authorityPublicKey: _k,
      ...rest
    } = options;
    try {
      target = await openEngine(pages, {
        ...rest,
        locations,
        create: true,
        recipients,
        suite: suiteOf(active).name,
        autoCheckpoint: false,
        ...(authority !== undefined ? { authorityPublicKey: authority.keys.map(unb64) } : {}),
      });
    } catch (e) {
      if (options.storage === undefined) await pages.close(); // the target is free for another try
      throw e;
    }

    // The records, re-sealed under the new store's keys.
    await src.directory.loadAllInSteps(pauseIfSpent);
    const held = heldRecords({ directory: src.directory });
    const counts = { restored: 0, fromLive: 0, withheld: 0, deleted: 0, unsigned: 0, total: held.records };
    const refused: RestoreResult['refused'] = [];
    const tp = target;
    // Records are opened through the restore gate of the authority taken here (and the scope the
    // live store holds them under now), not the copy's own, and re-sealed into the new store.
    const gates = { restore: restoreGate(authority, live && ((c, id) => live.directory.get(c, id)?.governance)) };
    const generation = () => tp.keys.current();
    const fromCopy: RewriteContext = { from: src.records.gated(gates), to: tp.records, generation };
    const fromLive: RewriteContext | undefined = live && {
      from: live.records.gated(gates),
      to: tp.records,
      generation,
    };
    for (const [name, entries] of [...src.directory.collections()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const meta = collectionOf(sm, lm, name);
      const schema = storedSchema(meta);
      const preferred = lm?.collections[name]?.suite ?? meta.suite;
      const state = registry.find((r) => r.suite === preferred)?.state;
      const suite = state === 'active' ? preferred : active;
      // A collection the live store never had holds nothing of it (each record counts as deleted).
      if (lm === undefined || lm.collections[name] !== undefined)
        tp.declare({ name, schema, indexed: [], suite: suiteOf(suite).id });
      // Each record's plaintext is re-sealed as it is (checked against the schema, not re-encoded),
      // a batch to a commit of the new store's pipeline, under its current generation.
      const check = (plaintext: Uint8Array) => void decodeValue(schema, plaintext); // it must decode as its schema says
      let batch: { id: string; loc: Location; page?: Uint8Array }[] = [];
      const flush = async () => {
        const b = batch;
        batch = [];
        if (b.length > 0)
          await tp.pipeline.run(async (draft) => {
            for (const { id, loc, page } of b) {
              const ctx = page !== undefined ? fromCopy : fromLive!;
              const spec = { purpose: 'restore' as const, collection: name, id, loc, suite, copy: false, check };
              const r = await rewrite(ctx, draft, page !== undefined ? { ...spec, page } : spec);
              if (r.kind === 'failed') throw r.error;
              if (r.kind === 'withheld') counts.withheld++;
              else if (page !== undefined) counts.restored++;
              else counts.fromLive++;
            }
          });
        onProgress?.({ ...counts });
      };
      for (const [id, loc] of entries) {
        const now = live?.directory.get(name, id);
        if (live !== undefined && now === undefined) {
          counts.deleted++;
          continue;
        }
        // The copy's version when a trusted checkpoint covers it, else the live store's (whose
        // governance then decides), else none.
        const page = await src.cache.get(loc.pageId);
        const reason = cover.check(name, id, loc, page);
        // A checkpoint signs the log, not which version is current: a holder of the store secret
        // can point the copy's directory at an earlier signed version. The live store's current
        // version, when the copy's checkpoint covers it, was current when the copy was made: a copy
        // naming another version yields to it.
        const stale =
          reason === undefined &&
          now !== undefined &&
          cover.covers(now.generation, now.leafIndex) &&
          (now.generation !== loc.generation || now.leafIndex !== loc.leafIndex);
        const copied = reason === undefined && !stale;
        if (!copied && now === undefined) {
          counts.unsigned++;
          if (refused.length < REFUSED_LISTED) refused.push({ collection: name, id, reason: reason! });
          continue;
        }
        batch.push(copied ? { id, loc, page } : { id, loc: now! });
        if (batch.length >= BATCH) {
          await flush();
          await yieldToEventLoop();
        }
      }
      await flush();
    }

    // Current authority, registry states and the inventory entry, in one commit.
    const time = new Date().toISOString();
    const newStoreId = tp.pipeline.manifest.storeId;
    const entry: CopyRecord = {
      id: sm.copy?.id ?? randomId(),
      kind: 'restore',
      time,
      destination: from.label,
      generations: src.keys.generations().filter((g) => !(sm.retired ?? []).includes(g)),
      suites: held.suites,
      records: held.records,
      commit: sm.commit,
      ...(src.checkpoints.list.length > 0
        ? { checkpoint: hex(checkpointHash(src.checkpoints.list.at(-1)!.signed)) }
        : {}),
      state: 'restored-from',
      sourceStoreId: sm.storeId,
    };
    await tp.pipeline.run((draft) => {
      const m = draft.manifest;
      if (authority !== undefined) m.authority = { ...authority }; // keys, policy, pinned threshold and domain alike
      m.copies = [...(m.copies ?? []), entry];
      applyRegistry(draft.registry, registry, tp, m);
    });
    if (tp.checkpoints.canSign) await tp.checkpoints.checkpoint();
    if (live !== undefined) await recordRestore(live, inventoried, entry, from, newStoreId, time);

    const { total: _total, ...restoredCounts } = counts;
    const result: RestoreResult = {
      store: Store.over(target, locations),
      ...restoredCounts,
      refused,
      ...(sm.copy !== undefined ? { copyId: sm.copy.id } : {}),
      sourceStoreId: sm.storeId,
      copyCommit: sm.commit,
      verify: { ok: report.ok, complete: report.complete, counts: report.counts, ms: report.ms },
      tookMs: 0,
    };
    result.tookMs = performance.now() - started;
    target = undefined; // the caller's now
    return result;
  } finally {
    if (target !== undefined) {
      // A restore that failed part-way leaves no half-restored store behind at a named location.
      await target.close().catch(() => undefined);
      if (options.storage === undefined && locations !== undefined)
        await locations.remove(options.location as string).catch(() => undefined);
    }
    if (source !== undefined) await source.close();
    else if (from.close) await from.pages.close();
  }
}

/**
 * The copy is of the live store, not retired, and its newest checkpoint is one the live store
 * signed (so the copy is a prefix of the live chain, not a fork). Returns its inventory entry.
 */
function checkAgainstLive(
  sm: Manifest,
  lm: Manifest,
  src: { readonly checkpoints: Pick<Checkpoints, 'list'> },
  live: LiveSource,
): CopyRecord | undefined {
  if (sm.storeId !== lm.storeId)
    throw new PqdbError('AUTH_FAILED', `the copy is of store ${sm.storeId}, not of the live store ${lm.storeId}`);
  const entry = sm.copy !== undefined ? (lm.copies ?? []).find((c) => c.id === sm.copy!.id) : undefined;
  if (entry?.state === 'retired')
    throw new PqdbError(
      'AUTHORITY_DENIED',
      `managed copy ${entry.id} was retired at ${entry.retiredAt}: it is not restored`,
    );
  const last = src.checkpoints.list.at(-1)!;
  const hash = checkpointHash(last.signed);
  if (!live.checkpoints.list.some((c) => equalBytes(checkpointHash(c.signed), hash)))
    throw new PqdbError(
      'CORRUPTION',
      `the copy's newest checkpoint (generation ${last.generation}, size ${last.size}) is not in the live store's chain: not a copy of this store's history`,
    );
  if (sm.commit > lm.commit)
    throw new PqdbError('CORRUPTION', `the copy is at commit ${sm.commit}, past the live store's ${lm.commit}`);
  return entry;
}

/**
 * The copy's entry of collection `name`, or the live store's when there is one. A collection's
 * schema only gains versions (codec.ts evolutionProblem), and nothing signed names it: a copy whose
 * schema versions are not the first of the live store's is not of its history. The live store's
 * history reads every version the copy's records were written under.
 * @throws PqdbError CORRUPTION
 */
function collectionOf(sm: Manifest, lm: Manifest | undefined, name: string): Manifest['collections'][string] {
  const meta = sm.collections[name];
  if (meta === undefined)
    throw new PqdbError(
      'CORRUPTION',
      `the copy's key directory holds collection ${name}, which its manifest does not declare`,
    );
  const now = lm?.collections[name];
  if (now === undefined) return meta;
  const chain = (m: typeof meta) => [...(m.versions ?? []), m.schema];
  const copy = chain(meta);
  const live = chain(now);
  if (copy.length > live.length || copy.some((s, i) => !sameSchema(s, live[i])))
    throw new PqdbError(
      'CORRUPTION',
      `the copy's schema of collection ${name} is not the live store's: not a copy of its history`,
    );
  return now;
}

/**
 * The pinned keys and the signed policy that decide: the newest of the one in force (`m`: the live
 * store's, else the copy's) and the one given, which may not be older than the copy's own either.
 */
function currentAuthority(m: Manifest, given: Uint8Array | undefined): Manifest['authority'] {
  const a = m.authority;
  if (given === undefined) {
    // Without the live store `m` is the copy's manifest: a holder of the store secret may have
    // dropped its policy to let every scope through. A store that pins authority keys and holds no
    // policy is restored only under one given.
    if (a !== undefined && a.keys.length > 0 && a.policy === undefined)
      throw new PqdbError(
        'AUTHORITY_DENIED',
        'the store pins authority keys but holds no policy: give the current signed policy (policy)',
      );
    return a;
  }
  if (!(given instanceof Uint8Array)) throw new TypeError('"policy" expected the signed policy bytes');
  if (a === undefined)
    throw new PqdbError('AUTHORITY_DENIED', 'the store pins no authority key: a policy cannot be given');
  const next = verifyPolicy(given, a.keys.map(unb64));
  // A policy signed for other stores never governs this one's restore (DESIGN §11).
  if (!policyGoverns(next, m))
    throw new PqdbError(
      'AUTHORITY_DENIED',
      `policy version ${next.version} does not govern store ${m.storeId}: it names no store or domain of it`,
    );
  // The floor is the policy in force where the restore takes it: the live store's, else the copy's
  // (a copy's own policy, checked under keys nothing outside it names, never binds a live restore).
  const now = currentPolicy(m)?.policy;
  if (now !== undefined && next.version < now.version)
    throw new PqdbError('ROLLBACK', `policy version ${next.version} is older than the version ${now.version} in force`);
  return { ...a, policy: b64(given) };
}

/**
 * The caller's own recipient public key as the copy lists it: the recipients a restore without the
 * live store makes the new store for when none are given.
 * @throws TypeError when the copy does not list it (give `recipients`)
 */
function callersKey(copy: Manifest, unlock: Uint8Array): Uint8Array[] {
  const mine = publicKeysOf(unlock);
  const listed = (copy.recipients ?? []).map(unb64).filter((pk) => mine.some((m) => equalBytes(m, pk)));
  if (listed.length === 0)
    throw new TypeError(
      '"recipients" expected the new store\'s recipient public keys: the copy does not list the caller\'s',
    );
  return listed.slice(0, 1);
}

/** The live registry's states on the new store: a suite quarantined or retired there is here too. */
function applyRegistry(
  draft: Registry,
  states: readonly RegistryRecord[],
  tp: { readonly directory: Pick<KeyDirectory, 'usesSuite'> },
  m: Manifest,
): void {
  for (const r of states) {
    if (r.state === 'active' || draft.state(r.suite) === r.state) continue;
    const inUse = tp.directory.usesSuite(r.suite) || Object.values(m.collections).some((c) => c.suite === r.suite);
    if (r.state === 'retired' && inUse) continue;
    if ((r.state === 'quarantined' || r.state === 'decrypt-only') && draft.state(r.suite) === 'active') continue;
    draft.setState(r.suite, r.state, { inUse });
  }
}

/** The live store's inventory: its entry of the copy becomes `restored-from`, naming the new store. */
async function recordRestore(
  live: LiveSource,
  inventoried: CopyRecord | undefined,
  entry: CopyRecord,
  from: CopyDestination,
  storeId: string,
  time: string,
): Promise<void> {
  if (live.readOnly) return; // opened read-only: its inventory cannot change
  await live.pipeline.run((draft) => {
    const copies = (draft.manifest.copies ??= []);
    let c = inventoried !== undefined ? copies.find((x) => x.id === inventoried.id) : undefined;
    if (c === undefined) {
      c = {
        ...entry,
        kind: 'backup',
        destination: from.label,
        ...(from.location !== undefined ? { location: from.location } : {}),
        restores: [],
      };
      delete c.sourceStoreId;
      copies.push(c);
    }
    c.state = 'restored-from';
    c.restores = [...(c.restores ?? []), { time, storeId }];
  });
}
