// Node consumer (moduleResolution node16, the "node" export condition): the file store, and the
// PostgreSQL page store of pqdb/postgres (its types need no `pg` typings).
import { openStore, openNodeFsPageStore, generateRecipient, type PageStore } from 'pqdb';
import { openPostgresPageStore, type ManifestChange, type PostgresPageStore } from 'pqdb/postgres';

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

export async function postgresApi(): Promise<void> {
  const r = generateRecipient();
  const storage: PostgresPageStore = await openPostgresPageStore({
    connectionString: 'postgresql:///app',
    name: 'orders',
  });
  const store = await openStore({ storage, create: true, recipients: [r.publicKey], unlock: r.secretKey });
  const reader = await openPostgresPageStore({ name: 'orders', schema: 'pqdb', readOnly: true, maxConnections: 2 });
  const stop: () => void = reader.watch((change: ManifestChange) => void (change.version satisfies number));
  const changed: boolean = await reader.refresh();
  const kind: 'postgres' = reader.kind;
  // @ts-expect-error the store name is required
  await openPostgresPageStore({ connectionString: 'postgresql:///app' });
  // @ts-expect-error a misspelled option
  await openPostgresPageStore({ name: 'orders', readonly: true });
  stop();
  void changed;
  void kind;
  await store.close();
}
