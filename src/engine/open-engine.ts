// Opening an engine on a PageStore (DESIGN §6): creating a store (its first generation, registry,
// store id, pinned authority and first manifest) or unlocking one (the manifest opened under the
// secret key, rollback and pinned-key checks, the policy's signatures) and replaying its pages into
// a new Engine (engine.ts). Store.open, restoreStore and the replica open engines here; a failed open
// wipes the keys it unlocked. The page store stays with the caller.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { suite as suiteOf, DEFAULT_SUITE } from '../crypto/suites';
import { KeyRing } from './keys';
import { Registry } from './registry';
import { newManifest, unlockManifest, STORE_ID_LABEL } from './manifest';
import { hex } from '../_encoding';
import { replay } from './replay';
import { authorityKeysOf, checkPinnedKeys, openedPolicy, pinnedAuthority, pinnedOptions } from './authority';
import { Engine } from './engine';
import type { StoreOptions } from './store-options';

/**
 * Opens (or with `create`, creates) the engine of the store in `pages`; `options.follow` is the
 * caller's (Store.open follows with engines opened here).
 * @throws PqdbError AUTH_FAILED (wrong secret key or altered manifest), NOT_FOUND (no store and no
 * `create`), ROLLBACK (older than `minCommit`), READ_ONLY (a managed copy opened writable),
 * CORRUPTION, FORMAT_VERSION; RangeError for missing recipients on create.
 */
export async function openEngine(pages: PageStore, options: StoreOptions): Promise<Engine> {
  const raw = await pages.readManifest();
  if (raw === undefined) {
    if (!options.create || options.readOnly)
      throw new PqdbError('NOT_FOUND', `no pqdb store in this ${pages.kind} page store (create: true makes one)`);
    const recipients = options.recipients ?? [];
    if (!Array.isArray(recipients) || recipients.length === 0)
      throw new RangeError('"recipients" expected at least one public key to create a store');
    const suite = suiteOf(options.suite ?? DEFAULT_SUITE);
    const keys = new KeyRing([], options.keyCacheSize);
    return wipingOnFailure(keys, async (made) => {
      keys.createGeneration(suite.id, recipients);
      keys.unlock(options.unlock); // the creator must be able to open what it creates
      const registry = new Registry({ active: suite.id });
      const storeId = hex(keys.storeKey(STORE_ID_LABEL, 16));
      const manifest = newManifest(storeId, keys.records(), registry.records(), suite.id, recipients);
      const pinned = authorityKeysOf(options.authorityPublicKey);
      const { authorityThreshold: threshold, authorityDomain: domain } = options;
      manifest.authority = pinnedAuthority(pinned, pinnedOptions(pinned, threshold, domain));
      const engine = made(new Engine({ pages, keys, manifest, registry }, options));
      await engine.pipeline.run(() => undefined); // the first manifest
      return engine;
    });
  }
  if (options.storeId !== undefined && typeof options.storeId !== 'string')
    throw new TypeError('"storeId" expected a string of 32 hex digits');
  const { manifest, keys } = unlockManifest(raw, options.unlock, options);
  if (options.minCommit !== undefined && manifest.commit < options.minCommit) {
    keys.close();
    throw new PqdbError(
      'ROLLBACK',
      `the store is at commit ${manifest.commit}, older than the ${options.minCommit} it was known to reach: an older copy of it`,
    );
  }
  return wipingOnFailure(keys, async (made) => {
    if (manifest.copy !== undefined && options.readOnly !== true)
      throw new PqdbError(
        'READ_ONLY',
        `this is managed copy ${manifest.copy.id} of store ${manifest.storeId}: open it with readOnly, or make a live store of it with restoreStore`,
      );
    checkPinnedKeys(manifest, authorityKeysOf(options.authorityPublicKey));
    openedPolicy(manifest); // its signatures, once, and that it governs this store
    const registry = new Registry({ records: manifest.registry });
    const engine = made(new Engine({ pages, keys, manifest, registry, sealed: raw }, options));
    const found = await replay(pages, manifest, keys, engine.target, engine.readOnly);
    engine.checkpointList.push(...found.checkpoints);
    engine.recovered = found.recovered;
    if (found.pending !== undefined) engine.lexical.restorePending(found.pending);
    if (found.persistedLogs !== undefined) engine.checkpoints.notePersisted(found.persistedLogs);
    // An unfinished migration resumes where its durable cursor stands.
    if (manifest.migration !== undefined && !engine.readOnly) engine.migration.resume();
    return engine;
  });
}

/**
 * Runs an open that has unlocked `keys`; when it fails, wipes them (and the signer key of the
 * engine `made`, if one was made) before rethrowing.
 */
async function wipingOnFailure(keys: KeyRing, open: (made: (e: Engine) => Engine) => Promise<Engine>): Promise<Engine> {
  let engine: Engine | undefined;
  try {
    return await open((e) => (engine = e));
  } catch (e) {
    keys.close();
    engine?.checkpoints.close();
    throw e;
  }
}
