// Node consumer (moduleResolution node16, the "node" export condition): the file store.
import { openStore, openNodeFsPageStore, generateRecipient, type PageStore } from 'pqdb';

export async function nodeApi(): Promise<void> {
  const r = generateRecipient();
  const store = await openStore({
    location: './data/app',
    create: true,
    recipients: [r.publicKey],
    unlock: r.secretKey,
  });
  const pages: PageStore = await openNodeFsPageStore('./data/app', { readOnly: true, segmentBytes: 1 << 20 });
  // @ts-expect-error a misspelled option of the file store
  await openNodeFsPageStore('./data/app', { readonly: true });
  // @ts-expect-error the directory is a string
  await openNodeFsPageStore(42);
  await openStore({ storage: pages, unlock: r.secretKey, readOnly: true });
  await store.close();
}
