// Browser consumer (moduleResolution bundler with customConditions ["browser"]): the IndexedDB store.
import { openStore, openIndexedDbPageStore, generateRecipient, type PageStore } from 'pqdb';

export async function browserApi(): Promise<void> {
  const r = generateRecipient();
  const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey });
  const pages: PageStore = await openIndexedDbPageStore('app');
  // @ts-expect-error the database name is a string
  await openIndexedDbPageStore(7);
  await openStore({ storage: pages, unlock: r.secretKey });
  await store.close();
}
