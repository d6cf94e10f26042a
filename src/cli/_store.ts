// Opening a file store for the record verbs and finding a collection's schema in it. A store keeps
// each collection's schema in its sealed manifest, so a verb names only the collection; `--schema`
// is needed the first time a collection is written (put, import) and must agree with the stored one
// after. The text fields a search indexes are, in order: `--fields`, the fields of the collection's
// persisted index (written at a checkpoint), every string field of the schema. A store is opened
// through the Node entry, so it reaches other stores by directory (backups, the copies it retires),
// and pinned to what the verb's --store-id, --min-commit and --pin-file give (_pin.ts). Node only.

/// <reference types="node" />
import { openNodeFsPageStore } from '../storage/node-fs';
import { openStore } from '../node';
import type { Collection, CollectionOptions, Store } from '../engine/store';
import { unlockManifest, type Manifest } from '../engine/manifest';
import type { Schema } from '../engine/codec';
import type { PageStore } from '../storage/page-store';
import { PqdbError } from '../errors';
import type { Keys } from './_keys';
import { recordPin } from './_pin';
import { UsageError } from './_report';
import { parseSchema } from './_values';

/** An open store, the manifest it was opened at (for the schemas) and its page store (the store owns it). */
export interface OpenedStore {
  store: Store;
  manifest: Manifest;
  pages: PageStore;
  /** Records the commit reached in the pin file (if the verb has one) and closes the store. */
  close(): Promise<void>;
}

/**
 * The open options the verb's pin gives: the store id it must have, the commit it must have reached.
 * @example
 * await openStore({ storage, unlock, ...pinned(keys) });
 */
export function pinned(keys: Keys): { storeId?: string; minCommit?: number } {
  const { storeId, minCommit } = keys.pin ?? {};
  return { ...(storeId !== undefined && { storeId }), ...(minCommit !== undefined && { minCommit }) };
}

/**
 * Checks the manifest `raw` against the verb's pin without opening the store (verify): it must
 * authenticate under the recipient secret key, be the pinned store and have reached the pinned
 * commit. Returns its id and commit.
 * @throws UsageError without the recipient secret key; PqdbError NOT_FOUND, AUTH_FAILED (another
 * store), ROLLBACK (an older copy), as unlockManifest.
 */
export function checkPin(raw: Uint8Array | undefined, keys: Keys): { storeId: string; commit: number } {
  const unlock = requireUnlock(keys);
  if (raw === undefined) throw new PqdbError('NOT_FOUND', 'no store here');
  const { manifest, keys: ring } = unlockManifest(raw, unlock, pinned(keys));
  ring.close();
  const min = keys.pin?.minCommit;
  if (min !== undefined && manifest.commit < min)
    throw new PqdbError(
      'ROLLBACK',
      `the store is at commit ${manifest.commit}, older than the ${min} it was known to reach: an older copy of it`,
    );
  return { storeId: manifest.storeId, commit: manifest.commit };
}

/**
 * Records the store's id and commit in the verb's pin file, if it has one.
 * @throws as recordPin (_pin.ts).
 */
export function notePin(keys: Keys, store: Store): void {
  const { storeId, commit } = store.info();
  recordPin(keys.pin, { storeId, commit });
}

/**
 * Opens the store at `location`: read-only (no lock, runs beside a writer) unless `write`; with the
 * signer public key when it was given, and the signer secret key too when writing; with
 * `authority`, the authority public keys the store must pin. The caller closes it.
 * @throws UsageError without the recipient secret key; PqdbError from the page store and the open
 * (NOT_FOUND for a directory without a store, AUTH_FAILED for a key that does not open it, another
 * store than the pinned one or authority keys it does not pin, ROLLBACK for a store older than the
 * pinned commit, LOCKED).
 * @example
 * const { store } = await openCliStore('./data/app', keys, { write: true });
 */
export async function openCliStore(
  location: string,
  keys: Keys,
  options: { write: boolean; authority?: Uint8Array[] },
): Promise<OpenedStore> {
  const unlock = requireUnlock(keys);
  const pages = await openNodeFsPageStore(location, { create: false, readOnly: !options.write });
  let store: Store | undefined;
  try {
    const raw = await pages.readManifest();
    if (raw === undefined) throw new PqdbError('NOT_FOUND', `no store at ${location} (pqdb init makes one)`);
    const pin = pinned(keys);
    const opened = unlockManifest(raw, unlock, pin);
    opened.keys.close();
    store = await openStore({
      storage: pages,
      unlock,
      readOnly: !options.write,
      storeId: opened.manifest.storeId,
      ...pin,
      ...(options.write && keys.signer !== undefined ? { signer: keys.signer } : {}),
      ...(keys.signerPublicKey !== undefined ? { signerPublicKey: keys.signerPublicKey } : {}),
      ...(options.authority !== undefined ? { authorityPublicKey: options.authority } : {}),
      autoCheckpoint: false,
    });
    notePin(keys, store);
    const s = store;
    const close = async () => {
      try {
        notePin(keys, s);
      } finally {
        await s.close();
      }
    };
    return { store, manifest: opened.manifest, pages, close };
  } catch (e) {
    await (store ?? pages).close();
    throw e;
  }
}

/**
 * The recipient secret key.
 * @throws UsageError when it was not given.
 */
export function requireUnlock(keys: Keys): Uint8Array {
  if (keys.unlock === undefined)
    throw new UsageError('the recipient secret key is required (--unlock FILE or PQDB_UNLOCK)');
  return keys.unlock;
}

/**
 * The signer keys, both halves.
 * @throws UsageError when either is missing.
 */
export function requireSigner(keys: Keys): void {
  if (keys.signer === undefined)
    throw new UsageError('the signer secret key is required (--signer FILE or PQDB_SIGNER)');
  if (keys.signerPublicKey === undefined)
    throw new UsageError('the signer public key is required (FILE.pub beside --signer FILE, or --signer-public FILE)');
}

/**
 * Collection `name` of the opened store. Its schema is the stored one; `schemaText` (the --schema
 * option) is needed when the store has no such collection, and otherwise is the stored one or its
 * next version (optional fields added, types widened: the write records it). `index` declares the
 * text fields kept in the lexical index while the store is open.
 * @throws UsageError for an unknown collection without --schema, a --schema that cannot follow the
 * stored one, or index fields that are not string fields of the schema; PqdbError FORMAT_VERSION
 * for a --schema that is an older version of the stored one.
 * @example
 * const words = collectionOf(opened, 'words', undefined);
 */
export function collectionOf(
  opened: OpenedStore,
  name: string,
  schemaText: string | undefined,
  index?: readonly string[],
): Collection {
  const stored = opened.manifest.collections[name]?.schema;
  const given = schemaText !== undefined ? parseSchema(schemaText) : undefined;
  if (stored === undefined && given === undefined)
    throw new UsageError(`no collection "${name}" in the store (its first put or import gives --schema)`);
  const schema = given ?? stored!;
  if (index !== undefined) {
    const bad = index.find((f) => schema[f]?.replace(/\?$/, '') !== 'string');
    if (bad !== undefined) throw new UsageError(`"${bad}" is not a string field of collection "${name}"`);
  }
  // The schema is known only at run time here, so the field names cannot be checked by type.
  const options = { schema, ...(index !== undefined ? { index: { text: index } } : {}) } as CollectionOptions<Schema>;
  try {
    return opened.store.collection(name, options);
  } catch (e) {
    // Another schema than the stored one that cannot be its next version: the reason, as a usage error.
    if (e instanceof RangeError) throw new UsageError(`${e.message} (stored: ${JSON.stringify(stored)})`);
    throw e;
  }
}

/**
 * The text fields a search of `name` indexes: `fields` (the --fields option), else the fields of
 * its persisted index, else every string field of its schema.
 * @example
 * searchFields(opened, 'words', undefined); // ['gloss', 'lemma', 'pos']
 */
export function searchFields(opened: OpenedStore, name: string, fields: string | undefined): string[] {
  if (fields !== undefined) return splitList(fields);
  const persisted = opened.manifest.indexes?.[name]?.fields;
  if (persisted !== undefined && persisted.length > 0) return persisted;
  const schema = opened.manifest.collections[name]?.schema ?? {};
  return Object.keys(schema)
    .filter((f) => schema[f].replace(/\?$/, '') === 'string')
    .sort();
}

/** `a,b , c` as ['a', 'b', 'c']. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
