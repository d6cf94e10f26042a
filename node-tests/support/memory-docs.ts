// A store on a memory medium with one collection `docs` (text-indexed on its `text` field), opened
// again and again on the same medium: what the replay, directory and compaction tests reopen.
import { openStore, openMemoryPageStore } from '../../src/index';
import { MemoryMedium } from '../../src/storage/memory';
import type { Store } from '../../src/engine/store';
import type { PageStore } from '../../src/storage/page-store';
import type { StoreOptions } from '../../src/engine/store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

/** `open(create)` of the store on `medium`: signed (with `signer`), no automatic checkpoint. */
export function docsOpener<S extends { text: 'string' } & Record<string, 'string' | 'integer'>>(
  medium: MemoryMedium,
  keys: { recipient: KeyPair; signer?: KeyPair },
  schema: S,
  options: { wrap?: (pages: PageStore) => PageStore } & Partial<StoreOptions> = {},
) {
  const { wrap, ...extra } = options;
  return async (create = false) => {
    const pages = await openMemoryPageStore({ medium });
    const store = await openStore({
      storage: wrap !== undefined ? wrap(pages) : pages,
      create,
      recipients: [keys.recipient.publicKey],
      unlock: keys.recipient.secretKey,
      ...(keys.signer !== undefined ? { signer: keys.signer.secretKey, signerPublicKey: keys.signer.publicKey } : {}),
      autoCheckpoint: false,
      ...extra,
    });
    return { store, docs: store.collection('docs', { schema, index: { text: ['text'] } }) };
  };
}

/**
 * `open()` of a store on `medium` (a fresh one by default) under `recipient`, no automatic
 * checkpoint (and `extra`: signer keys, say): the first call creates it, the later ones open it again.
 */
export function storeOpener(
  recipient: KeyPair,
  medium = new MemoryMedium(),
  extra: Partial<StoreOptions> = {},
): () => Promise<Store> {
  let first = true;
  return async () => {
    const pages = await openMemoryPageStore({ medium });
    const store = await openStore({
      storage: pages,
      create: first,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      autoCheckpoint: false,
      ...extra,
    });
    first = false;
    return store;
  };
}
