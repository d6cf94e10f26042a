// The keys and stores the replication tests share: one recipient and one checkpoint signer, the
// options a primary is created with, and a store whose persisted key directory covers four commit
// pages with one commit past it (what a catch-up ships in both of its forms).
import { generateRecipient, generateSigner, openStore } from '../../src/index';
import type { Store } from '../../src/engine/store';
import type { PageStore } from '../../src/storage/page-store';

export const recipient = generateRecipient();
export const signer = generateSigner();
export const schema = { lemma: 'string', n: 'integer' } as const;

/** Creates a store readable with `recipient` and signed by `signer`. */
export const options = {
  create: true,
  recipients: [recipient.publicKey],
  unlock: recipient.secretKey,
  signer: signer.secretKey,
  signerPublicKey: signer.publicKey,
};

/** A store of 4 × 20 records, a checkpoint (its key directory covers their commit pages), one more. */
export async function coveredStore(storage: PageStore | 'memory' = 'memory'): Promise<Store> {
  const store = await openStore({ ...options, storage });
  const words = store.collection('w', { schema });
  for (let b = 0; b < 4; b++)
    await store.batch((tx) => {
      for (let i = 0; i < 20; i++) tx.put(words, `k${b}-${i}`, { lemma: `word ${b} ${i}`, n: i });
    });
  await store.checkpoint();
  await words.put('after', { lemma: 'after', n: 0 });
  return store;
}
